package io.streamstate.core.storage;

import io.streamstate.core.error.OutcomeUnknownException;
import java.io.IOException;

/**
 * An {@link AppendableFile} whose appends each write to one open stream and sync it: what the local
 * and Hadoop storages share. Subclasses say how to write and sync, and how to close.
 */
public abstract class StreamAppendableFile implements AppendableFile {
  private final String name;
  private final String location;
  private volatile long length; // written under the monitor, read without it
  private volatile boolean open = true;

  /**
   * @param name the file's name in its storage
   * @param location how errors name the file
   */
  protected StreamAppendableFile(String name, String location) {
    this.name = name;
    this.location = location;
  }

  /** Writes {@code bytes} at the end of the file and makes them durable. */
  protected abstract void writeAndSync(byte[] bytes) throws IOException;

  /** Closes the stream (every completed append is already durable). */
  protected abstract void closeStream() throws IOException;

  @Override
  public final String name() {
    return name;
  }

  @Override
  public final synchronized long append(byte[] bytes) {
    if (!open) {
      throw new IllegalStateException(location + " is closed for appends");
    }
    long offset = length;
    try {
      writeAndSync(bytes);
    } catch (IOException | RuntimeException e) {
      close();
      throw new OutcomeUnknownException(
          "Cannot append "
              + bytes.length
              + " bytes to "
              + location
              + " at offset "
              + offset
              + ": "
              + e
              + "; a prefix of them may be in the file",
          e);
    }
    length += bytes.length;
    return offset;
  }

  /** Never waits for an append in progress (it holds the monitor while it syncs). */
  @Override
  public final long length() {
    return length;
  }

  @Override
  public final boolean isOpen() {
    return open;
  }

  /** Not synchronized: closing ends an append stalled in the kernel or the pipeline (it fails). */
  @Override
  public final void close() {
    if (!open) {
      return;
    }
    open = false;
    try {
      closeStream();
    } catch (IOException | RuntimeException e) {
      // every completed append was synced: nothing is lost by a failed close
    }
  }
}
