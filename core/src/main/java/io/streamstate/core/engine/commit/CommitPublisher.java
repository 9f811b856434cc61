package io.streamstate.core.engine.commit;

import io.streamstate.core.error.OutcomeUnknownException;
import io.streamstate.core.error.RetryableException;

/**
 * How a store makes its commits durable: step c2 of docs/protocol.md, "Commit" (and a1, g2). One
 * strategy per store, chosen when the store is built:
 *
 * <ul>
 *   <li>{@link ChangelogPublisher}: one changelog per commit, hedged (sync durability);
 *   <li>{@link GroupCommitPublisher}: a member of a group commit's segment, the commits one
 *       executor's stores make together published as one write (sync durability);
 *   <li>{@link AsyncChangelogPublisher}: queued, uploaded in the background (async durability).
 * </ul>
 *
 * Each returns what it wrote ({@link PublishedCommit}), which the store counts into its metrics in
 * one place. The store calls a publisher under its lock, one commit at a time.
 *
 * @apiNote Internal: public for the engine's packages only.
 */
public interface CommitPublisher {
  /**
   * Publishes {@code commit} under its attempt-unique name (I2): once this returns in sync
   * durability, the commit exists durably (I4), unless it was deferred in a group commit (then it
   * does once the thread's last commit of the version returns, or {@link #awaitDeferred}); in async
   * durability it is queued.
   *
   * @throws RetryableException nothing was published
   * @throws OutcomeUnknownException the commit may or may not exist
   */
  PublishedCommit publish(EncodedCommit commit);

  /**
   * A transaction that may commit {@code version} is open on the calling thread (a group commit
   * waits for it); a no-op if one is announced already.
   */
  default void announce(long version) {}

  /** The open transaction will not commit (now): nothing waits for it any more. */
  default void withdraw() {}

  /**
   * Makes durable the store's last commit if {@link #publish} returned before it was (a group
   * commit's deferred member, {@code GroupCommitter.defer}); a no-op otherwise. Called under the
   * store's lock before anything reads the local instance's newest version as durable.
   *
   * @throws RetryableException that commit failed and nothing was published
   * @throws OutcomeUnknownException that commit may or may not exist
   */
  default void awaitDeferred() {}

  /** Versions committed but not yet durable (0 in sync durability). */
  default int pending() {
    return 0;
  }

  /** The store closes: withdraws what is announced, lets pending uploads land for a while. */
  default void close() {}
}
