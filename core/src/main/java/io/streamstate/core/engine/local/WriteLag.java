package io.streamstate.core.engine.local;

import io.streamstate.core.engine.ByteKeys;
import io.streamstate.core.format.Changelog;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * What a local instance's RocksDB has not been given yet while every family is mirrored in the heap
 * ({@link HeapMirror}): readers see the mirrors alone, so RocksDB need only catch up when something
 * reads it (a checkpoint for a snapshot, a family whose mirror went, a scan of one not mirrored).
 * It then takes the difference between what it holds and the newest version, not every version's
 * changes: a key put and deleted in between (an expired window, a deduplicated id, a joined row,
 * which Spark's operators insert once and evict a few batches later) never reaches it, and a key
 * written several times goes in once.
 *
 * <p>Both ends are mirror {@link HeapMirror.Entries}, which no apply changes once published, so the
 * difference is one merge of two sorted arrays, and an entry that did not change is the same array
 * in both (a reference compare). Held entries the newest version no longer has (deleted or replaced
 * since) stay in the heap until the catch-up, at most every entry the mirrors held when the lag
 * began: that much is charged to {@link HeapMirrorBudget} for the lag's life, and a lag the budget
 * refuses does not begin (RocksDB then takes each version as it comes).
 *
 * <p>Changed by its instance's applies, family operations and catch-ups only, which {@link LocalDb}
 * serializes on this object.
 */
final class WriteLag {
  private final HeapMirrorBudget budget;

  /** Per family, the entries RocksDB holds; null while RocksDB holds the newest version. */
  private Map<String, HeapMirror.Entries> written;

  /** Per family, the mirrors' entries at {@link #newestVersion}. */
  private Map<String, HeapMirror.Entries> newest;

  private long newestVersion;

  /** Bytes charged to the budget for the entries {@link #written} holds. */
  private long charged;

  /** Changes handed to RocksDB by catch-ups so far (tests). */
  private long changesCaughtUp;

  WriteLag(HeapMirrorBudget budget) {
    this.budget = budget;
  }

  boolean lagging() {
    return written != null;
  }

  /**
   * Begins a lag from {@code rocksDbHolds}, the mirrors' entries per family when they held what
   * RocksDB holds (every family of the instance), charging {@code heldBytes} (their mirrors'
   * bytes); false, nothing begun, if the budget refuses.
   */
  boolean begin(Map<String, HeapMirror.Entries> rocksDbHolds, long heldBytes) {
    if (written != null) {
      throw new IllegalStateException("a write lag has begun already");
    }
    if (heldBytes > 0 && !budget.tryCharge(heldBytes)) {
      return false;
    }
    charged = heldBytes;
    written = new LinkedHashMap<>(rocksDbHolds);
    return true;
  }

  /** The mirrors hold {@code version} now, whose entries per family are {@code entries}. */
  void advance(long version, Map<String, HeapMirror.Entries> entries) {
    newest = entries;
    newestVersion = version;
  }

  /** RocksDB created the family, empty, while lagging. */
  void familyCreated(String family) {
    if (written != null) {
      written.put(family, HeapMirror.Entries.EMPTY);
    }
  }

  /** RocksDB dropped the family while lagging: nothing of it is owed. */
  void familyDropped(String family) {
    if (written != null) {
      written.remove(family);
      if (newest != null) {
        newest.remove(family);
      }
    }
  }

  /**
   * Ends the lag: the changes that bring RocksDB from what it holds to the newest version, per
   * family in key order, as a changelog of that version (no commit ids, no family operations:
   * RocksDB had those as they came). Its charge is given back.
   */
  Changelog end() {
    if (written == null) {
      throw new IllegalStateException("no write lag to end");
    }
    List<Changelog.FamilyChanges> changes = new ArrayList<>();
    if (newest != null) {
      for (Map.Entry<String, HeapMirror.Entries> e : newest.entrySet()) {
        List<Changelog.Change> diff =
            difference(written.getOrDefault(e.getKey(), HeapMirror.Entries.EMPTY), e.getValue());
        if (!diff.isEmpty()) {
          changes.add(new Changelog.FamilyChanges(e.getKey(), diff));
          changesCaughtUp += diff.size();
        }
      }
    }
    long version = newestVersion;
    discard();
    return new Changelog(version, 0, 0, List.of(), changes);
  }

  /** Forgets the lag (the instance is closing or discarded) and gives its charge back. */
  void discard() {
    written = null;
    newest = null;
    budget.release(charged);
    charged = 0;
  }

  long changesCaughtUp() {
    return changesCaughtUp;
  }

  /** The puts and deletes that turn {@code from} into {@code to}, in key order. */
  static List<Changelog.Change> difference(HeapMirror.Entries from, HeapMirror.Entries to) {
    List<Changelog.Change> changes = new ArrayList<>();
    byte[][] fk = from.keys(), fv = from.values(), tk = to.keys(), tv = to.values();
    int i = 0, j = 0;
    while (i < from.size() || j < to.size()) {
      int cmp;
      if (i == from.size()) {
        cmp = 1;
      } else if (j == to.size()) {
        cmp = -1;
      } else {
        cmp = fk[i] == tk[j] ? 0 : ByteKeys.ORDER.compare(fk[i], tk[j]);
      }
      if (cmp < 0) {
        changes.add(new Changelog.Change(fk[i++], null));
      } else if (cmp > 0) {
        changes.add(new Changelog.Change(tk[j], tv[j]));
        j++;
      } else {
        if (fv[i] != tv[j] && !Arrays.equals(fv[i], tv[j])) {
          changes.add(new Changelog.Change(tk[j], tv[j]));
        }
        i++;
        j++;
      }
    }
    return changes;
  }
}
