package io.streamstate.core.format;

/** What a durable file holds; stored in its header so a file can never be read as another kind. */
public enum FileKind {
  /** The changes of one committed version of one store. */
  CHANGELOG(1),
  /** The manifest of one snapshot: the files of a RocksDB checkpoint. */
  SNAPSHOT_MANIFEST(2),
  /** One RocksDB SST file, shared by every snapshot that contains it. */
  SST(3),
  /** The changelogs of several stores' commits of one version, written by one group commit. */
  SEGMENT(4);

  private final int code;

  FileKind(int code) {
    this.code = code;
  }

  /** The byte written in the header. */
  public int code() {
    return code;
  }

  /** The kind for a header byte, or null if this release does not know it. */
  public static FileKind fromCode(int code) {
    for (FileKind kind : values()) {
      if (kind.code == code) {
        return kind;
      }
    }
    return null;
  }
}
