package trending.temporal.spark;

import java.io.Serializable;
import java.util.Comparator;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.types.StructType;

/**
 * Where a decoded event's fields are in an input row, and how they read: a missing time as
 * null, a NaN value as null (as pandas holds both in the Python step).
 */
final class EventColumns implements Serializable {
  private static final long serialVersionUID = 1L;
  static final int INTERVAL = 0;
  static final int START_EDGE = 1;
  static final int END_EDGE = 2;
  static final int CTI = 3;
  static final int DEAD = 4;
  static final String[] KIND_NAMES = {"INTERVAL", "START_EDGE", "END_EDGE", "CTI"};

  private final StructType schema;
  final int kind;
  final int key;
  final int id;
  final int start;
  final int end;
  final int value;
  final int sync;
  final int mark;
  final int reason;

  EventColumns(StructType schema) {
    this.schema = schema;
    kind = schema.fieldIndex("kind");
    key = schema.fieldIndex("key");
    id = schema.fieldIndex("id");
    start = schema.fieldIndex("start_ms");
    end = schema.fieldIndex("end_ms");
    value = schema.fieldIndex("value");
    sync = schema.fieldIndex("sync_ms");
    mark = schema.fieldIndex("mark_ms");
    reason = schema.fieldIndex("reason");
  }

  /** The position of column {@code name}. */
  int position(String name) {
    return schema.fieldIndex(name);
  }

  int kind(Row row) {
    return ((Number) row.get(kind)).intValue();
  }

  static Long time(Row row, int position) {
    return row.isNullAt(position) ? null : ((Number) row.get(position)).longValue();
  }

  /** The event's value: null when missing or NaN. */
  Double value(Row row) {
    if (row.isNullAt(value)) {
      return null;
    }
    double v = ((Number) row.get(value)).doubleValue();
    return Double.isNaN(v) ? null : v;
  }

  String id(Row row) {
    return row.isNullAt(id) ? null : row.get(id).toString();
  }

  /**
   * A key's input rows in the order the step takes them: by sync time, then by {@code
   * columns}; a null (or NaN) first, strings by code point, the input order among equals.
   */
  Comparator<Row> order(int[] columns) {
    Comparator<Row> by = (a, b) -> compare(a.get(sync), b.get(sync));
    for (int column : columns) {
      by = by.thenComparing((a, b) -> compare(a.get(column), b.get(column)));
    }
    return by;
  }

  static int compare(Object a, Object b) {
    boolean aMissing = missing(a);
    boolean bMissing = missing(b);
    if (aMissing || bMissing) {
      return aMissing == bMissing ? 0 : aMissing ? -1 : 1;
    }
    if (a instanceof String x && b instanceof String y) {
      return codePoints(x, y);
    }
    if ((a instanceof Double || a instanceof Float) || (b instanceof Double || b instanceof Float)) {
      double x = ((Number) a).doubleValue();
      double y = ((Number) b).doubleValue();
      return x < y ? -1 : x > y ? 1 : 0;
    }
    return Long.compare(((Number) a).longValue(), ((Number) b).longValue());
  }

  private static boolean missing(Object value) {
    return value == null
        || value instanceof Double d && d.isNaN()
        || value instanceof Float f && f.isNaN();
  }

  private static int codePoints(String a, String b) {
    int i = 0;
    int j = 0;
    while (i < a.length() && j < b.length()) {
      int x = a.codePointAt(i);
      int y = b.codePointAt(j);
      if (x != y) {
        return Integer.compare(x, y);
      }
      i += Character.charCount(x);
      j += Character.charCount(y);
    }
    return Integer.compare(a.length() - i, b.length() - j);
  }
}
