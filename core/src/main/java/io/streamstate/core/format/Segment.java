package io.streamstate.core.format;

import io.streamstate.core.error.CorruptFileException;
import io.streamstate.core.error.RetryableException;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.zip.CRC32C;

/**
 * The commits of several stores for one version, published together as one file by a group commit
 * (see {@code docs/format.md}, "Segment"). Each member is one store's changelog payload exactly as
 * a changelog file would hold it; the index in front says whose it is, so that tools and retention
 * read the index without the changes.
 *
 * <pre>
 * index length u32 | index | CRC32C(index) u32 | member payloads, in index order
 * index: version u64 | member count varint | per member: store prefix string, commit id u64,
 *        parent id u64, payload length varint
 * </pre>
 *
 * @param version the version every member commits
 */
public record Segment(long version, List<Member> members) {

  /** The largest index a reader accepts: a bigger length prefix is a corrupt file. */
  private static final int MAX_INDEX_BYTES = 64 << 20;

  /** One store's commit in a segment; {@code changelog} is a {@link Changelog} payload. */
  public record Member(String storePrefix, long commitId, long parentId, byte[] changelog) {}

  /** What the index says of one member. */
  public record IndexEntry(String storePrefix, long commitId, long parentId, int length) {}

  /** A segment's index alone. */
  public record Index(long version, List<IndexEntry> entries) {}

  public byte[] encode() {
    PayloadWriter index = new PayloadWriter(64 + members.size() * 48);
    index.writeLong(version).writeVarLong(members.size());
    long total = 0;
    for (Member m : members) {
      index
          .writeString(m.storePrefix())
          .writeLong(m.commitId())
          .writeLong(m.parentId())
          .writeVarLong(m.changelog().length);
      total += m.changelog().length;
    }
    byte[] indexBytes = index.toByteArray();
    CRC32C crc = new CRC32C();
    crc.update(indexBytes);
    long size = 8L + indexBytes.length + total;
    if (size > Integer.MAX_VALUE - 64) {
      throw new IllegalArgumentException("segment of " + size + " bytes is too large");
    }
    ByteBuffer out = ByteBuffer.allocate((int) size);
    out.putInt(indexBytes.length).put(indexBytes).putInt((int) crc.getValue());
    for (Member m : members) {
      out.put(m.changelog());
    }
    return out.array();
  }

  /** Decodes a verified payload; {@code location} names the file in errors. */
  public static Segment decode(byte[] payload, String location) {
    ByteBuffer in = ByteBuffer.wrap(payload);
    Index index = decodeIndex(in, payload.length, location);
    List<Member> members = new ArrayList<>(index.entries().size());
    for (IndexEntry e : index.entries()) {
      if (in.remaining() < e.length()) {
        throw new CorruptFileException(
            location + " is corrupt: member " + e.storePrefix() + " runs past the end of the file");
      }
      byte[] changelog = new byte[e.length()];
      in.get(changelog);
      members.add(new Member(e.storePrefix(), e.commitId(), e.parentId(), changelog));
    }
    if (in.hasRemaining()) {
      throw new CorruptFileException(
          location + " is corrupt: " + in.remaining() + " bytes after the last member");
    }
    return new Segment(index.version(), members);
  }

  /**
   * Reads the index from a stream positioned at the first payload byte (see {@link
   * FramedFile#openPayloadPrefix}); the index's own checksum is verified, the members are not read.
   */
  public static Index readIndex(InputStream payload, String location) {
    try {
      byte[] lengthBytes = payload.readNBytes(4);
      if (lengthBytes.length < 4) {
        throw new CorruptFileException(location + " is corrupt: the segment index is cut short");
      }
      int length = ByteBuffer.wrap(lengthBytes).getInt();
      if (length < 0 || length > MAX_INDEX_BYTES) {
        throw new CorruptFileException(
            location + " is corrupt: segment index length " + length + " is out of range");
      }
      byte[] rest = payload.readNBytes(length + 4);
      if (rest.length < length + 4) {
        throw new CorruptFileException(location + " is corrupt: the segment index is cut short");
      }
      ByteBuffer buf = ByteBuffer.allocate(4 + rest.length).put(lengthBytes).put(rest).flip();
      return decodeIndex(buf, Integer.MAX_VALUE, location);
    } catch (IOException e) {
      throw new RetryableException("Cannot read " + location + ": " + e, e);
    }
  }

  private static Index decodeIndex(ByteBuffer in, long payloadLength, String location) {
    if (in.remaining() < 4) {
      throw new CorruptFileException(location + " is corrupt: the segment index is cut short");
    }
    int length = in.getInt();
    if (length < 0 || length > MAX_INDEX_BYTES || in.remaining() < length + 4) {
      throw new CorruptFileException(
          location + " is corrupt: segment index length " + length + " is out of range");
    }
    byte[] indexBytes = new byte[length];
    in.get(indexBytes);
    int stored = in.getInt();
    CRC32C crc = new CRC32C();
    crc.update(indexBytes);
    if ((int) crc.getValue() != stored) {
      throw new CorruptFileException(
          location + " is corrupt: the segment index does not match its checksum");
    }
    PayloadReader r = new PayloadReader(indexBytes, location);
    long version = r.readLong();
    int count = r.readVarInt(r.remaining());
    List<IndexEntry> entries = new ArrayList<>(count);
    long total = 0;
    for (int i = 0; i < count; i++) {
      String prefix = r.readString();
      long commitId = r.readLong();
      long parentId = r.readLong();
      int memberLength = r.readVarInt(Integer.MAX_VALUE);
      total += memberLength;
      entries.add(new IndexEntry(prefix, commitId, parentId, memberLength));
    }
    r.expectEnd();
    if (total > payloadLength) {
      throw new CorruptFileException(
          location + " is corrupt: its index lists more bytes than the file holds");
    }
    return new Index(version, entries);
  }
}
