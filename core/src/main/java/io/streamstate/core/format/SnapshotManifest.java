package io.streamstate.core.format;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * The files of one RocksDB checkpoint taken at {@code version}. SST files are shared between
 * snapshots and stored once under a content-derived name; the small files (CURRENT, MANIFEST,
 * OPTIONS) are carried inline, so a snapshot adds one manifest plus only the SSTs it is first to
 * contain.
 *
 * @param commitId the commit id of the version snapshotted (the lineage point it stands for)
 */
public record SnapshotManifest(long version, long commitId, List<Entry> files) {

  /** One file of the checkpoint: inline bytes, or a reference to a shared SST. */
  public record Entry(String localName, long length, byte[] inlineContent, String sharedName) {
    public Entry {
      Objects.requireNonNull(localName, "localName");
      if ((inlineContent == null) == (sharedName == null)) {
        throw new IllegalArgumentException("exactly one of inline content and shared name");
      }
    }

    public static Entry inline(String localName, byte[] content) {
      return new Entry(localName, content.length, content, null);
    }

    public static Entry shared(String localName, long length, String sharedName) {
      return new Entry(localName, length, null, sharedName);
    }

    public boolean isShared() {
      return sharedName != null;
    }
  }

  private static final int INLINE = 1;
  private static final int SHARED = 2;

  /** The shared file names this snapshot references. */
  public List<String> sharedNames() {
    List<String> names = new ArrayList<>();
    for (Entry e : files) {
      if (e.isShared()) {
        names.add(e.sharedName());
      }
    }
    return names;
  }

  /** Bytes of the database files this snapshot restores (shared and inline). */
  public long totalLength() {
    long n = 0;
    for (Entry e : files) {
      n += e.length();
    }
    return n;
  }

  /** Encodes the payload (see {@code docs/format.md}, "Snapshot manifest"). */
  public byte[] encode() {
    PayloadWriter w = new PayloadWriter(4096);
    w.writeLong(version);
    w.writeLong(commitId);
    w.writeVarLong(files.size());
    for (Entry e : files) {
      w.writeString(e.localName());
      if (e.isShared()) {
        w.writeByte(SHARED).writeVarLong(e.length()).writeString(e.sharedName());
      } else {
        w.writeByte(INLINE).writeBytes(e.inlineContent());
      }
    }
    return w.toByteArray();
  }

  /** Decodes a verified payload; {@code location} names the file in errors. */
  public static SnapshotManifest decode(byte[] payload, String location) {
    PayloadReader r = new PayloadReader(payload, location);
    long version = r.readLong();
    long commitId = r.readLong();
    int count = r.readVarInt(r.remaining());
    List<Entry> files = new ArrayList<>(count);
    for (int i = 0; i < count; i++) {
      String localName = r.readString();
      if (localName.isEmpty() || localName.contains("/") || localName.contains("..")) {
        throw r.corrupt("invalid local file name '" + localName + "'");
      }
      int type = r.readByte();
      if (type == SHARED) {
        long length = r.readVarLong();
        files.add(Entry.shared(localName, length, r.readString()));
      } else if (type == INLINE) {
        files.add(Entry.inline(localName, r.readBytes()));
      } else {
        throw r.corrupt("unknown file entry type " + type);
      }
    }
    r.expectEnd();
    return new SnapshotManifest(version, commitId, files);
  }
}
