package io.streamstate.core.engine;

import java.security.SecureRandom;

/**
 * Commit ids: random, non-zero 64-bit numbers naming one commit attempt of one version. Zero is the
 * empty state's id. Random rather than counted, so that writers in different processes (task
 * retries, speculative attempts, zombies, a re-run after a driver restart) never pick the same one
 * without talking to each other. Also the attempt ids of segments, journals and hedged SST copies.
 *
 * @apiNote Internal: public for the engine's packages only.
 */
public final class CommitIds {
  private static final SecureRandom RANDOM = new SecureRandom();

  private CommitIds() {}

  public static long next() {
    long id;
    do {
      id = RANDOM.nextLong();
    } while (id == 0);
    return id;
  }
}
