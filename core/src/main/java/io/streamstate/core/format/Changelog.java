package io.streamstate.core.format;

import java.util.List;
import java.util.Objects;

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

  /** Encodes the payload (see {@code docs/format.md}, "Changelog"). */
  public byte[] encode() {
    PayloadWriter w = new PayloadWriter(1024);
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

  /** Decodes a verified payload; {@code location} names the file in errors. */
  public static Changelog decode(byte[] payload, String location) {
    PayloadReader r = new PayloadReader(payload, location);
    long version = r.readLong();
    long commitId = r.readLong();
    long parentId = r.readLong();
    int opCount = r.readVarInt(r.remaining());
    List<FamilyOp> ops = new java.util.ArrayList<>(opCount);
    for (int i = 0; i < opCount; i++) {
      int code = r.readByte();
      FamilyOp.Kind kind = code == 1 ? FamilyOp.Kind.CREATE : code == 2 ? FamilyOp.Kind.DROP : null;
      if (kind == null) {
        throw r.corrupt("unknown column family operation " + code);
      }
      ops.add(new FamilyOp(kind, r.readString()));
    }
    int familyCount = r.readVarInt(r.remaining());
    List<FamilyChanges> families = new java.util.ArrayList<>(familyCount);
    for (int i = 0; i < familyCount; i++) {
      String family = r.readString();
      int count = r.readVarInt(r.remaining());
      List<Change> list = new java.util.ArrayList<>(count);
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

  /** Number of puts and deletes. */
  public long changeCount() {
    long n = 0;
    for (FamilyChanges fc : changes) {
      n += fc.changes().size();
    }
    return n;
  }
}
