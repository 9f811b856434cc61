package io.streamstate.core.format;

import io.streamstate.core.error.CorruptFileException;
import java.util.Arrays;
import net.jpountz.lz4.LZ4Compressor;
import net.jpountz.lz4.LZ4Exception;
import net.jpountz.lz4.LZ4Factory;
import net.jpountz.lz4.LZ4SafeDecompressor;

/**
 * A changelog payload's changes as one LZ4 block ({@link Changelog.Codec#LZ4}), through lz4-java:
 * Spark's own, on every line's classpath. Only this class names lz4-java, so that a process without
 * it fails on the first lz4 payload it writes or reads, naming the codec, not on loading {@link
 * Changelog}.
 */
final class Lz4Block {
  /**
   * LZ4's densest output: a block cannot expand a byte of input into more than 255 bytes of output,
   * so a stored length beyond that from the block is a damaged or forged length, refused before any
   * allocation.
   */
  private static final long MAX_RATIO = 255;

  private Lz4Block() {}

  /** The codec's code and the encoded length in the first {@code headerBytes}, then the block. */
  static byte[] compress(byte[] encoded, int headerBytes) {
    LZ4Compressor compressor = factory().fastCompressor();
    byte[] out = new byte[headerBytes + compressor.maxCompressedLength(encoded.length)];
    Changelog.writeHeader(out, headerBytes, Changelog.Codec.LZ4, encoded.length);
    int size =
        compressor.compress(encoded, 0, encoded.length, out, headerBytes, out.length - headerBytes);
    return Arrays.copyOf(out, headerBytes + size);
  }

  /** The {@code length} bytes that the block at {@code payload[offset..]} decompresses to. */
  static byte[] decompress(byte[] payload, int offset, int length, String location) {
    int compressed = payload.length - offset;
    Changelog.refuseImpossibleLength(length, compressed, MAX_RATIO, "LZ4", location);
    byte[] out = new byte[length];
    int n;
    try {
      LZ4SafeDecompressor decompressor = factory().safeDecompressor();
      n = decompressor.decompress(payload, offset, compressed, out, 0, length);
    } catch (LZ4Exception e) {
      throw new CorruptFileException(
          location + " is corrupt: its LZ4 block does not decompress (" + e.getMessage() + ")", e);
    }
    if (n != length) {
      throw new CorruptFileException(
          location + " is corrupt: its LZ4 block decompresses to " + n + " bytes, not " + length);
    }
    return out;
  }

  private static LZ4Factory factory() {
    try {
      return LZ4Factory.fastestInstance();
    } catch (LinkageError e) {
      throw new IllegalStateException(
          "The changelog codec lz4 needs lz4-java (Spark ships it); without it, set"
              + " spark.sql.streaming.stateStore.streamstate.changelog.codec=deflate: "
              + e,
          e);
    }
  }
}
