package io.streamstate.core.engine.local;

import java.util.Arrays;

/**
 * Builds a RocksDB write batch in its serialized form (RocksDB's {@code WriteBatch} "rep": a
 * sequence number and a count, then one record per put or delete), so that a commit's changes reach
 * RocksDB in one JNI call ({@code new WriteBatch(byte[])}) instead of one per key: a commit of 50k
 * changes made 100k JNI calls, each copying its arrays.
 *
 * <p>Records are written as RocksDB's own {@code WriteBatch.put/delete} write them ({@code
 * WriteBatchInternal::Put/Delete}): the default column family (id 0) as {@code kTypeValue} or
 * {@code kTypeDeletion}, any other as {@code kTypeColumnFamilyValue} or {@code
 * kTypeColumnFamilyDeletion} followed by its id; lengths as varint32. The result is byte for byte
 * the batch those calls build (a test compares them).
 */
final class WriteBatchRep {
  private static final byte TYPE_DELETION = 0x0;
  private static final byte TYPE_VALUE = 0x1;
  private static final byte TYPE_COLUMN_FAMILY_DELETION = 0x4;
  private static final byte TYPE_COLUMN_FAMILY_VALUE = 0x5;

  /** 8 bytes of sequence number (RocksDB sets it on write), 4 bytes of record count. */
  private static final int HEADER = 12;

  private byte[] buf;
  private int size = HEADER;
  private int count;

  /**
   * @param expectedBytes a guess of the batch's size, to avoid regrowing the buffer
   */
  WriteBatchRep(long expectedBytes) {
    buf = new byte[(int) Math.max(HEADER + 64, Math.min(expectedBytes, Integer.MAX_VALUE - 64))];
  }

  void put(int columnFamilyId, byte[] key, byte[] value) {
    ensure(1 + 5 + 5 + key.length + 5 + value.length);
    type(columnFamilyId, TYPE_VALUE, TYPE_COLUMN_FAMILY_VALUE);
    slice(key);
    slice(value);
    count++;
  }

  void delete(int columnFamilyId, byte[] key) {
    ensure(1 + 5 + 5 + key.length);
    type(columnFamilyId, TYPE_DELETION, TYPE_COLUMN_FAMILY_DELETION);
    slice(key);
    count++;
  }

  /** A record's type, and the column family's id unless it is the default one (id 0). */
  private void type(int columnFamilyId, byte inDefault, byte inFamily) {
    if (columnFamilyId == 0) {
      buf[size++] = inDefault;
    } else {
      buf[size++] = inFamily;
      varint(columnFamilyId);
    }
  }

  /** Bytes serialized so far. */
  long bytes() {
    return size;
  }

  int count() {
    return count;
  }

  /** The serialized batch: a copy of exactly its bytes, with the count in its header. */
  byte[] toBytes() {
    byte[] out = Arrays.copyOf(buf, size);
    // Little-endian fixed32 count after the fixed64 sequence number (left 0).
    out[8] = (byte) count;
    out[9] = (byte) (count >>> 8);
    out[10] = (byte) (count >>> 16);
    out[11] = (byte) (count >>> 24);
    return out;
  }

  private void slice(byte[] bytes) {
    varint(bytes.length);
    System.arraycopy(bytes, 0, buf, size, bytes.length);
    size += bytes.length;
  }

  private void varint(int v) {
    while ((v & ~0x7F) != 0) {
      buf[size++] = (byte) ((v & 0x7F) | 0x80);
      v >>>= 7;
    }
    buf[size++] = (byte) v;
  }

  private void ensure(long more) {
    long needed = size + more;
    if (needed > Integer.MAX_VALUE - 16) {
      throw new IllegalArgumentException("write batch over 2 GiB");
    }
    if (needed > buf.length) {
      buf =
          Arrays.copyOf(
              buf, (int) Math.min(Integer.MAX_VALUE - 16, Math.max(needed, 2L * buf.length)));
    }
  }
}
