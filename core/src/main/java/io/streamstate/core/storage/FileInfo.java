package io.streamstate.core.storage;

import java.util.Objects;

/**
 * What {@link Storage#list} returns about one file.
 *
 * @param name the name relative to the storage root
 * @param length size in bytes
 * @param lastModifiedMillis modification time in epoch milliseconds, as the store reports it: on
 *     some stores truncated to whole seconds (S3's {@code Last-Modified}), so the file may be up to
 *     {@link #TIMESTAMP_GRANULARITY_MILLIS} - 1 ms younger than this says
 */
public record FileInfo(String name, long length, long lastModifiedMillis) {
  /** The coarsest modification-time granularity of a supported store (S3: whole seconds). */
  public static final long TIMESTAMP_GRANULARITY_MILLIS = 1000;

  public FileInfo {
    Objects.requireNonNull(name, "name");
  }

  /**
   * Whether a file whose store reports {@code lastModifiedMillis} is surely at least {@code
   * minAgeMillis} old at {@code nowMillis}: the one age check before deleting what may be another
   * writer's file in flight. It counts from the latest instant the reported time can stand for, so
   * that a time truncated to the second never makes a file look older than it is. A minimum age of
   * 0 or less is no minimum.
   */
  public static boolean isSurelyOlderThan(
      long lastModifiedMillis, long nowMillis, long minAgeMillis) {
    return minAgeMillis <= 0
        || nowMillis - (lastModifiedMillis + TIMESTAMP_GRANULARITY_MILLIS - 1) >= minAgeMillis;
  }

  /** {@link #isSurelyOlderThan(long, long, long)} of this file. */
  public boolean isSurelyOlderThan(long nowMillis, long minAgeMillis) {
    return isSurelyOlderThan(lastModifiedMillis, nowMillis, minAgeMillis);
  }
}
