package io.streamstate.core.engine.commit;

/**
 * What publishing one commit wrote, as its store's metrics count it ({@code
 * StoreMetrics.countPublished}, the one place they are counted).
 *
 * @param commitBytes the commit's size as its store reports it: the framed changelog, or the
 *     segment member's payload
 * @param files the files created, a hedge's copy included (won, deleted or left); 0 when nothing
 *     was written yet (queued for an async upload) or another member's thread wrote the segment
 * @param bytes the bytes written: a hedge's copy included; a segment member's payload once
 * @param hedgeFired whether a hedge started (for a segment: only counted for the member whose
 *     thread wrote it)
 * @param hedgeWon whether the hedge's copy won
 * @param segmentMember whether the commit went into a group commit's segment
 * @param segmentWritten whether this commit's thread wrote that segment
 * @apiNote Internal: public for the engine's packages only.
 */
public record PublishedCommit(
    long commitBytes,
    int files,
    long bytes,
    boolean hedgeFired,
    boolean hedgeWon,
    boolean segmentMember,
    boolean segmentWritten) {

  /** A changelog file (and, if a hedge fired, its copy) of {@code framedLength} bytes. */
  static PublishedCommit changelog(long framedLength, boolean hedgeFired, boolean hedgeWon) {
    int files = hedgeFired ? 2 : 1;
    return new PublishedCommit(
        framedLength, files, files * framedLength, hedgeFired, hedgeWon, false, false);
  }

  /**
   * A member of a segment another thread writes (or wrote): its payload counts, the segment's files
   * count for that thread's commit.
   */
  static PublishedCommit segmentMember(long payloadBytes) {
    return new PublishedCommit(payloadBytes, 0, payloadBytes, false, false, true, false);
  }

  /** A commit queued for an async upload: nothing written yet. */
  static PublishedCommit queued(long framedLength) {
    return new PublishedCommit(framedLength, 0, 0, false, false, false, false);
  }
}
