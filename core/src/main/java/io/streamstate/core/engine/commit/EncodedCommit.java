package io.streamstate.core.engine.commit;

import io.streamstate.core.format.FramedFile;

/**
 * One commit of one store, encoded (step c1): version {@code version} with attempt-unique id {@code
 * commitId}, built on commit {@code parentId} of the version before, and its changes as the
 * changelog payload stores them (compressed by the committing thread).
 *
 * @apiNote Internal: public for the engine's packages only.
 */
public record EncodedCommit(long version, long commitId, long parentId, byte[] payload) {
  /** The length of the changelog file that holds this commit: the payload in its frame. */
  public long framedLength() {
    return FramedFile.framedLength(payload.length);
  }
}
