package io.streamstate.cli.checkpoint;

import io.streamstate.core.engine.StoreLayout;
import io.streamstate.core.storage.FileInfo;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * The stores of a checkpoint with their files sorted by kind: the directories {@link
 * StateDirectory} found, and the stores of ours that only segments hold commits of (group commit
 * appends every commit to a segment journal: such a store may have no file of its own until its
 * first snapshot).
 */
public final class StoreInventory {
  /** A file count and their bytes. */
  public record Count(long count, long bytes) {
    Count plus(long length) {
      return new Count(count + 1, bytes + length);
    }
  }

  /**
   * One store and its files by kind ({@code changelogs}, {@code snapshots}, {@code ssts}, {@code
   * segmentMembers}, {@code journalMembers}, {@code hedgeCopies} for ours; {@code deltas}, {@code
   * snapshots} for Spark's HDFS-backed provider; {@code changelogs}, {@code zips}, {@code ssts} for
   * its RocksDB provider; {@code other} for all), and the segment members that are its commits.
   */
  public record Store(
      StateDirectory.StoreKey key,
      StateDirectory.Provider provider,
      List<FileInfo> files,
      List<Segments.Member> members,
      Map<String, Count> counts) {
    /** A file's name relative to the store's directory. */
    public String relative(FileInfo f) {
      return f.name().substring(key.prefix().length());
    }
  }

  private StoreInventory() {}

  /** Every store of {@code state}, with the commits {@code segments} hold of ours. */
  public static Map<StateDirectory.StoreKey, Store> of(StateDirectory state, Segments segments) {
    Map<StateDirectory.StoreKey, Store> stores = new TreeMap<>();
    state
        .stores()
        .forEach(
            (key, dir) ->
                stores.put(
                    key,
                    store(key, dir.provider(), dir.files(), segments.membersOf(key.prefix()))));
    for (String prefix : segments.prefixes()) {
      StateDirectory.StoreKey key = keyOf(prefix);
      if (key != null && !stores.containsKey(key)) {
        stores.put(
            key,
            store(key, StateDirectory.Provider.STREAMSTATE, List.of(), segments.membersOf(prefix)));
      }
    }
    return stores;
  }

  /** {@code <op>/<part>/[<name>/]} as a key, or null if it is not one. */
  static StateDirectory.StoreKey keyOf(String prefix) {
    String[] parts = prefix.split("/");
    try {
      if (parts.length == 2) {
        return new StateDirectory.StoreKey(
            Long.parseLong(parts[0]), Integer.parseInt(parts[1]), null);
      }
      if (parts.length == 3) {
        return new StateDirectory.StoreKey(
            Long.parseLong(parts[0]), Integer.parseInt(parts[1]), parts[2]);
      }
    } catch (NumberFormatException e) {
      return null;
    }
    return null;
  }

  private static Store store(
      StateDirectory.StoreKey key,
      StateDirectory.Provider provider,
      List<FileInfo> files,
      List<Segments.Member> members) {
    if (!members.isEmpty()) {
      provider = StateDirectory.Provider.STREAMSTATE;
    }
    Map<String, Count> counts = new java.util.LinkedHashMap<>();
    List<String> kinds =
        switch (provider) {
          case STREAMSTATE ->
              List.of(
                  "changelogs",
                  "snapshots",
                  "ssts",
                  "segmentMembers",
                  "journalMembers",
                  "hedgeCopies");
          case HDFS_BACKED -> List.of("deltas", "snapshots");
          case ROCKSDB -> List.of("changelogs", "zips", "ssts");
          case UNKNOWN -> List.of();
        };
    kinds.forEach(k -> counts.put(k, new Count(0, 0)));
    counts.put("other", new Count(0, 0));
    for (FileInfo f : files) {
      String rel = f.name().substring(key.prefix().length());
      String kind = kindOf(provider, rel);
      counts.merge(kind, new Count(1, f.length()), (a, b) -> a.plus(f.length()));
      if (provider == StateDirectory.Provider.STREAMSTATE && isOurHedgeCopy(rel)) {
        counts.merge("hedgeCopies", new Count(1, f.length()), (a, b) -> a.plus(f.length()));
      }
    }
    for (Segments.Member m : members) {
      String kind = m.inJournal() ? "journalMembers" : "segmentMembers";
      counts.merge(kind, new Count(1, m.length()), (a, b) -> a.plus(m.length()));
    }
    return new Store(key, provider, new ArrayList<>(files), members, counts);
  }

  private static String kindOf(StateDirectory.Provider provider, String rel) {
    switch (provider) {
      case STREAMSTATE:
        if (StoreLayout.parseChangelog(rel) != null && rel.startsWith(StoreLayout.CHANGELOG_DIR)) {
          return "changelogs";
        }
        if (StoreLayout.parseSnapshot(rel) != null && rel.startsWith(StoreLayout.SNAPSHOT_DIR)) {
          return "snapshots";
        }
        if (StoreLayout.parseSst(rel) != null && rel.startsWith(StoreLayout.SST_DIR)) {
          return "ssts";
        }
        return "other";
      case HDFS_BACKED:
      case ROCKSDB:
        return switch (SparkStoreFiles.kindOf(rel)) {
          case DELTA -> "deltas";
          case SNAPSHOT -> "snapshots";
          case CHANGELOG -> "changelogs";
          case ZIP -> "zips";
          case SST -> "ssts";
          case OTHER -> "other";
        };
      default:
        return "other";
    }
  }

  private static boolean isOurHedgeCopy(String rel) {
    StoreLayout.ChangelogName c = StoreLayout.parseChangelog(rel);
    StoreLayout.SnapshotName s = StoreLayout.parseSnapshot(rel);
    StoreLayout.SstName t = StoreLayout.parseSst(rel);
    return (c != null && c.hedge()) || (s != null && s.hedge()) || (t != null && t.hedge());
  }
}
