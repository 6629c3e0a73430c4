import java.util.Random;
import trending.spl.Attributes;
import trending.spl.Codec;
import trending.spl.PartitionEviction;
import trending.spl.Policy;
import trending.spl.StateInput;
import trending.spl.StateOutput;
import trending.spl.WindowConfig;
import trending.spl.WindowEvents;
import trending.spl.WindowLogic;

/**
 * Throughput of the JVM core of the SPL windows (trending.spl), no Spark: tuples are one-number
 * records, keys preallocated, events counted. Prints one line per run:
 *
 * <pre>
 * NAME tuples=N seconds=S tuples/s=R events=E [bytes/key=B]
 * </pre>
 *
 * Runs: sliding count(1000) one window per key over 10,000 keys (trigger count(1), then
 * count(100)), the tuples going to random keys one by one (each insertion then touches memory
 * no cache holds) or in runs of 100 (as Spark hands a key the rows of a batch); one partitioned
 * sliding count(10) window under partitionCount(10000) LRU eviction over 100,000 keys; the
 * encoding of the 10,000 windows and their restoring.
 */
public final class SplJvmCoreBench {
  /** A record is a {@code long[]} whose attribute 0 is its value. */
  static final Attributes<long[]> NUMBERS =
      new Attributes<>() {
        @Override
        public int index(String name) {
          return 0;
        }

        @Override
        public int kind(long[] record, int index) {
          return INTEGER;
        }

        @Override
        public long integer(long[] record, int index) {
          return record[index];
        }

        @Override
        public double real(long[] record, int index) {
          return record[index];
        }
      };

  static final Codec<long[]> RECORDS =
      new Codec<>() {
        @Override
        public void write(long[] value, StateOutput out) {
          out.writeZigZag(value[0]);
        }

        @Override
        public long[] read(StateInput in) {
          return new long[] {in.readZigZag()};
        }
      };

  static final Codec<Long> KEYS =
      new Codec<>() {
        @Override
        public void write(Long value, StateOutput out) {
          out.writeByte(value == null ? 0 : 1);
          if (value != null) {
            out.writeZigZag(value);
          }
        }

        @Override
        public Long read(StateInput in) {
          return in.readByte() == 0 ? null : in.readZigZag();
        }
      };

  static long events;
  static final WindowEvents<long[], Long> COUNT = (kind, key, tuples, at, summary) -> events++;

  public static void main(String[] args) {
    long tuples = args.length > 0 ? Long.parseLong(args[0]) : 5_000_000L;
    long[][] records = new long[4096][];
    for (int i = 0; i < records.length; i++) {
      records[i] = new long[] {i};
    }
    for (int round = 0; round < 2; round++) {
      String suffix = round == 0 ? " (warm-up)" : "";
      WindowLogic<long[], Long>[] windows = null;
      for (int run : new int[] {1, 100}) {
        windows = perKey(new Policy.Count(1), run, tuples, records, suffix);
        perKey(new Policy.Count(100), run, tuples, records, suffix);
      }
      partitionCount(tuples, records, suffix);
      roundTrip(windows, suffix);
    }
  }

  static WindowConfig sliding(Policy trigger, String partitionBy, PartitionEviction eviction) {
    return new WindowConfig(WindowConfig.Kind.SLIDING, new Policy.Count(1000), trigger,
        partitionBy, eviction, null, true, false);
  }

  @SuppressWarnings("unchecked")
  /** Tuples go to random keys in runs of {@code run} (Spark hands a key its batch's rows). */
  static WindowLogic<long[], Long>[] perKey(
      Policy trigger, int run, long tuples, long[][] records, String suffix) {
    int keys = 10_000;
    WindowConfig config = sliding(trigger, null, null);
    WindowLogic<long[], Long>[] windows = new WindowLogic[keys];
    for (int k = 0; k < keys; k++) {
      windows[k] = config.build(NUMBERS);
      for (int i = 0; i < 1000; i++) {
        windows[k].insert(records[i], null, COUNT); // full: each timed insertion also evicts
      }
    }
    Random random = new Random(7);
    events = 0;
    long start = System.nanoTime();
    for (long i = 0; i < tuples; i += run) {
      WindowLogic<long[], Long> window = windows[random.nextInt(keys)];
      for (int j = 0; j < run; j++) {
        window.insert(records[(int) ((i + j) & 4095)], null, COUNT);
      }
    }
    report("per-key sliding count(1000) trigger " + describe(trigger) + " keys=10000 run=" + run
        + suffix, tuples, start, "");
    return windows;
  }

  static void partitionCount(long tuples, long[][] records, String suffix) {
    int keys = 100_000;
    Long[] names = new Long[keys];
    for (int k = 0; k < keys; k++) {
      names[k] = (long) k;
    }
    WindowConfig config = new WindowConfig(WindowConfig.Kind.SLIDING, new Policy.Count(10),
        new Policy.Count(1), "key",
        new PartitionEviction(PartitionEviction.Limit.COUNT, 10_000), null, true, false);
    WindowLogic<long[], Long> window = config.build(NUMBERS);
    Random random = new Random(7);
    events = 0;
    long start = System.nanoTime();
    for (long i = 0; i < tuples; i++) {
      window.insert(records[(int) (i & 4095)], names[random.nextInt(keys)], COUNT);
    }
    report("partitioned sliding count(10) partitionCount(10000) LRU keys=100000" + suffix,
        tuples, start, "");
  }

  static void roundTrip(WindowLogic<long[], Long>[] windows, String suffix) {
    WindowConfig config = sliding(new Policy.Count(1), null, null);
    long bytes = 0;
    long held = 0;
    events = 0;
    long start = System.nanoTime();
    for (int k = 0; k < windows.length; k++) {
      byte[] state = windows[k].encode(RECORDS, KEYS);
      bytes += state.length;
      windows[k] = config.restore(NUMBERS, state, RECORDS, KEYS);
      held += windows[k].tupleCount();
    }
    report("encode+restore 10000 windows" + suffix, held, start,
        " bytes/key=" + bytes / windows.length);
  }

  static String describe(Policy policy) {
    return policy instanceof Policy.Count c ? "count(" + c.size() + ")" : policy.toString();
  }

  static void report(String name, long tuples, long start, String extra) {
    double seconds = (System.nanoTime() - start) / 1e9;
    System.out.printf("%s tuples=%d seconds=%.2f tuples/s=%.0f events=%d%s%n", name, tuples,
        seconds, tuples / seconds, events, extra);
  }
}
