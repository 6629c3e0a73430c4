package trending.sensors;

import org.apache.spark.unsafe.hash.Murmur3_x86_32;

/**
 * A {@code cell} value for each store partition: the row keyed by it lands in that partition of
 * {@code repartition(partitions, col("cell"))}, whose partition of a long key {@code c} is
 * {@code pmod(murmur3_x86_32(c, seed 42), partitions)} (Spark's {@code HashPartitioning}).
 */
final class Routes {
  private static final int SEED = 42;

  private Routes() {}

  /** The store partition of a row whose {@code cell} is {@code cell}. */
  static int partitionOf(long cell, int partitions) {
    return Math.floorMod(Murmur3_x86_32.hashLong(cell, SEED), partitions);
  }

  /** {@code routes[p]}: a cell value whose rows go to partition {@code p}. */
  static long[] of(int partitions) {
    long[] routes = new long[partitions];
    boolean[] found = new boolean[partitions];
    int left = partitions;
    for (long cell = 0; left > 0; cell++) {
      int p = partitionOf(cell, partitions);
      if (!found[p]) {
        found[p] = true;
        routes[p] = cell;
        left--;
      }
    }
    return routes;
  }
}
