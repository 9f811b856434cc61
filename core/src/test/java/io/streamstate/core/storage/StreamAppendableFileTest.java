package io.streamstate.core.storage;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The append-and-sync file that local disk and HDFS share: a sync stalled in a slow pipeline holds
 * the file, and nothing but the next append may wait for it.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class StreamAppendableFileTest {

  /** A file whose sync blocks until released, as an {@code hsync} behind a slow DataNode. */
  private static final class StallingFile extends StreamAppendableFile {
    final CountDownLatch syncing = new CountDownLatch(1);
    final CountDownLatch release = new CountDownLatch(1);

    StallingFile() {
      super("j", "test/j");
    }

    @Override
    protected void writeAndSync(byte[] bytes) throws IOException {
      syncing.countDown();
      try {
        release.await();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IOException("interrupted", e);
      }
    }

    @Override
    protected void closeStream() {}
  }

  @Test
  void lengthAnswersWhileAnAppendIsStalledAndCountsItOnceItCompletes() throws Exception {
    StallingFile file = new StallingFile();
    CompletableFuture<Long> append = CompletableFuture.supplyAsync(() -> file.append(new byte[5]));
    assertThat(file.syncing.await(30, TimeUnit.SECONDS)).isTrue();

    // The segment journal writer asks for the length under its own lock while the hedge of the
    // stalled append waits for that lock: length must not wait for the append.
    CompletableFuture<Long> length = CompletableFuture.supplyAsync(file::length);
    assertThat(length.get(30, TimeUnit.SECONDS)).isZero();
    assertThat(append).isNotDone();

    file.release.countDown();
    assertThat(append.get(30, TimeUnit.SECONDS)).isZero();
    assertThat(file.length()).isEqualTo(5);
  }
}
