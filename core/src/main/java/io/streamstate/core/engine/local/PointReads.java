package io.streamstate.core.engine.local;

import java.nio.ByteBuffer;
import org.rocksdb.ColumnFamilyHandle;
import org.rocksdb.KeyMayExist;
import org.rocksdb.ReadOptions;
import org.rocksdb.RocksDB;
import org.rocksdb.RocksDBException;

/**
 * One key's value or existence read from a local RocksDB, by the cheapest call the loaded library
 * offers.
 *
 * <p>From RocksDB 9 on, rocksdbjni's {@code get} throws and catches a C++ exception inside the
 * library for every key it does not find, which unwinds the native stack: a miss cost 2.0 µs
 * against 0.75 µs on 8.3.2, and a third of a saturated join's point-read samples were that
 * unwinding (docs/bench/2026-12-03-issue21.md section 16). Spark's state reads miss often (a new
 * window, a key deleted since the live-key filter saw it). {@code keyMayExist} with a value buffer
 * answers from the memtables and cached blocks without that exception: not there, there with its
 * value, or "may be there" when a block it needs is not cached, and only then is {@code get}
 * called. It reads no file, so a read error cannot pass for "not there": a file it would have to
 * read makes it answer "may be there". One quirk: RocksDB 9.8 sometimes says "there, with its
 * value" and gives an empty value when it read nothing (a value larger than the memtable read right
 * after its flush), so an empty value is confirmed with {@code get}. On 8.x plain {@code get} is
 * faster and is used.
 */
final class PointReads {
  /**
   * Whether {@code get} throws natively on a miss in the loaded library (rocksdbjni 9 and later).
   */
  private static final boolean MISSES_THROW = RocksDbVersion.loadedMajor() >= 9;

  /** Values larger than this are read with {@code get} rather than kept in a thread's buffer. */
  private static final int MAX_BUFFERED_VALUE = 1 << 20;

  private static final byte[] NO_BYTES = new byte[0];

  /**
   * Each thread's direct buffers for the key and the value (rocksdbjni's buffer calls need them).
   */
  private static final ThreadLocal<Buffers> BUFFERS = ThreadLocal.withInitial(Buffers::new);

  private PointReads() {}

  /** The value of {@code key}, or null if the family has none. */
  static byte[] get(RocksDB db, ColumnFamilyHandle family, ReadOptions options, byte[] key)
      throws RocksDBException {
    if (MISSES_THROW) {
      Buffers buffers = BUFFERS.get();
      KeyMayExist found = ask(db, family, options, key, buffers);
      if (found.exists == KeyMayExist.KeyMayExistEnum.kNotExist) {
        return null;
      }
      if (readValue(found)) {
        if (found.valueLength <= buffers.value.capacity()) {
          byte[] out = new byte[found.valueLength];
          buffers.value.get(0, out);
          return out;
        }
        buffers.growValue(found.valueLength);
      }
    }
    return db.get(family, options, key);
  }

  /** Whether the family has {@code key}, without copying its value into the JVM. */
  static boolean exists(RocksDB db, ColumnFamilyHandle family, ReadOptions options, byte[] key)
      throws RocksDBException {
    if (MISSES_THROW) {
      KeyMayExist found = ask(db, family, options, key, BUFFERS.get());
      if (found.exists == KeyMayExist.KeyMayExistEnum.kNotExist) {
        return false;
      }
      if (readValue(found)) {
        return true;
      }
    }
    // A zero-length buffer: RocksDB reports the value's size and copies none of it. (Not
    // RocksDB.keyExists: RocksDB 8.3, which Spark 3.5 ships, lacks it.)
    return db.get(family, options, key, NO_BYTES) != RocksDB.NOT_FOUND;
  }

  /** RocksDB's "may exist" answer for {@code key}, the value (what fits) in the thread's buffer. */
  private static KeyMayExist ask(
      RocksDB db, ColumnFamilyHandle family, ReadOptions options, byte[] key, Buffers buffers) {
    buffers.value.clear();
    return db.keyMayExist(family, options, buffers.key(key), buffers.value);
  }

  /**
   * Whether RocksDB found the key and read its value. Not when the value is empty: RocksDB 9.8 also
   * says "there, with its value" with nothing read for a value larger than the memtable read right
   * after its flush (CommitPathTest), so an empty value is confirmed by {@code get}.
   */
  private static boolean readValue(KeyMayExist found) {
    return found.exists == KeyMayExist.KeyMayExistEnum.kExistsWithValue && found.valueLength > 0;
  }

  private static final class Buffers {
    private ByteBuffer key = ByteBuffer.allocateDirect(256);
    private ByteBuffer value = ByteBuffer.allocateDirect(4096);

    /** {@code bytes} in the key buffer, positioned for reading. */
    ByteBuffer key(byte[] bytes) {
      if (bytes.length > key.capacity()) {
        key = ByteBuffer.allocateDirect(Integer.highestOneBit(bytes.length) << 1);
      }
      key.clear();
      key.put(bytes).flip();
      return key;
    }

    /** Makes room for values of {@code length} bytes next time, up to the cap. */
    void growValue(int length) {
      if (length <= MAX_BUFFERED_VALUE) {
        value =
            ByteBuffer.allocateDirect(
                Math.min(MAX_BUFFERED_VALUE, Integer.highestOneBit(length) << 1));
      }
    }
  }
}
