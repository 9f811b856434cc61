package io.streamstate.core.engine.local;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Key ranges, per column family, inside which a changelog deletes every key the version before it
 * held (or puts it again): what lets {@link LocalDb#apply(io.streamstate.core.format.Changelog,
 * DeletedRanges)} write one range deletion instead of a tombstone for each key. Spark's eviction
 * deletes the oldest keys of a store as its scan returns them, a quarter of a 10M-key store in one
 * batch; as tombstones that was 1.25M memtable inserts a store on the commit's path.
 *
 * <p>A local shortcut only: the changelog still lists every deleted key, and a load replays those.
 * Each range's first and last keys are keys the changelog changes (both ends inclusive); the ranges
 * of a family are added in key order and do not overlap.
 */
public final class DeletedRanges {
  /** No ranges: every delete is applied as a tombstone. */
  public static final DeletedRanges NONE = new DeletedRanges();

  /** Every key {@code k} with {@code first <= k <= last}. */
  public record Range(byte[] first, byte[] last) {}

  private final Map<String, List<Range>> byFamily = new HashMap<>();

  /** Adds a range of {@code family}, after (in key order) every range added before. */
  public void add(String family, byte[] first, byte[] last) {
    if (this == NONE) {
      throw new UnsupportedOperationException("NONE holds no ranges");
    }
    byFamily.computeIfAbsent(family, f -> new ArrayList<>()).add(new Range(first, last));
  }

  /** The ranges of {@code family} in key order, possibly none. */
  public List<Range> of(String family) {
    List<Range> ranges = byFamily.get(family);
    return ranges == null ? List.of() : ranges;
  }
}
