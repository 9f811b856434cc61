package io.streamstate.core.engine.commit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.streamstate.core.ProcessResources;
import io.streamstate.core.engine.StoreLayout;
import io.streamstate.core.error.RetryableException;
import io.streamstate.core.format.FileKind;
import io.streamstate.core.format.FramedFile;
import io.streamstate.core.storage.LocalStorage;
import io.streamstate.core.storage.Storage;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The commit publishers on a local storage: what each writes, and what it reports it wrote. */
class CommitPublishersTest {
  private final ProcessResources resources = new ProcessResources("test");

  @AfterEach
  void closeResources() {
    resources.close();
  }

  private static final StoreLayout LAYOUT = new StoreLayout("s/");

  @TempDir Path tmp;

  private static EncodedCommit commit(long version, long id) {
    return new EncodedCommit(
        version, id, id - 1, ("changes of " + version).getBytes(StandardCharsets.UTF_8));
  }

  @Test
  void aChangelogPublisherCreatesTheCommitsChangelogAndReportsOneFramedFile() {
    Storage storage = new LocalStorage(tmp);
    ChangelogPublisher publisher = new ChangelogPublisher("s", storage, LAYOUT, null);
    EncodedCommit commit = commit(3, 42);

    PublishedCommit published = publisher.publish(commit);

    assertThat(FramedFile.readPayload(storage, LAYOUT.changelog(3, 42), FileKind.CHANGELOG))
        .isEqualTo(commit.payload());
    long framed = FramedFile.framedLength(commit.payload().length);
    assertThat(published)
        .isEqualTo(new PublishedCommit(framed, 1, framed, false, false, false, false));
  }

  @Test
  void aChangelogPublisherRejectsATakenAttemptUniqueNameAsRetryable() {
    Storage storage = new LocalStorage(tmp);
    ChangelogPublisher publisher = new ChangelogPublisher("s", storage, LAYOUT, null);
    publisher.publish(commit(3, 42));

    assertThatThrownBy(() -> publisher.publish(commit(3, 42)))
        .isInstanceOf(RetryableException.class)
        .hasMessageContaining("Cannot commit version 3 of store s")
        .hasMessageContaining("is taken");
  }

  @Test
  void anAsyncPublisherQueuesTheCommitAndCountsTheUploadOnceItLands() {
    Storage storage = new LocalStorage(tmp);
    List<PublishedCommit> counted = new CopyOnWriteArrayList<>();
    AsyncChangelogPublisher publisher =
        new AsyncChangelogPublisher(
            resources,
            "s",
            storage,
            LAYOUT,
            4,
            new ChangelogPublisher("s", storage, LAYOUT, null),
            counted::add);
    EncodedCommit commit = commit(1, 7);

    PublishedCommit queued = publisher.publish(commit);
    publisher.close(); // waits for the pending upload

    long framed = FramedFile.framedLength(commit.payload().length);
    assertThat(queued).isEqualTo(new PublishedCommit(framed, 0, 0, false, false, false, false));
    assertThat(publisher.pending()).isZero();
    assertThat(FramedFile.readPayload(storage, LAYOUT.changelog(1, 7), FileKind.CHANGELOG))
        .isEqualTo(commit.payload());
    assertThat(counted)
        .containsExactly(new PublishedCommit(framed, 1, framed, false, false, false, false));
  }
}
