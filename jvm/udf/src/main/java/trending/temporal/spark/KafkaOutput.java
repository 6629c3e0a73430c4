package trending.temporal.spark;

import java.util.List;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.types.StructType;

/**
 * The job's rows ({@code temporal_steps.OUTPUT_SCHEMA}): RESULT, LATE and DEAD with the
 * record's origin (topic, partition, offset, key and bytes, timestamp, headers), and a PROGRESS
 * row per key and batch: the newest watermark mark of its input rows and their count.
 */
final class KafkaOutput extends ResultColumns {
  private static final long serialVersionUID = 1L;
  private static final String[] ORIGIN = {"topic", "partition", "offset", "record_key", "raw",
      "record_ts", "headers"};

  private final int kind;
  private final int sync;
  private final int reason;
  private final int events;
  private final int[] originOut;
  private final int[] originIn;
  private final int keyIn;
  private final int syncIn;
  private final int markIn;

  KafkaOutput(StructType output, EventColumns input) {
    super(output, new int[] {input.position("partition"), input.position("offset")});
    kind = output.fieldIndex("kind");
    sync = output.fieldIndex("sync_ms");
    reason = output.fieldIndex("reason");
    events = output.fieldIndex("events");
    originOut = new int[ORIGIN.length];
    originIn = new int[ORIGIN.length];
    for (int i = 0; i < ORIGIN.length; i++) {
      originOut[i] = output.fieldIndex(ORIGIN[i]);
      originIn[i] = input.position(ORIGIN[i]);
    }
    keyIn = input.key;
    syncIn = input.sync;
    markIn = input.mark;
  }

  @Override
  public Row result(Object keyValue, trending.temporal.Row row) {
    Object[] out = resultColumns(keyValue, row);
    out[kind] = RESULT;
    return RowFactory.create(out);
  }

  @Override
  public void rejected(int rejectedKind, Row record, String why, List<Row> out) {
    Object[] row = new Object[width];
    row[kind] = rejectedKind;
    row[key] = record.get(keyIn);
    row[sync] = EventColumns.time(record, syncIn);
    row[reason] = why;
    for (int i = 0; i < originIn.length; i++) {
      row[originOut[i]] = record.get(originIn[i]);
    }
    out.add(RowFactory.create(row));
  }

  @Override
  public void progress(List<Row> records, List<Row> out) {
    Long newest = null;
    for (Row record : records) {
      Long mark = EventColumns.time(record, markIn);
      if (mark != null && (newest == null || mark > newest)) {
        newest = mark;
      }
    }
    Object[] row = new Object[width];
    row[kind] = PROGRESS;
    row[sync] = newest;
    row[events] = (long) records.size();
    out.add(RowFactory.create(row));
  }
}
