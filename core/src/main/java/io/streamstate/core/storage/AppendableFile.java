package io.streamstate.core.storage;

import io.streamstate.core.error.OutcomeUnknownException;
import io.streamstate.core.error.RetryableException;

/**
 * One file being appended to by its only writer ({@link SupportsAppend#createAppendable}). Appends
 * are serialized by the caller; {@link #close()} may be called from any thread.
 */
public interface AppendableFile extends AutoCloseable {

  /** The file's name in its storage. */
  String name();

  /**
   * Appends {@code bytes} and makes them durable before returning.
   *
   * @return the offset in the file at which {@code bytes} begin
   * @throws OutcomeUnknownException the append failed and any prefix of {@code bytes} may be in the
   *     file; the file is closed for appends
   * @throws RetryableException the append failed before writing any byte; the file is closed for
   *     appends too
   * @throws IllegalStateException the file is closed, or an earlier append failed
   */
  long append(byte[] bytes);

  /**
   * The bytes appended so far (the file's length as this writer knows it). Never waits for an
   * append in progress: it may be called while one is stalled.
   */
  long length();

  /** Whether appends are still accepted: not closed, and no append failed. */
  boolean isOpen();

  /**
   * Ends the file; later appends are refused. Idempotent. A failure to close is logged, never
   * thrown: every completed append is already durable.
   */
  @Override
  void close();
}
