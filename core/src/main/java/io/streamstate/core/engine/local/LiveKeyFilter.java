package io.streamstate.core.engine.local;

import io.streamstate.core.engine.ByteKeys;

/**
 * A Bloom filter in the JVM heap over every live key of one column family of a local instance: a
 * key it does not contain is surely absent, so a point read that misses (most reads of a streaming
 * aggregation or deduplication: a new window, a new id) is answered without a call into RocksDB,
 * which checks its memtables and every SST file's filter in native code (about 2 µs a miss against
 * a hash-map lookup for Spark's HDFS-backed provider, issue 21).
 *
 * <p>Blocked: the bits of one key all lie in one 512-bit block (a cache line), so a probe costs one
 * memory access however large the filter. About 10 bits per key and 6 probes: under 2% false
 * positives at its capacity. Keys are only added (a deleted key stays, a harmless false positive);
 * {@link LocalDb} builds a new one from each full scan of the family, and from a scan of a snapshot
 * in the background once one fills up ({@link FilterRebuild}), which drops them.
 *
 * <p>Not thread-safe: the store's lock orders every use (adds happen in a commit's local apply,
 * probes in the transaction that follows).
 */
final class LiveKeyFilter {
  private static final int BLOCK_LONGS = 8; // 512 bits
  private static final int PROBES = 6;
  private static final int BITS_PER_KEY = 10;

  /** Filters for more keys than this are not built (at most 64 MiB of bits). */
  static final long MAX_KEYS = 1L << 25;

  private final long[] bits;
  private final long blocks;
  private final long capacity;
  private long added;

  private LiveKeyFilter(long capacity) {
    this.blocks = Math.max(1, (capacity * BITS_PER_KEY + 511) / 512);
    this.bits = new long[Math.toIntExact(blocks * BLOCK_LONGS)];
    this.capacity = capacity;
  }

  /**
   * A filter with the given capacity, count of keys added and bits, as {@link #capacity}, {@link
   * #added} and {@link #bits} gave them (a stored filter read back).
   *
   * @throws IllegalArgumentException the three do not describe a filter of this shape
   */
  static LiveKeyFilter of(long capacity, long added, long[] bits) {
    if (capacity < 64 || capacity > MAX_KEYS || added < 0) {
      throw new IllegalArgumentException(
          "capacity " + capacity + " and keys added " + added + " are out of range");
    }
    LiveKeyFilter filter = new LiveKeyFilter(capacity);
    if (filter.bits.length != bits.length) {
      throw new IllegalArgumentException(
          "a filter of capacity "
              + capacity
              + " holds "
              + filter.bits.length
              + " longs, not "
              + bits.length);
    }
    System.arraycopy(bits, 0, filter.bits, 0, bits.length);
    filter.added = added;
    return filter;
  }

  /** An empty filter with room for {@code capacity} keys. */
  static LiveKeyFilter withCapacity(long capacity) {
    return new LiveKeyFilter(Math.max(64, Math.min(capacity, MAX_KEYS)));
  }

  /**
   * A filter over the keys whose {@link ByteKeys#hash64} are the first {@code count} of {@code
   * hashes}, with room for half as many more keys again.
   */
  static LiveKeyFilter of(long[] hashes, int count) {
    return of(hashes, count, 0);
  }

  /**
   * As {@link #of(long[], int)}, with room for {@code more} keys to be added at once besides
   * ({@link FilterRebuild}: the keys put while it scanned).
   */
  static LiveKeyFilter of(long[] hashes, int count, int more) {
    long keys = (long) count + more;
    LiveKeyFilter filter = withCapacity(keys + keys / 2 + 1024);
    for (int i = 0; i < count; i++) {
      filter.addHash(hashes[i]);
    }
    return filter;
  }

  void add(byte[] key) {
    addHash(ByteKeys.hash64(key));
  }

  /**
   * Adds a key by its {@link ByteKeys#hash64}. Counted in {@link #added} only if it set a bit: a
   * key put again (an aggregate updated every batch) does not fill the filter.
   */
  void addHash(long hash) {
    int base = block(hash);
    long probes = ByteKeys.mix(hash);
    long newBits = 0;
    for (int i = 0; i < PROBES; i++, probes >>>= 9) {
      int bit = (int) probes & 511;
      long mask = 1L << bit;
      int word = base + (bit >>> 6);
      newBits |= ~bits[word] & mask;
      bits[word] |= mask;
    }
    if (newBits != 0) {
      added++;
    }
  }

  /** The first long of the key's block: the hash's high half scaled to the block count. */
  private int block(long hash) {
    return (int) (((hash >>> 32) * blocks) >>> 32) * BLOCK_LONGS;
  }

  /** False: the key is surely not live. True: it may be. */
  boolean mightContain(byte[] key) {
    long hash = ByteKeys.hash64(key);
    int base = block(hash);
    long probes = ByteKeys.mix(hash);
    for (int i = 0; i < PROBES; i++, probes >>>= 9) {
      int bit = (int) probes & 511;
      if ((bits[base + (bit >>> 6)] & (1L << bit)) == 0) {
        return false;
      }
    }
    return true;
  }

  /** Whether so many keys were added past its capacity that it would answer "may be" to most. */
  boolean saturated() {
    return added > 3 * capacity;
  }

  /**
   * Whether it is filling up: half as many keys again as its capacity were added (about 4 % false
   * positives against under 2 % at its capacity, some of them deleted keys), time to build a new
   * one while it still serves.
   */
  boolean stale() {
    return added > capacity + capacity / 2;
  }

  long capacity() {
    return capacity;
  }

  long added() {
    return added;
  }

  /** The bits themselves (not a copy): only for writing them out under the store's lock. */
  long[] bits() {
    return bits;
  }

  long sizeBytes() {
    return bits.length * 8L;
  }
}
