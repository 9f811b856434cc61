package io.streamstate.core.engine.commit;

import io.streamstate.core.engine.segment.GroupCommitter;
import io.streamstate.core.format.Segment;
import io.streamstate.core.hedge.HedgedPublish;

/**
 * Publishes a store's commits as members of group commits' segments (docs/protocol.md, "Group
 * commit", g1 and g2): each transaction that may commit is announced to the {@link GroupCommitter}
 * the store shares with the other stores of its storage root, and its commit joins the segment of
 * its version, returning once that segment is durable; or, while the thread holds another
 * transaction of the version, returning at once and completing with the thread's last commit
 * ({@link GroupCommitter#defer}; {@link #awaitDeferred} makes it durable earlier). A commit whose
 * transaction was withdrawn (declared read-only, then committed anyway) is published alone, as a
 * changelog.
 *
 * @apiNote Internal: public for the engine's packages only.
 */
public final class GroupCommitPublisher implements CommitPublisher {
  private final GroupCommitter committer;
  private final String storePrefix;
  private final CommitPublisher alone;

  /** The open transaction's ticket, if it may commit; guarded by the store's lock. */
  private GroupCommitter.Ticket ticket;

  /** The last commit, if it returned before its segment was durable; guarded by the lock. */
  private GroupCommitter.Deferred deferred;

  /**
   * @param storePrefix the store's prefix, which names its members in segment indexes
   * @param alone publishes a commit that has no ticket
   */
  public GroupCommitPublisher(GroupCommitter committer, String storePrefix, CommitPublisher alone) {
    this.committer = committer;
    this.storePrefix = storePrefix;
    this.alone = alone;
  }

  @Override
  public void announce(long version) {
    if (ticket == null) {
      ticket = committer.expect(version);
    }
  }

  @Override
  public void withdraw() {
    if (ticket != null) {
      committer.withdraw(ticket);
      ticket = null;
    }
  }

  @Override
  public PublishedCommit publish(EncodedCommit commit) {
    if (ticket == null) {
      return alone.publish(commit);
    }
    GroupCommitter.Ticket t = ticket;
    ticket = null;
    Segment.Member member =
        new Segment.Member(storePrefix, commit.commitId(), commit.parentId(), commit.payload());
    long bytes = commit.payload().length;
    // The thread commits another store of this version next: this commit completes with that one.
    GroupCommitter.Deferred joined = committer.defer(t, member);
    if (joined != null) {
      deferred = joined;
      return PublishedCommit.segmentMember(bytes);
    }
    GroupCommitter.Result result = committer.commit(t, member);
    // The segment's files count once, for the member whose thread wrote them.
    if (!result.wroteIt()) {
      return PublishedCommit.segmentMember(bytes);
    }
    HedgedPublish published = result.published();
    boolean fired = published != null && published.hedgeFired();
    boolean won = fired && published.hedgeWon();
    return new PublishedCommit(bytes, fired ? 2 : 1, bytes, fired, won, true, true);
  }

  @Override
  public void awaitDeferred() {
    GroupCommitter.Deferred d = deferred;
    if (d != null) {
      deferred = null;
      committer.await(d);
    }
  }

  @Override
  public void close() {
    withdraw();
    deferred = null; // the store awaited it before closing
  }
}
