package trending.sensors;

import java.io.Serializable;
import java.util.Iterator;
import java.util.UUID;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.sql.classic.SparkSession;
import org.apache.spark.sql.execution.streaming.state.KeyStateEncoderSpec;
import org.apache.spark.sql.execution.streaming.state.NoPrefixKeyStateEncoderSpec;
import org.apache.spark.sql.execution.streaming.state.PrefixKeyScanStateEncoderSpec;
import org.apache.spark.sql.execution.streaming.state.StateStore;
import org.apache.spark.sql.execution.streaming.state.StateStoreRDD;
import org.apache.spark.sql.types.StructType;
import scala.Option;
import scala.jdk.javaapi.CollectionConverters;
import scala.reflect.ClassTag;
import scala.reflect.ClassTag$;
import scala.runtime.AbstractFunction2;

/**
 * Spark's versioned state store (RocksDB provider, as configured on the session) used directly
 * from a micro-batch: partition {@code i} of the input reads store partition {@code i} at version
 * {@code v} and commits version {@code v + 1}.
 *
 * <p>A store lives at {@code <location>/<operatorId>/<partition>} of the job's checkpoint; the
 * batch id is the version it starts from, so a batch run again after a crash starts from the same
 * state and overwrites what the failed run committed. Spark's state store coordinator schedules
 * each partition where its store is already loaded.
 */
public final class StateStores implements Serializable {
  private static final long serialVersionUID = 1L;
  static final String DEFAULT = StateStore.DEFAULT_COL_FAMILY_NAME();

  /** The work on one store partition: read {@code rows}, update {@code store}, return the output. */
  @FunctionalInterface
  public interface Update<T, U> extends Serializable {
    Iterator<U> apply(StateStore store, Iterator<T> rows);
  }

  private final String location;
  private final UUID runId;
  private final int partitions;

  public StateStores(String location, UUID runId, int partitions) {
    this.location = location;
    this.runId = runId;
    this.partitions = partitions;
  }

  public int partitions() {
    return partitions;
  }

  /**
   * {@code update} over each partition of {@code input} (exactly {@link #partitions} of them) with
   * store {@code operatorId} at {@code version}; {@code update} must commit the store. With
   * {@code scanColumns > 0} the store can scan the keys that share their first {@code scanColumns}
   * columns ({@code prefixScan}).
   */
  public <T, U> JavaRDD<U> run(
      SparkSession spark,
      JavaRDD<T> input,
      long operatorId,
      long version,
      StructType keySchema,
      int scanColumns,
      StructType valueSchema,
      Update<T, U> update,
      Class<T> inputClass,
      Class<U> outputClass) {
    if (input.getNumPartitions() != partitions) {
      throw new IllegalStateException(
          "state store input has " + input.getNumPartitions() + " partitions, not " + partitions);
    }
    KeyStateEncoderSpec keys =
        scanColumns > 0
            ? new PrefixKeyScanStateEncoderSpec(keySchema, scanColumns)
            : new NoPrefixKeyStateEncoderSpec(keySchema);
    ClassTag<T> inTag = ClassTag$.MODULE$.apply(inputClass);
    ClassTag<U> outTag = ClassTag$.MODULE$.apply(outputClass);
    StateStoreRDD<T, U> rdd =
        new StateStoreRDD<>(
            input.rdd(),
            new Adapter<>(update),
            location,
            runId,
            operatorId,
            version,
            Option.empty(),
            Option.empty(),
            keySchema,
            valueSchema,
            keys,
            spark.sessionState(),
            Option.apply(spark.streams().stateStoreCoordinator()),
            false,
            scala.collection.immutable.Map$.MODULE$.<String, String>empty(),
            false,
            inTag,
            outTag);
    return JavaRDD.fromRDD(rdd, outTag);
  }

  /** Scala's function type around {@link Update}. */
  private static final class Adapter<T, U>
      extends AbstractFunction2<
          StateStore, scala.collection.Iterator<T>, scala.collection.Iterator<U>>
      implements Serializable {
    private static final long serialVersionUID = 1L;
    private final Update<T, U> update;

    Adapter(Update<T, U> update) {
      this.update = update;
    }

    @Override
    public scala.collection.Iterator<U> apply(StateStore store, scala.collection.Iterator<T> rows) {
      return CollectionConverters.asScala(update.apply(store, CollectionConverters.asJava(rows)));
    }
  }
}
