package io.streamstate.core.format;

import io.streamstate.core.error.CorruptFileException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.zip.DataFormatException;
import java.util.zip.Deflater;
import java.util.zip.Inflater;

/**
 * The changes that turn version {@code version - 1} of a store into {@code version}: column family
 * creations and drops (applied first, in order), then puts and deletes per column family.
 *
 * @param version the version this changelog produces
 * @param commitId the random id of this commit attempt (also in the file name)
 * @param parentId the commit id of the version {@code version - 1} these changes were made on (0
 *     for the empty state), so that a load follows one lineage and never mixes attempts
 */
public record Changelog(
    long version,
    long commitId,
    long parentId,
    List<FamilyOp> familyOps,
    List<FamilyChanges> changes) {

  /** Creating or dropping a column family. */
  public record FamilyOp(Kind kind, String family) {
    public enum Kind {
      CREATE(1),
      DROP(2);
      final int code;

      Kind(int code) {
        this.code = code;
      }
    }
  }

  /** The puts and deletes of one column family, in key order. */
  public record FamilyChanges(String family, List<Change> changes) {}

  /** A put ({@code value != null}) or a delete ({@code value == null}). */
  public record Change(byte[] key, byte[] value) {
    public Change {
      Objects.requireNonNull(key, "key");
    }

    public boolean isDelete() {
      return value == null;
    }
  }

  private static final int PUT = 1;
  private static final int DELETE = 2;

  /**
   * How the changes are stored in a format-version-2 payload (docs/format.md, "Changelog"): the
   * codec's code, then the encoded length, then the stored bytes.
   */
  public enum Codec {
    /** Stored as encoded. */
    NONE(0),
    /** zlib (RFC 1950) at level 1: about a ninth of Spark's row bytes for a small CPU cost. */
    DEFLATE(1),
    /**
     * One LZ4 block (lz4-java, which every Spark line ships): larger than deflate's output, at a
     * fraction of its CPU, writing and reading.
     */
    LZ4(2);

    final int code;

    Codec(int code) {
      this.code = code;
    }

    /**
     * The codec of a configuration value ({@code none}, {@code deflate}, {@code lz4}),
     * case-insensitive.
     */
    public static Codec fromName(String name) {
      for (Codec c : values()) {
        if (c.name().equalsIgnoreCase(name.trim())) {
          return c;
        }
      }
      throw new IllegalArgumentException(
          "Unknown changelog codec '" + name + "' (expected none, deflate or lz4)");
    }
  }

  /** The payload as this release writes it (format version 2): {@code codec} in front. */
  public byte[] encodeStored(Codec codec) {
    byte[] encoded = encode();
    int headerBytes = 1 + PayloadWriter.varLongSize(encoded.length);
    if (codec == Codec.NONE) {
      PayloadWriter w = new PayloadWriter(headerBytes + encoded.length);
      w.writeByte(codec.code).writeVarLong(encoded.length).writeRaw(encoded);
      return w.toByteArray();
    }
    return codec == Codec.LZ4
        ? Lz4Block.compress(encoded, headerBytes)
        : deflate(encoded, headerBytes);
  }

  /**
   * Decodes a verified payload of a file written in format version {@code formatVersion}: 1 holds
   * the encoded changes, 2 a codec in front of them.
   */
  public static Changelog decodeStored(byte[] payload, int formatVersion, String location) {
    return decode(encoded(payload, formatVersion, location, false), location);
  }

  /**
   * The encoded changes a verified stored payload holds (format version 1: the payload itself);
   * with {@code headOnly}, at least their header where the codec can stop early (a deflated payload
   * inflates its first bytes only; an LZ4 block, which cannot be read in part, decompresses whole).
   */
  private static byte[] encoded(
      byte[] payload, int formatVersion, String location, boolean headOnly) {
    if (formatVersion == 1) {
      return payload;
    }
    PayloadReader r = new PayloadReader(payload, location);
    int code = r.readByte();
    int length = r.readVarInt(Integer.MAX_VALUE - 64);
    int offset = payload.length - r.remaining();
    if (code == Codec.NONE.code) {
      if (headOnly) {
        return Arrays.copyOfRange(
            payload, offset, Math.min(payload.length, offset + ENCODED_HEADER_BYTES));
      }
      if (r.remaining() != length) {
        throw r.corrupt(
            "stored length " + r.remaining() + " differs from encoded length " + length);
      }
      return Arrays.copyOfRange(payload, offset, payload.length);
    }
    if (code == Codec.LZ4.code) {
      return Lz4Block.decompress(payload, offset, length, location);
    }
    if (code != Codec.DEFLATE.code) {
      throw r.corrupt("unknown changelog codec " + code);
    }
    return headOnly
        ? inflate(payload, offset, ENCODED_HEADER_BYTES, location, false)
        : inflate(payload, offset, length, location);
  }

  /**
   * A verified stored payload whose header (version, commit id, parent id) is read and whose
   * changes are decoded only when asked for: a load walks a lineage by its parents to find its
   * base, and decodes only the changelogs it replays (a snapshot of the version itself needs none).
   *
   * @param location names the file (and member) in errors
   */
  public record Stored(
      long version,
      long commitId,
      long parentId,
      byte[] payload,
      int formatVersion,
      String location) {
    /**
     * The changes, decoded now.
     *
     * @throws CorruptFileException the payload does not decode, or its changes name another commit
     *     than its header
     */
    public Changelog decode() {
      Changelog c = decodeStored(payload, formatVersion, location);
      if (c.version != version || c.commitId != commitId || c.parentId != parentId) {
        throw new CorruptFileException(
            location + " is corrupt: its changes name another version or commit than its header");
      }
      return c;
    }
  }

  /** The three longs in front of every encoded changelog: version, commit id, parent id. */
  private static final int ENCODED_HEADER_BYTES = 24;

  /**
   * Reads a verified payload's header, leaving its changes encoded (see {@link Stored}).
   *
   * @throws CorruptFileException the header does not decode
   */
  public static Stored readStored(byte[] payload, int formatVersion, String location) {
    PayloadReader h = new PayloadReader(encoded(payload, formatVersion, location, true), location);
    if (h.remaining() < ENCODED_HEADER_BYTES) {
      throw h.corrupt("its changes are shorter than their header");
    }
    return new Stored(h.readLong(), h.readLong(), h.readLong(), payload, formatVersion, location);
  }

  /** A compressed payload's first {@code headerBytes}: the codec's code and the encoded length. */
  static void writeHeader(byte[] out, int headerBytes, Codec codec, int encodedLength) {
    PayloadWriter header = new PayloadWriter(headerBytes);
    header.writeByte(codec.code).writeVarLong(encodedLength);
    System.arraycopy(header.toByteArray(), 0, out, 0, headerBytes);
  }

  /**
   * The stored payload of a deflated changelog: the codec and encoded length in its first {@code
   * headerBytes}, then the zlib stream; compressed straight into the array that is returned (a
   * commit's changelog is MBs: every copy shows on the commit path).
   */
  private static byte[] deflate(byte[] encoded, int headerBytes) {
    Deflater deflater = new Deflater(Deflater.BEST_SPEED);
    try {
      deflater.setInput(encoded);
      deflater.finish();
      byte[] out = new byte[headerBytes + Math.max(64, encoded.length / 4)];
      writeHeader(out, headerBytes, Codec.DEFLATE, encoded.length);
      int size = headerBytes;
      while (!deflater.finished()) {
        if (size == out.length) {
          out = Arrays.copyOf(out, out.length + Math.max(64, out.length >> 1));
        }
        size += deflater.deflate(out, size, out.length - size);
      }
      return size == out.length ? out : Arrays.copyOf(out, size);
    } finally {
      deflater.end();
    }
  }

  /**
   * Deflate's densest output: 1,032 bytes from one (zlib's own figure). A stored length beyond that
   * from the compressed bytes is a damaged or forged length, refused before any allocation.
   */
  private static final long MAX_DEFLATE_RATIO = 1032;

  /**
   * Refuses a stored length that {@code compressed} bytes of {@code codec} cannot produce (more
   * than {@code maxRatio} times them): a damaged or forged length, refused before any allocation.
   */
  static void refuseImpossibleLength(
      long length, int compressed, long maxRatio, String codec, String location) {
    if (length > maxRatio * compressed + 64) {
      throw new CorruptFileException(
          location
              + " is corrupt: its changes claim "
              + length
              + " bytes from "
              + compressed
              + " compressed bytes, more than "
              + codec
              + " can produce");
    }
  }

  private static byte[] inflate(byte[] payload, int offset, int length, String location) {
    refuseImpossibleLength(length, payload.length - offset, MAX_DEFLATE_RATIO, "deflate", location);
    return inflate(payload, offset, length, location, true);
  }

  /**
   * Inflates the zlib stream at {@code payload[offset..]} into at most {@code limit} bytes: exactly
   * that many and the whole stream if {@code whole}, else what comes first (a header).
   */
  private static byte[] inflate(
      byte[] payload, int offset, int limit, String location, boolean whole) {
    int compressed = payload.length - offset;
    Inflater inflater = new Inflater();
    try {
      inflater.setInput(payload, offset, compressed);
      // Grown as the bytes come: what is allocated is bounded by what inflates, not by the length.
      byte[] out = new byte[(int) Math.min(limit, 16L * compressed + 1024)];
      int n = 0;
      while (n < limit) {
        if (n == out.length) {
          out = Arrays.copyOf(out, (int) Math.min(limit, 2L * out.length));
        }
        int got = inflater.inflate(out, n, out.length - n);
        if (got == 0
            && (inflater.finished() || inflater.needsInput() || inflater.needsDictionary())) {
          break;
        }
        n += got;
      }
      if (whole && (n != limit || !inflater.finished() || inflater.getRemaining() != 0)) {
        throw new CorruptFileException(
            location
                + " is corrupt: its compressed changes inflate to "
                + (n < limit ? n + " bytes, not " : "more than ")
                + limit
                + " bytes");
      }
      return n == out.length ? out : Arrays.copyOf(out, n);
    } catch (DataFormatException e) {
      throw new CorruptFileException(
          location + " is corrupt: its compressed changes do not inflate (" + e.getMessage() + ")",
          e);
    } finally {
      inflater.end();
    }
  }

  /** Encodes the payload (see {@code docs/format.md}, "Changelog"). */
  public byte[] encode() {
    PayloadWriter w = new PayloadWriter(encodedSize());
    w.writeLong(version);
    w.writeLong(commitId);
    w.writeLong(parentId);
    w.writeVarLong(familyOps.size());
    for (FamilyOp op : familyOps) {
      w.writeByte(op.kind().code).writeString(op.family());
    }
    w.writeVarLong(changes.size());
    for (FamilyChanges fc : changes) {
      w.writeString(fc.family()).writeVarLong(fc.changes().size());
      for (Change c : fc.changes()) {
        if (c.isDelete()) {
          w.writeByte(DELETE).writeBytes(c.key());
        } else {
          w.writeByte(PUT).writeBytes(c.key()).writeBytes(c.value());
        }
      }
    }
    return w.toByteArray();
  }

  /** The exact length of {@link #encode}'s result: it is written into an array of that size. */
  private int encodedSize() {
    long n = 3 * 8 + PayloadWriter.varLongSize(familyOps.size());
    for (FamilyOp op : familyOps) {
      n += 1 + PayloadWriter.stringSize(op.family());
    }
    n += PayloadWriter.varLongSize(changes.size());
    for (FamilyChanges fc : changes) {
      n += PayloadWriter.stringSize(fc.family()) + PayloadWriter.varLongSize(fc.changes().size());
      for (Change c : fc.changes()) {
        n += 1 + PayloadWriter.bytesSize(c.key());
        if (!c.isDelete()) {
          n += PayloadWriter.bytesSize(c.value());
        }
      }
    }
    if (n > Integer.MAX_VALUE - 16) {
      throw new IllegalStateException(
          "changelog of version " + version + " is " + n + " bytes, over the 2 GiB limit");
    }
    return (int) n;
  }

  /** Decodes a verified payload; {@code location} names the file in errors. */
  public static Changelog decode(byte[] payload, String location) {
    PayloadReader r = new PayloadReader(payload, location);
    long version = r.readLong();
    long commitId = r.readLong();
    long parentId = r.readLong();
    int opCount = r.readVarInt(r.remaining());
    List<FamilyOp> ops = new ArrayList<>(opCount);
    for (int i = 0; i < opCount; i++) {
      int code = r.readByte();
      FamilyOp.Kind kind = code == 1 ? FamilyOp.Kind.CREATE : code == 2 ? FamilyOp.Kind.DROP : null;
      if (kind == null) {
        throw r.corrupt("unknown column family operation " + code);
      }
      ops.add(new FamilyOp(kind, r.readString()));
    }
    int familyCount = r.readVarInt(r.remaining());
    List<FamilyChanges> families = new ArrayList<>(familyCount);
    for (int i = 0; i < familyCount; i++) {
      String family = r.readString();
      int count = r.readVarInt(r.remaining());
      List<Change> list = new ArrayList<>(count);
      for (int j = 0; j < count; j++) {
        int type = r.readByte();
        if (type == PUT) {
          byte[] key = r.readBytes();
          list.add(new Change(key, r.readBytes()));
        } else if (type == DELETE) {
          list.add(new Change(r.readBytes(), null));
        } else {
          throw r.corrupt("unknown change type " + type);
        }
      }
      families.add(new FamilyChanges(family, list));
    }
    r.expectEnd();
    return new Changelog(version, commitId, parentId, ops, families);
  }

  /** Bytes of the keys and values of the puts and deletes. */
  public long changeBytes() {
    long n = 0;
    for (FamilyChanges fc : changes) {
      for (Change c : fc.changes()) {
        n += c.key().length + (c.isDelete() ? 0 : c.value().length);
      }
    }
    return n;
  }

  /** Number of puts and deletes. */
  public long changeCount() {
    long n = 0;
    for (FamilyChanges fc : changes) {
      n += fc.changes().size();
    }
    return n;
  }
}
