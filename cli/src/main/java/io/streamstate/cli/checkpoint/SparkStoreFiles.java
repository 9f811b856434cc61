package io.streamstate.cli.checkpoint;

import io.streamstate.core.storage.FileInfo;
import java.util.ArrayList;
import java.util.List;
import java.util.NavigableMap;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The files of a store written by one of Spark's own providers, by name only (their formats carry
 * no checksum this command could verify, and reading them needs Spark's classes):
 *
 * <pre>
 * HDFSBackedStateStoreProvider   N.delta, N.snapshot          (N_&lt;id&gt;.* under checkpoint format v2)
 * RocksDBStateStoreProvider      N.changelog, N.zip, SSTs/*.sst (N_&lt;id&gt;.* likewise)
 * </pre>
 *
 * A load of version {@code v} by those providers needs, by name: the HDFS-backed one, a snapshot of
 * some version {@code s <= v} (or none: version 0, the empty state) and the deltas {@code s+1..v};
 * the RocksDB one, a zip of some version {@code s <= v} (or none) and the changelogs {@code s+1..v}
 * (with changelog checkpointing; without it, the zip of {@code v}). Spark picks the newest such
 * base.
 */
public final class SparkStoreFiles {
  /** What a file of such a store is. */
  public enum Kind {
    DELTA,
    SNAPSHOT,
    CHANGELOG,
    ZIP,
    SST,
    OTHER
  }

  private static final Pattern VERSIONED =
      Pattern.compile("(\\d{1,18})(?:_[0-9A-Za-z-]+)?\\.(delta|snapshot|changelog|zip)");

  private SparkStoreFiles() {}

  /** The kind of the file {@code name} (relative to the store's directory). */
  public static Kind kindOf(String name) {
    if (name.startsWith("SSTs/") && name.endsWith(".sst") && !isHidden(name)) {
      return Kind.SST;
    }
    Matcher m = VERSIONED.matcher(name);
    if (!m.matches()) {
      return Kind.OTHER;
    }
    return switch (m.group(2)) {
      case "delta" -> Kind.DELTA;
      case "snapshot" -> Kind.SNAPSHOT;
      case "changelog" -> Kind.CHANGELOG;
      default -> Kind.ZIP;
    };
  }

  /** The version a versioned file's name carries, or -1. */
  public static long versionOf(String name) {
    Matcher m = VERSIONED.matcher(name);
    return m.matches() ? Long.parseLong(m.group(1)) : -1;
  }

  private static boolean isHidden(String name) {
    return name.substring(name.lastIndexOf('/') + 1).startsWith(".");
  }

  /** A store's versioned files by kind and version. */
  public record Versions(
      NavigableMap<Long, List<String>> increments, NavigableMap<Long, List<String>> bases) {
    /** The newest version any file names, or -1. */
    public long newest() {
      long n = -1;
      if (!increments.isEmpty()) {
        n = increments.lastKey();
      }
      if (!bases.isEmpty()) {
        n = Math.max(n, bases.lastKey());
      }
      return n;
    }

    /** The oldest version any file names, or -1. */
    public long oldest() {
      long n = Long.MAX_VALUE;
      if (!increments.isEmpty()) {
        n = increments.firstKey();
      }
      if (!bases.isEmpty()) {
        n = Math.min(n, bases.firstKey());
      }
      return n == Long.MAX_VALUE ? -1 : n;
    }

    /**
     * What a load of {@code version} stands on, by name: the newest base at or below it from which
     * every increment up to it is present (version 0 is the empty state); or -1 with {@code
     * missing} naming the first increment a load walking down from the version does not find.
     */
    public Lineage lineageOf(long version) {
      for (long v = version; v >= 0; v--) {
        if (v == 0 || bases.containsKey(v)) {
          return new Lineage(v, -1);
        }
        if (!increments.containsKey(v)) {
          return new Lineage(-1, v);
        }
      }
      return new Lineage(0, -1);
    }

    /**
     * The oldest version a load could stand on while every increment from it up to {@code version}
     * is present: a base, or 0; -1 if none.
     */
    public long oldestLoadable(long version) {
      long oldest = -1;
      for (long v = version; v >= 0; v--) {
        if (v == 0 || bases.containsKey(v)) {
          oldest = v;
        }
        if (v > 0 && !increments.containsKey(v)) {
          break;
        }
      }
      return oldest;
    }
  }

  /**
   * A load's base by name: {@code base} its version (0: the empty state), or -1 with {@code
   * missing} the version whose increment is missing.
   */
  public record Lineage(long base, long missing) {
    public boolean loadable() {
      return base >= 0;
    }
  }

  /**
   * The versioned files of a store of {@code provider}: deltas over snapshots (HDFS-backed), or
   * changelogs over zips (RocksDB), by version.
   *
   * @param files names relative to the store's directory
   */
  public static Versions versions(StateDirectory.Provider provider, List<FileInfo> files) {
    NavigableMap<Long, List<String>> increments = new TreeMap<>();
    NavigableMap<Long, List<String>> bases = new TreeMap<>();
    for (FileInfo f : files) {
      Kind kind = kindOf(f.name());
      long v = versionOf(f.name());
      boolean increment =
          provider == StateDirectory.Provider.HDFS_BACKED
              ? kind == Kind.DELTA
              : kind == Kind.CHANGELOG;
      boolean base =
          provider == StateDirectory.Provider.HDFS_BACKED
              ? kind == Kind.SNAPSHOT
              : kind == Kind.ZIP;
      if (increment) {
        increments.computeIfAbsent(v, x -> new ArrayList<>()).add(f.name());
      } else if (base) {
        bases.computeIfAbsent(v, x -> new ArrayList<>()).add(f.name());
      }
    }
    return new Versions(increments, bases);
  }
}
