package io.streamstate.spark;

import io.streamstate.core.engine.StoreLayout;
import java.util.OptionalLong;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Spark's state store checkpoint ids (checkpoint format v2, recorded per partition in the commit
 * log) as our commit ids: the 16 hex digits that also name the commit's changelog. The id Spark
 * passes to {@code getStore} names the exact commit to load; the one our store reports after commit
 * names the commit it made.
 */
final class CheckpointIds {
  private static final int DIGITS = 16;

  /** Ids parsed in this JVM: tests check that runs under format v2 did load by id. */
  private static final AtomicLong PARSED = new AtomicLong();

  private CheckpointIds() {}

  /** The checkpoint id Spark records for commit {@code commitId}. */
  static String format(long commitId) {
    return StoreLayout.formatId(commitId);
  }

  /**
   * The commit that checkpoint id {@code id} names, or empty for no id (format v1, or the first
   * batch).
   *
   * @throws IllegalArgumentException {@code id} is not one of ours, naming it and the store
   */
  static OptionalLong parse(String id, String store, long version) {
    if (id == null) {
      return OptionalLong.empty();
    }
    if (id.length() != DIGITS || !id.chars().allMatch(CheckpointIds::isLowerHex)) {
      throw new IllegalArgumentException(
          "State store checkpoint id '"
              + id
              + "' for version "
              + version
              + " of state store "
              + store
              + " is not a streamstate commit id (16 lower-case hex digits): the commit log was"
              + " written with another state store provider, whose stores streamstate cannot"
              + " load");
    }
    PARSED.incrementAndGet();
    return OptionalLong.of(Long.parseUnsignedLong(id, 16));
  }

  static long parsedForTests() {
    return PARSED.get();
  }

  private static boolean isLowerHex(int c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
  }
}
