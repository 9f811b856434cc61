package io.streamstate.core.storage;

import java.io.IOException;
import java.io.OutputStream;

/**
 * Writes the content of a new file. Storage calls it once, with a stream to the file being created;
 * the file is published only if this returns normally, and abandoned if it throws.
 */
@FunctionalInterface
public interface ContentWriter {
  void writeTo(OutputStream out) throws IOException;

  /** A writer of a fixed byte array. */
  static ContentWriter ofBytes(byte[] bytes) {
    return out -> out.write(bytes);
  }
}
