package trending.avro;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.avro.AvroRuntimeException;
import org.apache.avro.Schema;
import org.apache.avro.SchemaCompatibility;
import org.apache.avro.SchemaNormalization;
import org.apache.avro.generic.GenericDatumReader;
import org.apache.avro.generic.GenericDatumWriter;
import org.apache.avro.io.BinaryEncoder;
import org.apache.avro.io.DecoderFactory;
import org.apache.avro.io.EncoderFactory;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.api.java.UDF1;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;

/**
 * Confluent wire-format values (magic byte 0, 4-byte schema id, Avro body) turned into Avro bodies
 * of the job's reader schema, or a reason they cannot be.
 *
 * <p>The writer schema is the registry's schema under the value's id ({@link SchemaRegistry}). A
 * body written with the reader schema itself passes through after the strict walk of {@link
 * AvroCheck}; a body of another, compatible writer schema is walked with the writer schema, then
 * read with Avro's schema resolution (added fields take their defaults, removed ones are skipped,
 * int widens to long, ...) and written again with the reader schema, which {@code from_avro}
 * decodes. Unknown ids, other schema types, incompatible writers and writer schemas unfit to read
 * values with ({@link SchemaShape}: recursive, too deep, too large) are reasons, not errors; a
 * registry that fails is an error ({@link SchemaRegistry.Unavailable}), never a reason.
 */
public final class WireDecoder implements UDF1<byte[], Row> {
  private static final long serialVersionUID = 1L;
  static final int HEADER_BYTES = 5;
  static final String BAD_HEADER = "not in Confluent wire format (magic byte 0 + schema id)";

  /** The result: {@code body} (reader-schema Avro) or {@code reason}, one of them null. */
  public static final StructType RESULT =
      new StructType()
          .add("body", DataTypes.BinaryType, true)
          .add("reason", DataTypes.StringType, true);

  // Writer schemas described once per JVM (parsing one with thousands of named types takes
  // seconds); the map of each task's decoder saves the key's cost per value.
  private static final Map<String, Writer> DESCRIBED = new ConcurrentHashMap<>();

  private final String readerJson;
  private final SchemaRegistry registry;
  private transient Schema reader;
  private transient long readerFingerprint;
  private transient Map<Integer, Writer> writers;

  /** Decodes values into {@code readerJson} bodies, resolving ids with {@code registry}. */
  public WireDecoder(String readerJson, SchemaRegistry registry) {
    this.readerJson = readerJson;
    this.registry = registry;
  }

  /**
   * Registers the decoder as the SQL function {@code name} returning {@link #RESULT}, with the
   * registry's settings and the session's {@code spark.trending.registry.*} ones.
   */
  public static void register(
      SparkSession spark, String name, String readerJson, String registrySettingsJson) {
    String settings = SchemaRegistry.withJobSettings(registrySettingsJson, spark.conf());
    SchemaRegistry registry =
        new SchemaRegistry(settings, SchemaRegistry.failureCounter(spark.sparkContext()));
    spark.udf().register(name, new WireDecoder(readerJson, registry), RESULT);
  }

  @Override
  public Row call(byte[] value) {
    if (value == null) {
      return RowFactory.create(null, "empty value");
    }
    if (value.length < HEADER_BYTES || value[0] != 0) {
      return RowFactory.create(null, BAD_HEADER);
    }
    int id = ByteBuffer.wrap(value, 1, 4).getInt();
    Writer writer = writer(id);
    if (writer.problem != null) {
      return RowFactory.create(null, writer.problem);
    }
    String malformed = walk(writer.schema, value);
    if (malformed != null) {
      return RowFactory.create(null, malformed);
    }
    if (writer.same) {
      return RowFactory.create(Arrays.copyOfRange(value, HEADER_BYTES, value.length), null);
    }
    return resolve(writer, value, id);
  }

  private static String walk(Schema schema, byte[] value) {
    AvroCheck.Walk walk = new AvroCheck.Walk(value, HEADER_BYTES);
    try {
      walk.datum(schema, schema.getName());
    } catch (AvroCheck.Malformed problem) {
      return problem.getMessage();
    }
    return walk.pos == value.length ? null : "trailing bytes after the Avro record";
  }

  private Row resolve(Writer writer, byte[] value, int id) {
    try {
      Object datum =
          writer
              .read
              .read(
                  null,
                  DecoderFactory.get()
                      .binaryDecoder(value, HEADER_BYTES, value.length - HEADER_BYTES, null));
      ByteArrayOutputStream out = new ByteArrayOutputStream(value.length + 16);
      BinaryEncoder encoder = EncoderFactory.get().directBinaryEncoder(out, null);
      writer.write.write(datum, encoder);
      encoder.flush();
      return RowFactory.create(out.toByteArray(), null);
    } catch (IOException | AvroRuntimeException | ClassCastException problem) {
      return RowFactory.create(
          null, "value of schema id " + id + " cannot be read with the job's schema");
    }
  }

  private Writer writer(int id) {
    if (writers == null) {
      reader = new Schema.Parser().parse(readerJson);
      readerFingerprint = SchemaNormalization.parsingFingerprint64(reader);
      writers = new HashMap<>();
    }
    Writer known = writers.get(id);
    if (known == null) {
      String key = registry.key() + "\n" + readerJson + "\n" + id;
      known = DESCRIBED.get(key);
      if (known == null) {
        known = describe(id);
        if (!known.unknown) { // the registry's client keeps unknown ids for a while, per JVM
          DESCRIBED.putIfAbsent(key, known);
        }
      }
      if (!known.unknown) {
        writers.put(id, known);
      }
    }
    return known;
  }

  private Writer describe(int id) {
    SchemaRegistry.Lookup found = registry.lookup(id);
    if (found.missing()) {
      return new Writer(null, "unknown schema id " + id, false, null, null, true);
    }
    if (!"AVRO".equalsIgnoreCase(found.schemaType())) {
      return Writer.problem("schema id " + id + " is " + found.schemaType() + ", not Avro");
    }
    Schema schema;
    try {
      schema = new Schema.Parser().parse(found.schemaText());
    } catch (RuntimeException unparsable) {
      return Writer.problem("schema id " + id + " is not a valid Avro schema");
    }
    String unfit = SchemaShape.problem(schema);
    if (unfit != null) {
      return Writer.problem("schema id " + id + " " + unfit);
    }
    if (SchemaNormalization.parsingFingerprint64(schema) == readerFingerprint) {
      return new Writer(reader, null, true, null, null, false);
    }
    SchemaCompatibility.SchemaPairCompatibility pair =
        SchemaCompatibility.checkReaderWriterCompatibility(reader, schema);
    if (pair.getType() != SchemaCompatibility.SchemaCompatibilityType.COMPATIBLE) {
      return Writer.problem(
          "schema id " + id + " is not compatible with the job's schema " + reader.getFullName());
    }
    return new Writer(
        schema,
        null,
        false,
        new GenericDatumReader<>(schema, reader),
        new GenericDatumWriter<>(reader),
        false);
  }

  /** What is known about one writer schema id (shared by the tasks of a JVM). */
  private record Writer(
      Schema schema,
      String problem,
      boolean same,
      GenericDatumReader<Object> read,
      GenericDatumWriter<Object> write,
      boolean unknown) {
    static Writer problem(String problem) {
      return new Writer(null, problem, false, null, null, false);
    }
  }
}
