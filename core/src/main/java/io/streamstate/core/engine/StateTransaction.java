package io.streamstate.core.engine;

import io.streamstate.core.engine.local.AscendingReads;
import io.streamstate.core.engine.local.LocalDb;
import io.streamstate.core.error.OutcomeUnknownException;
import io.streamstate.core.error.RetryableException;
import io.streamstate.core.format.Changelog;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.NavigableMap;
import java.util.Objects;
import java.util.Set;
import java.util.TreeSet;

/**
 * The state of one store at one version, open for reading and changing. Changes stay in this
 * transaction until {@link #commit()} makes them version {@code version() + 1}, durably; {@link
 * #abort()} (or {@link #close()} without commit) drops them.
 *
 * <p>Reads see the transaction's own changes. Iteration is in unsigned byte order of keys; keys may
 * be deleted while iterating. Not thread-safe: one task thread uses a transaction.
 *
 * <p>Keys and values passed in are copied; arrays returned are the caller's.
 */
public final class StateTransaction implements AutoCloseable {
  private enum State {
    OPEN,
    COMMITTED,
    ABORTED
  }

  private final VersionedStore store;
  private final LocalDb db;
  private final long version;
  private final Set<String> families;
  private final Map<String, Overlay> overlays = new HashMap<>();
  private final List<Changelog.FamilyOp> familyOps = new ArrayList<>();
  private final List<MergingIterator> iterators = new ArrayList<>();
  private State state = State.OPEN;
  private final long baseCommitId;
  private final boolean emptyBase;
  private long committedVersion = -1;
  private long committedId;

  StateTransaction(
      VersionedStore store, LocalDb db, long version, long baseCommitId, boolean emptyBase) {
    this.store = store;
    this.db = db;
    this.version = version;
    this.baseCommitId = baseCommitId;
    this.emptyBase = emptyBase;
    this.families = new LinkedHashSet<>(db.familyNames());
  }

  /** The version this transaction was loaded at. */
  public long version() {
    return version;
  }

  /** The commit id of the version this transaction was loaded at (0 for the empty state). */
  public long baseCommitId() {
    return baseCommitId;
  }

  /**
   * Whether this transaction starts from nothing at its version ({@link
   * VersionedStore#beginEmpty}): its commit publishes a snapshot, not a changelog.
   */
  public boolean startsEmpty() {
    return emptyBase;
  }

  /** The column families visible now, {@code "default"} always among them. */
  public Set<String> columnFamilies() {
    return Collections.unmodifiableSet(new TreeSet<>(families));
  }

  /** The value of {@code key}, or null. */
  public byte[] get(String family, byte[] key) {
    checkOpen();
    Overlay overlay = checkFamily(family);
    if (overlay != null) {
      byte[] v = overlay.get(key);
      if (v != null) {
        return v == Overlay.TOMBSTONE ? null : v.clone();
      }
      if (overlay.hidesCommitted) {
        return null;
      }
    }
    if (db.mirrored(family)) {
      byte[] committed = db.get(family, key); // one search of the heap
      lastReadFamily = family;
      lastReadKey = key.clone();
      lastReadFound = committed != null;
      return committed;
    }
    if (!db.mightContain(family, key)) {
      return null; // cheaper to ask again than to remember
    }
    byte[] committed = committedReads(family).get(key);
    remember(family, key, committed != null);
    return committed;
  }

  /** Per family, its committed reads (by iterator while they ascend); closed with the iterators. */
  private final Map<String, AscendingReads> committedReads = new HashMap<>();

  private AscendingReads committedReads(String family) {
    AscendingReads reads = committedReads.get(family);
    if (reads == null) {
      reads = db.ascendingReads(family);
      committedReads.put(family, reads);
    }
    return reads;
  }

  /**
   * Whether {@code key} exists, as {@link #get} would say, without copying its value. A key this
   * transaction already read or asked about is answered from memory: the committed state does not
   * change while a transaction is open, and callers that count keys (a read, then a put of the same
   * key) would otherwise read it twice.
   */
  public boolean exists(String family, byte[] key) {
    checkOpen();
    Overlay overlay = checkFamily(family);
    if (overlay != null) {
      byte[] v = overlay.get(key);
      if (v != null) {
        return v != Overlay.TOMBSTONE;
      }
      if (overlay.hidesCommitted) {
        return false;
      }
    }
    return committedExists(family, key);
  }

  /** Whether {@code key} exists in the committed state this transaction was loaded at. */
  private boolean committedExists(String family, byte[] key) {
    if (lastIteratedKey != null
        && family.equals(lastIteratedFamily)
        && Arrays.equals(key, lastIteratedKey)) {
      // An iterator just returned this key from the committed state (Spark deletes expired
      // entries while iterating over them): it exists, no need to read it again.
      return true;
    }
    if (lastReadKey != null && family.equals(lastReadFamily) && Arrays.equals(key, lastReadKey)) {
      return lastReadFound; // a read, then a put of the same key: Spark's deduplication
    }
    if (db.mirrored(family)) {
      return db.exists(family, key); // one search of the heap
    }
    if (!db.mightContain(family, key)) {
      return false;
    }
    ExistenceMemo known = committedExistence.get(family);
    int memo = known == null ? ExistenceMemo.UNKNOWN : known.lookUp(key);
    if (memo != ExistenceMemo.UNKNOWN) {
      return memo == ExistenceMemo.PRESENT;
    }
    boolean found = db.exists(family, key);
    remember(family, key, found);
    return found;
  }

  /** Keys whose committed existence this transaction looked up, so far, per family. */
  private final Map<String, ExistenceMemo> committedExistence = new HashMap<>();

  /**
   * The key of a mirrored family this transaction read last (a copy), and whether it was committed:
   * the put that follows a read asks the same, and a heap search costs more than this comparison.
   * The committed state does not change while a transaction is open.
   */
  private String lastReadFamily;

  private byte[] lastReadKey;
  private boolean lastReadFound;

  /** The key an iterator of this transaction last returned from the committed state, a copy. */
  private String lastIteratedFamily;

  private byte[] lastIteratedKey;

  /** The overlay of that key's family then, and its count of changes then. */
  private Overlay lastIteratedOverlay;

  private int lastIteratedModifications;

  /**
   * Bounds what a transaction remembers of a family's committed existence (a few tens of MB at
   * most).
   */
  private static final int MAX_REMEMBERED_KEYS = 1 << 20;

  private void remember(String family, byte[] key, boolean exists) {
    committedExistence
        .computeIfAbsent(family, f -> new ExistenceMemo(MAX_REMEMBERED_KEYS))
        .remember(key, exists);
  }

  /** Called by this transaction's iterators for each entry they return from committed data. */
  private void iteratedCommitted(String family, Overlay overlay, byte[] key) {
    lastIteratedFamily = family;
    lastIteratedKey = key.clone();
    lastIteratedOverlay = overlay;
    lastIteratedModifications = overlay.modifications();
  }

  /**
   * Deletes {@code key} as a scan deletion of its overlay ({@link Overlay#appendDeleted}) if it is
   * the committed key an iterator returned last, with no change to the family since; false if not.
   */
  private boolean deleteReturned(Overlay overlay, byte[] key) {
    // The overlay is the family's (a dropped and re-created family has a new one).
    return overlay == lastIteratedOverlay
        && overlay.modifications() == lastIteratedModifications
        && Arrays.equals(key, lastIteratedKey)
        && overlay.appendDeleted(lastIteratedKey);
  }

  public void put(String family, byte[] key, byte[] value) {
    checkOpen();
    Objects.requireNonNull(key, "key");
    Objects.requireNonNull(value, "value");
    checkFamily(family);
    overlay(family).put(key.clone(), value.clone());
  }

  /**
   * Puts {@code key} and tells whether it existed just before, as {@link #exists} would have said:
   * the same as {@code exists} then {@code put}, with one lookup of the changes instead of two.
   */
  public boolean putAndCheckExisted(String family, byte[] key, byte[] value) {
    return putOwnedAndCheckExisted(
        family,
        Objects.requireNonNull(key, "key").clone(),
        Objects.requireNonNull(value, "value").clone());
  }

  public void delete(String family, byte[] key) {
    checkOpen();
    Objects.requireNonNull(key, "key");
    checkFamily(family);
    Overlay overlay = overlay(family);
    if (!deleteReturned(overlay, key)) {
      overlay.put(key.clone(), Overlay.TOMBSTONE);
    }
  }

  /**
   * Deletes {@code key} and tells whether it existed just before, as {@link #exists} would have
   * said: the same as {@code exists} then {@code delete}, with one lookup of the changes.
   */
  public boolean deleteAndCheckExisted(String family, byte[] key) {
    checkOpen();
    Objects.requireNonNull(key, "key");
    checkFamily(family);
    Overlay overlay = overlay(family);
    if (deleteReturned(overlay, key)) {
      return true; // a committed key an iterator returned, not changed since
    }
    return existedBefore(overlay, family, key, overlay.put(key.clone(), Overlay.TOMBSTONE));
  }

  /**
   * {@link #putAndCheckExisted} keeping {@code key} and {@code value} themselves, not copies: for a
   * caller that made both arrays for this call and never reads or changes them again (the Spark
   * store encodes each put's key and value afresh; two copies a put saved, issue 21).
   */
  public boolean putOwnedAndCheckExisted(String family, byte[] key, byte[] value) {
    checkOpen();
    Objects.requireNonNull(key, "key");
    Objects.requireNonNull(value, "value");
    checkFamily(family);
    Overlay overlay = overlay(family);
    return existedBefore(overlay, family, key, overlay.put(key, value));
  }

  /** Existence of {@code key} before a change that replaced {@code previous} in the overlay. */
  private boolean existedBefore(Overlay overlay, String family, byte[] key, byte[] previous) {
    if (previous != null) {
      return previous != Overlay.TOMBSTONE;
    }
    return !overlay.hidesCommitted && committedExists(family, key);
  }

  /** All entries of a family in key order. */
  public CloseableIterator<KeyValue> iterator(String family) {
    return rangeIterator(family, null, null);
  }

  /** The entries whose keys start with {@code prefix}, in key order. */
  public CloseableIterator<KeyValue> prefixIterator(String family, byte[] prefix) {
    return rangeIterator(family, prefix, ByteKeys.prefixEnd(prefix));
  }

  /**
   * The entries with {@code from <= key < to} in key order; a null bound is open. A live view, as
   * Spark's HDFS-backed provider's iterators (whose behaviour Spark's store contract, {@code
   * StateStoreSuiteBase} "SPARK-38320", requires of every provider but its RocksDB one): each step
   * returns the next key after the last one returned as the transaction holds it then, with changes
   * made after the iterator was created; except that an iterator created over nothing (no committed
   * entry and no change in the range) stays empty, as a map's iterator does.
   */
  public CloseableIterator<KeyValue> rangeIterator(String family, byte[] from, byte[] to) {
    checkOpen();
    checkFamily(family);
    Overlay overlay = overlay(family); // made now, so that later changes are seen
    LocalDb.Cursor base = overlay.hidesCommitted ? null : db.newIterator(family, from);
    NavigableMap<byte[], byte[]> ordered = overlay.ordered();
    NavigableMap<byte[], byte[]> view = from == null ? ordered : ordered.tailMap(from, true);
    MergingIterator it =
        new MergingIterator(
            base,
            view,
            overlay,
            to,
            committedKey -> iteratedCommitted(family, overlay, committedKey));
    if (iterators.size() >= 64) {
      // Operators open an iterator per key (joins): forget the ones already closed.
      iterators.removeIf(MergingIterator::isClosed);
    }
    iterators.add(it);
    return it;
  }

  /** Creates a column family; false if it exists already. */
  public boolean createColumnFamily(String family) {
    checkOpen();
    Objects.requireNonNull(family, "family");
    if (family.isEmpty()) {
      throw new IllegalArgumentException("column family name is empty");
    }
    if (families.contains(family)) {
      return false;
    }
    families.add(family);
    familyOps.add(new Changelog.FamilyOp(Changelog.FamilyOp.Kind.CREATE, family));
    overlays.put(family, new Overlay(true));
    return true;
  }

  /** Drops a column family and all its entries; false if it does not exist. */
  public boolean dropColumnFamily(String family) {
    checkOpen();
    if (LocalDb.DEFAULT_FAMILY.equals(family)) {
      throw new IllegalArgumentException("the default column family cannot be dropped");
    }
    if (!families.remove(family)) {
      return false;
    }
    familyOps.add(new Changelog.FamilyOp(Changelog.FamilyOp.Kind.DROP, family));
    overlays.remove(family);
    return true;
  }

  /** Number of keys put or deleted so far. */
  public long changeCount() {
    long n = 0;
    for (Overlay o : overlays.values()) {
      n += o.size();
    }
    return n;
  }

  /**
   * Makes the changes version {@code version() + 1}: durable once this returns.
   *
   * @return the new version
   * @throws RetryableException nothing was committed; aborted
   * @throws OutcomeUnknownException the changelog may or may not be durable; aborted; load again to
   *     find out
   */
  public long commit() {
    checkOpen();
    closeIterators();
    try {
      VersionedStore.Committed committed = store.commit(this);
      committedVersion = committed.version();
      committedId = committed.commitId();
      state = State.COMMITTED;
      return committedVersion;
    } finally {
      if (state == State.OPEN) {
        state = State.ABORTED;
        store.release(this);
      }
    }
  }

  /**
   * Declares whether this transaction may still commit (by default it may). A group commit waits
   * for the transactions of other threads that may commit; a read-only use says it will not, so
   * that other stores' commits do not wait for it.
   */
  public void expectCommit(boolean mayCommit) {
    if (state == State.OPEN) {
      store.expectCommit(this, mayCommit);
    }
  }

  /** Drops all changes. Idempotent; a no-op after commit. */
  public void abort() {
    if (state == State.OPEN) {
      state = State.ABORTED;
      closeIterators();
      store.release(this);
    }
  }

  public boolean hasCommitted() {
    return state == State.COMMITTED;
  }

  /** The version commit produced; fails unless committed. */
  public long committedVersion() {
    if (state != State.COMMITTED) {
      throw new IllegalStateException("not committed");
    }
    return committedVersion;
  }

  /**
   * The commit id of the version commit produced (what names it among other commits of that
   * version: retries, speculative attempts, re-runs); fails unless committed.
   */
  public long committedId() {
    if (state != State.COMMITTED) {
      throw new IllegalStateException("not committed");
    }
    return committedId;
  }

  /** Aborts unless committed. */
  @Override
  public void close() {
    abort();
  }

  /** The changelog of this transaction's changes, as version {@code newVersion}. */
  Changelog toChangelog(long newVersion, long commitId, long parentId) {
    List<Changelog.FamilyChanges> changes = new ArrayList<>();
    for (String family : new TreeSet<>(overlays.keySet())) {
      Overlay overlay = overlays.get(family);
      if (overlay.isEmpty()) {
        continue;
      }
      List<Changelog.Change> list = new ArrayList<>((int) overlay.size());
      overlay.forEachChange(
          (key, value) ->
              list.add(new Changelog.Change(key, value == Overlay.TOMBSTONE ? null : value)));
      changes.add(new Changelog.FamilyChanges(family, list));
    }
    return new Changelog(newVersion, commitId, parentId, List.copyOf(familyOps), changes);
  }

  /** How many of {@code family}'s deletions are kept as scan deletions (tests). */
  int scanDeletions(String family) {
    Overlay overlay = overlays.get(family);
    return overlay == null ? 0 : overlay.deletedCount();
  }

  LocalDb db() {
    return db;
  }

  private Overlay overlay(String family) {
    return overlays.computeIfAbsent(family, f -> new Overlay(false));
  }

  /** Checks the family exists; returns its overlay if it has one. */
  private Overlay checkFamily(String family) {
    if (!families.contains(family)) {
      throw new IllegalArgumentException(
          "Store "
              + store.name()
              + " version "
              + version
              + " has no column family '"
              + family
              + "' (has "
              + columnFamilies()
              + ")");
    }
    return overlays.get(family);
  }

  private void checkOpen() {
    if (state != State.OPEN) {
      throw new IllegalStateException(
          "Transaction on store " + store.name() + " at version " + version + " is " + state);
    }
  }

  private void closeIterators() {
    for (MergingIterator it : iterators) {
      it.close();
    }
    iterators.clear();
    for (AscendingReads reads : committedReads.values()) {
      reads.close();
    }
    committedReads.clear();
  }
}
