package io.streamstate.core.engine;

import java.util.HexFormat;

/**
 * Where a store's durable files live, relative to its prefix:
 *
 * <pre>
 * changelog/&lt;version&gt;-&lt;commit id&gt;.changelog     one per commit attempt of a version
 * changelog/&lt;version&gt;-&lt;commit id&gt;-h.changelog   the same bytes, written by a hedge
 * snapshot/&lt;version&gt;-&lt;commit id&gt;.snapshot       one manifest per snapshot
 * snapshot/&lt;version&gt;-&lt;commit id&gt;-h.snapshot     the same manifest, written by a hedge
 * sst/&lt;sha-256 of content&gt;-&lt;length&gt;.sst           shared by every snapshot containing it
 * sst/&lt;sha-256&gt;-&lt;length&gt;-&lt;attempt id&gt;-h.sst    the same bytes, written by a hedge
 * </pre>
 *
 * Versions are 20 decimal digits, commit ids and attempt ids 16 hex digits. A commit id names one
 * commit attempt of one version (random, never reused), so names are attempt-unique: racing writers
 * never contend for a name, and each changelog records the commit id of the version it was built on
 * (its parent), which is how loads follow one lineage (see {@code docs/protocol.md}).
 */
public final class StoreLayout {
  public static final String CHANGELOG_DIR = "changelog/";
  public static final String SNAPSHOT_DIR = "snapshot/";
  public static final String SST_DIR = "sst/";
  public static final String CHANGELOG_SUFFIX = ".changelog";
  public static final String HEDGE_CHANGELOG_SUFFIX = "-h.changelog";
  public static final String SNAPSHOT_SUFFIX = ".snapshot";
  public static final String HEDGE_SNAPSHOT_SUFFIX = "-h.snapshot";
  public static final String SST_SUFFIX = ".sst";
  public static final String HEDGE_SST_SUFFIX = "-h.sst";

  private static final HexFormat HEX = HexFormat.of();

  /** A changelog file name, parsed. */
  public record ChangelogName(String name, long version, long commitId, boolean hedge) {}

  /**
   * A snapshot manifest name, parsed; {@code hedge} for the name a hedged write uses, which holds
   * the same kind of manifest of the same version and commit.
   */
  public record SnapshotName(String name, long version, long commitId, boolean hedge) {}

  /**
   * A shared SST name, parsed: the SHA-256 (lowercase hex) and length of its payload; {@code hedge}
   * for a copy written by a hedge under an attempt-unique name.
   */
  public record SstName(String name, String contentHash, long length, boolean hedge) {}

  private final String prefix;

  /** {@code prefix} is empty or ends with {@code /}. */
  public StoreLayout(String prefix) {
    if (!prefix.isEmpty() && !prefix.endsWith("/")) {
      throw new IllegalArgumentException("store prefix must end with '/': " + prefix);
    }
    this.prefix = prefix;
  }

  public String prefix() {
    return prefix;
  }

  public String changelog(long version, long commitId) {
    return changelogDir() + versionAndId(version, commitId) + CHANGELOG_SUFFIX;
  }

  /** The name a hedged write of the same changelog uses. */
  public String hedgeChangelog(long version, long commitId) {
    return changelogDir() + versionAndId(version, commitId) + HEDGE_CHANGELOG_SUFFIX;
  }

  public String snapshot(long version, long commitId) {
    return snapshotDir() + versionAndId(version, commitId) + SNAPSHOT_SUFFIX;
  }

  /** The name a hedged write of the same snapshot manifest uses. */
  public String hedgeSnapshot(long version, long commitId) {
    return snapshotDir() + versionAndId(version, commitId) + HEDGE_SNAPSHOT_SUFFIX;
  }

  /** The content-addressed name of an SST: one name, one content, shared by every snapshot. */
  public String sst(String contentHash, long length) {
    return prefix + SST_DIR + contentHash + "-" + length + SST_SUFFIX;
  }

  /**
   * The name a hedged upload of the same SST uses: attempt-unique ({@code attemptId} is random), so
   * that no other writer ever contends for it, unlike the shared content-addressed name.
   */
  public String hedgeSst(String contentHash, long length, long attemptId) {
    return prefix
        + SST_DIR
        + contentHash
        + "-"
        + length
        + "-"
        + formatId(attemptId)
        + HEDGE_SST_SUFFIX;
  }

  public String changelogDir() {
    return prefix + CHANGELOG_DIR;
  }

  /** The prefix every changelog of {@code version} starts with. */
  public String changelogsOf(long version) {
    return changelogDir() + String.format("%020d", version) + "-";
  }

  public String snapshotDir() {
    return prefix + SNAPSHOT_DIR;
  }

  public String sstDir() {
    return prefix + SST_DIR;
  }

  /** A commit id as it appears in names and messages. */
  public static String formatId(long commitId) {
    return HEX.toHexDigits(commitId);
  }

  private static String versionAndId(long version, long commitId) {
    return String.format("%020d", version) + "-" + formatId(commitId);
  }

  /** Parses a changelog name (with or without directories); null if it is not one. */
  public static ChangelogName parseChangelog(String name) {
    String base = name.substring(name.lastIndexOf('/') + 1);
    boolean hedge = base.endsWith(HEDGE_CHANGELOG_SUFFIX);
    String suffix = hedge ? HEDGE_CHANGELOG_SUFFIX : CHANGELOG_SUFFIX;
    if (!base.endsWith(suffix)) {
      return null;
    }
    long[] parsed = parseVersionAndId(base.substring(0, base.length() - suffix.length()));
    return parsed == null ? null : new ChangelogName(name, parsed[0], parsed[1], hedge);
  }

  /**
   * Parses a snapshot manifest name, primary or hedge (with or without directories); null if it is
   * not one.
   */
  public static SnapshotName parseSnapshot(String name) {
    String base = name.substring(name.lastIndexOf('/') + 1);
    boolean hedge = base.endsWith(HEDGE_SNAPSHOT_SUFFIX);
    String suffix = hedge ? HEDGE_SNAPSHOT_SUFFIX : SNAPSHOT_SUFFIX;
    if (!base.endsWith(suffix)) {
      return null;
    }
    long[] parsed = parseVersionAndId(base.substring(0, base.length() - suffix.length()));
    return parsed == null ? null : new SnapshotName(name, parsed[0], parsed[1], hedge);
  }

  /**
   * Parses a shared SST name, content-addressed or hedge (with or without directories); null if it
   * is not one.
   */
  public static SstName parseSst(String name) {
    String base = name.substring(name.lastIndexOf('/') + 1);
    boolean hedge = base.endsWith(HEDGE_SST_SUFFIX);
    String suffix = hedge ? HEDGE_SST_SUFFIX : SST_SUFFIX;
    if (!base.endsWith(suffix)) {
      return null;
    }
    String[] parts = base.substring(0, base.length() - suffix.length()).split("-", -1);
    if (parts.length != (hedge ? 3 : 2)
        || parts[0].length() != 64
        || !isLowerHex(parts[0])
        || (hedge && (parts[2].length() != 16 || !isLowerHex(parts[2])))
        || parts[1].isEmpty()
        || parts[1].length() > 18
        || !parts[1].chars().allMatch(c -> c >= '0' && c <= '9')) {
      return null;
    }
    return new SstName(name, parts[0], Long.parseLong(parts[1]), hedge);
  }

  private static boolean isLowerHex(String s) {
    for (int i = 0; i < s.length(); i++) {
      if (Character.digit(s.charAt(i), 16) < 0 || Character.isUpperCase(s.charAt(i))) {
        return false;
      }
    }
    return true;
  }

  /**
   * "&lt;20 digits&gt;-&lt;16 hex digits&gt;" to {version, id}, or null (also how segment and
   * journal names start).
   */
  public static long[] parseVersionAndId(String s) {
    if (s.length() != 20 + 1 + 16 || s.charAt(20) != '-') {
      return null;
    }
    for (int i = 0; i < 20; i++) {
      if (!Character.isDigit(s.charAt(i))) {
        return null;
      }
    }
    String id = s.substring(21);
    if (!isLowerHex(id)) {
      return null;
    }
    return new long[] {Long.parseLong(s.substring(0, 20)), HexFormat.fromHexDigitsToLong(id)};
  }
}
