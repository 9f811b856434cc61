package io.streamstate.dstream.jdbc;

/**
 * A batch's offsets neither continue nor repeat the stored ones: the stored {@code until_offset} of
 * a partition is neither the batch's {@code fromOffset} (a new batch) nor its {@code untilOffset}
 * (a replay). Nothing was written. Retrying does not help: the stream was started from other
 * offsets than the stored ones (start it with {@link DirectStreamOffsets#storedOffsets}), another
 * application writes under the same name, or this driver is a zombie that an other driver has
 * overtaken (stop it).
 */
public class OffsetMismatchException extends ExactlyOnceOutputException {
  private static final long serialVersionUID = 1L;

  /** An error whose message names, per partition, the stored and the batch's offsets. */
  public OffsetMismatchException(String message) {
    super(message);
  }
}
