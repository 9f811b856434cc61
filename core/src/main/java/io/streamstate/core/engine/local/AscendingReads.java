package io.streamstate.core.engine.local;

import io.streamstate.core.engine.ByteKeys;
import org.rocksdb.RocksDBException;
import org.rocksdb.RocksIterator;

/**
 * Point reads of one column family's committed entries: by {@link LocalDb#get}, except while they
 * come in ascending key order, when a forward iterator steps from one key to the next instead.
 *
 * <p>Spark's stream-stream join evicts by reading every value of its key-with-index store in key
 * order: it walks its key-to-count store and reads each key's values by index, and both stores'
 * keys sort by the join key first. A point read searches the memtables, each level's index and a
 * data block anew (a fifth of a saturated join's store time, docs/bench/2026-12-03-issue21.md
 * section 18); an iterator already at the previous key takes one step. A few ascending reads in a
 * row switch to the iterator, which then takes at most a few steps toward each key; a key further
 * away, or one that does not ascend, goes back to point reads, so that random reads (the join's
 * probes, an aggregation's lookups) never pay for seeks.
 *
 * <p>The iterator reads the committed state as it was when created: a transaction's, which does not
 * change while it is open. Not thread-safe. Close it (its iterator pins memtables and files).
 */
public final class AscendingReads implements AutoCloseable {
  /** Ascending reads in a row before the iterator serves them: random keys ascend now and then. */
  private static final int RUN_BEFORE_STEPPING = 4;

  /** Steps the iterator takes toward a key before the read is left to a point read. */
  private static final int MAX_STEPS = 4;

  private final LocalDb db;
  private final String family;

  /** Positioned at the first entry at or after {@link #positionedFor}, or past the last one. */
  private RocksIterator it;

  private byte[] positionedFor;

  /** The iterator's current key, once read (each read is a copy out of native memory). */
  private byte[] currentKey;

  private final EntryCopier copier = new EntryCopier();

  /** The key read last, and how many reads in a row ascended up to it. */
  private byte[] last;

  private int run;

  /** Reads the iterator answered (tests). */
  private long iteratorReads;

  AscendingReads(LocalDb db, String family) {
    this.db = db;
    this.family = family;
  }

  /** The committed value of {@code key}, or null; as {@link LocalDb#get} answers. */
  public byte[] get(byte[] key) {
    if (db.mirrored(family)) {
      return db.get(family, key); // in the heap: no step is cheaper than the lookup
    }
    boolean ascending = last != null && ByteKeys.ORDER.compare(key, last) > 0;
    last = key.clone();
    run = ascending ? run + 1 : 0;
    if (run < RUN_BEFORE_STEPPING) {
      return db.get(family, key);
    }
    try {
      if (it == null) {
        it = db.rawIterator(family);
        if (it == null) {
          return null; // no such family
        }
        seek(key);
      } else if (!stepTo(key)) {
        seek(key); // as dear as a point read
        run = 0; // too far: point reads until they ascend again
      }
      positionedFor = last;
      iteratorReads++;
      if (!it.isValid()) {
        it.status(); // the end, or an error
        return null;
      }
      return ByteKeys.ORDER.compare(currentKey(), key) == 0 ? copier.value(it) : null;
    } catch (RocksDBException e) {
      throw db.readFailure(e);
    }
  }

  long iteratorReads() {
    return iteratorReads;
  }

  private void seek(byte[] key) {
    it.seek(key);
    currentKey = null;
  }

  /**
   * Moves the iterator to the first entry at or after {@code key} in at most {@link #MAX_STEPS}
   * steps; false if it would take more, or if {@code key} is not after {@link #positionedFor}
   * (reads by point since may have gone back): then it must seek.
   */
  private boolean stepTo(byte[] key) throws RocksDBException {
    if (positionedFor == null || ByteKeys.ORDER.compare(key, positionedFor) <= 0) {
      return false;
    }
    for (int steps = 0; it.isValid(); steps++) {
      if (ByteKeys.ORDER.compare(currentKey(), key) >= 0) {
        return true;
      }
      if (steps == MAX_STEPS) {
        return false;
      }
      it.next();
      currentKey = null;
    }
    it.status();
    return true; // past the last entry: so is the key
  }

  private byte[] currentKey() {
    if (currentKey == null) {
      currentKey = copier.key(it);
    }
    return currentKey;
  }

  @Override
  public void close() {
    if (it != null) {
      it.close();
      it = null;
    }
  }
}
