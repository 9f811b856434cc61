package io.streamstate.core.engine;

/**
 * Where a store's durable files live, relative to its prefix:
 *
 * <pre>
 * changelog/&lt;version, 20 digits&gt;.changelog   one per committed version
 * snapshot/&lt;version, 20 digits&gt;.snapshot     one manifest per snapshot
 * sst/&lt;sha-256 of content&gt;-&lt;length&gt;.sst       shared by every snapshot containing it
 * </pre>
 */
public final class StoreLayout {
  public static final String CHANGELOG_DIR = "changelog/";
  public static final String SNAPSHOT_DIR = "snapshot/";
  public static final String SST_DIR = "sst/";
  public static final String CHANGELOG_SUFFIX = ".changelog";
  public static final String SNAPSHOT_SUFFIX = ".snapshot";

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

  public String changelog(long version) {
    return prefix + CHANGELOG_DIR + String.format("%020d", version) + CHANGELOG_SUFFIX;
  }

  public String snapshot(long version) {
    return prefix + SNAPSHOT_DIR + String.format("%020d", version) + SNAPSHOT_SUFFIX;
  }

  public String sst(String contentHash, long length) {
    return prefix + SST_DIR + contentHash + "-" + length + ".sst";
  }

  public String changelogDir() {
    return prefix + CHANGELOG_DIR;
  }

  public String snapshotDir() {
    return prefix + SNAPSHOT_DIR;
  }

  public String sstDir() {
    return prefix + SST_DIR;
  }

  /** The version a changelog or snapshot name encodes, or -1 if the name is not one. */
  public static long versionOf(String name, String suffix) {
    int slash = name.lastIndexOf('/');
    String base = name.substring(slash + 1);
    if (!base.endsWith(suffix) || base.length() != 20 + suffix.length()) {
      return -1;
    }
    String digits = base.substring(0, 20);
    for (int i = 0; i < digits.length(); i++) {
      if (!Character.isDigit(digits.charAt(i))) {
        return -1;
      }
    }
    return Long.parseLong(digits);
  }
}
