package io.streamstate.hadoop;

import static org.assertj.core.api.Assertions.assertThat;

import io.streamstate.core.hedge.HedgePolicy;
import io.streamstate.core.hedge.HedgedPublish;
import io.streamstate.core.hedge.HedgedWriter;
import io.streamstate.core.storage.AppendableFile;
import io.streamstate.core.storage.ContentWriter;
import io.streamstate.core.storage.PendingFile;
import java.net.URI;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link HadoopStorage} on a file system with DataNode pipelines ({@link PipelineFileSystem}, as
 * strict as {@link SupportsDataNodePipelines}): completed syncs make DataNodes known, a late
 * write's pipeline becomes suspect, and creates (files and appendable files) then favour known
 * DataNodes away from the suspects, so that a hedge does not stall on the DataNode its primary
 * stalls on.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class HadoopStorageSlowDataNodesTest {
  private static final long WINDOW = 60_000;
  private static final List<String> SLOW_PIPELINE = List.of("dn1:9866", "dn2:9866", "dn3:9866");
  private static final List<String> OTHERS = List.of("dn4:9866", "dn5:9866", "dn6:9866");

  @TempDir java.nio.file.Path tmp;
  private final ExecutorService pool = Executors.newCachedThreadPool();
  private final AtomicLong now = new AtomicLong(1_000_000);
  private final SlowDataNodes slow = new SlowDataNodes(WINDOW, now::get);
  private PipelineFileSystem fs;
  private HadoopStorage storage;

  @BeforeEach
  void open() throws Exception {
    fs = new PipelineFileSystem();
    fs.initialize(URI.create("pipefs:///"), new Configuration(false));
    storage = HadoopStorage.open(fs, new Path("pipefs://" + tmp), slow);
  }

  @AfterEach
  void stop() {
    fs.release();
    pool.shutdownNow();
  }

  private Path path(String name) {
    return new Path("pipefs://" + tmp + "/" + name);
  }

  /** Two files, one through each half of the DataNodes: every DataNode is then known. */
  private void warmUp() {
    fs.nextPipeline(SLOW_PIPELINE.toArray(new String[0]));
    storage.create("warm-1", ContentWriter.ofBytes(new byte[] {1}));
    fs.nextPipeline(OTHERS.toArray(new String[0]));
    storage.create("warm-2", ContentWriter.ofBytes(new byte[] {2}));
    assertThat(slow.known()).containsExactlyInAnyOrderElementsOf(PipelineFileSystem.NODES);
  }

  @Test
  void aHedgedCreateStalledOnASlowDataNodeIsHedgedOntoOtherDataNodes() {
    warmUp();
    assertThat(fs.favoredAsked(path("warm-2"))).as("nothing suspect: placed as usual").isNull();
    HedgedWriter hedger =
        new HedgedWriter(
            HedgePolicy.builder()
                .floor(Duration.ofMillis(200))
                .initialDeadline(Duration.ofMillis(200))
                .minSamples(256)
                .build(),
            pool);
    fs.slow("dn1:9866");
    fs.nextPipeline(SLOW_PIPELINE.toArray(new String[0])); // the primary's, as the NameNode chose

    HedgedPublish published = hedger.publish(storage, "commit", "commit-h", new byte[] {7, 7});

    assertThat(published.hedgeWon()).isTrue();
    assertThat(published.name()).isEqualTo("commit-h");
    assertThat(fs.held()).as("the primary still waits on the slow DataNode").isEqualTo(1);
    assertThat(slow.suspects()).containsExactlyInAnyOrderElementsOf(SLOW_PIPELINE);
    assertThat(fs.favoredAsked(path("commit-h"))).containsExactlyInAnyOrderElementsOf(OTHERS);
    assertThat(fs.placed(path("commit-h"))).containsExactlyInAnyOrderElementsOf(OTHERS);

    now.addAndGet(5_000); // a slow DataNode holds its pipelines for seconds
    fs.release(); // the primary completes, late, and is deleted as the loser
    Awaitility.await()
        .atMost(Duration.ofSeconds(20))
        .until(() -> hedger.policy().metrics().snapshot().losersCleaned() == 1);
    assertThat(slow.suspects()).as("only time lifts the suspicion of a stall").hasSize(3);
    now.addAndGet(WINDOW);
    storage.create("after", ContentWriter.ofBytes(new byte[] {3}));
    assertThat(fs.favoredAsked(path("after"))).isNull();
  }

  @Test
  void aCreateLateByNoiseIsHedgedAndItsReportWithdrawnWhenItCompletesSoonAfter() {
    warmUp();
    HedgedWriter hedger =
        new HedgedWriter(
            HedgePolicy.builder()
                .floor(Duration.ofMillis(200))
                .initialDeadline(Duration.ofMillis(200))
                .minSamples(256)
                .build(),
            pool);
    fs.slow("dn1:9866"); // held only until the hedge won: a busy executor, not a DataNode
    fs.nextPipeline(SLOW_PIPELINE.toArray(new String[0]));

    HedgedPublish published = hedger.publish(storage, "commit", "commit-h", new byte[] {7, 7});
    assertThat(published.hedgeWon()).isTrue();
    assertThat(slow.suspects()).containsExactlyInAnyOrderElementsOf(SLOW_PIPELINE);

    fs.release(); // completes at once (this test's clock has not moved): noise
    Awaitility.await()
        .atMost(Duration.ofSeconds(20))
        .until(() -> hedger.policy().metrics().snapshot().losersCleaned() == 1);
    assertThat(slow.suspects()).as("a report of noise is withdrawn").isEmpty();
    storage.create("after", ContentWriter.ofBytes(new byte[] {3}));
    assertThat(fs.favoredAsked(path("after"))).as("placed as usual again").isNull();
  }

  @Test
  void anAppendableFileThroughASuspectIsSuspectedAndNewOnesArePlacedAwayFromIt() throws Exception {
    warmUp();
    fs.nextPipeline("dn1:9866", "dn4:9866", "dn5:9866");
    AppendableFile journal = storage.createAppendable("journal-1");
    journal.append(new byte[] {1});
    fs.nextPipeline(SLOW_PIPELINE.toArray(new String[0]));
    AppendableFile late = storage.createAppendable("journal-2");
    late.append(new byte[] {1});
    assertThat(storage.isSuspectedSlow("journal-1")).isFalse();

    fs.slow("dn2:9866");
    CompletableFuture<Long> stuck = CompletableFuture.supplyAsync(() -> late.append(new byte[2]));
    Awaitility.await().atMost(Duration.ofSeconds(20)).until(() -> fs.held() == 1);
    storage.reportLateWrite("journal-2");

    assertThat(slow.suspects()).containsExactlyInAnyOrderElementsOf(SLOW_PIPELINE);
    assertThat(storage.isSuspectedSlow("journal-2")).isTrue();
    assertThat(storage.isSuspectedSlow("journal-1")).as("shares dn1 with it").isTrue();
    AppendableFile next = storage.createAppendable("journal-3");
    next.append(new byte[] {1});
    assertThat(fs.placed(path("journal-3"))).containsExactlyInAnyOrderElementsOf(OTHERS);
    assertThat(storage.isSuspectedSlow("journal-3")).isFalse();
    assertThat(storage.isSuspectedSlow("no-such-file")).isFalse();
    storage.reportLateWrite("no-such-file"); // ignored

    fs.release();
    assertThat(stuck.get(20, TimeUnit.SECONDS)).isEqualTo(1L);
    journal.close();
    late.close();
    next.close();
    assertThat(storage.isSuspectedSlow("journal-2")).as("closed: no longer written").isFalse();
  }

  @Test
  void aReportWhileTheWriterHoldsItsStreamInCloseReturnsAtOnceWithThePipelineOfItsLastSync()
      throws Exception {
    warmUp();
    fs.nextPipeline(SLOW_PIPELINE.toArray(new String[0]));
    fs.slowCloses("dn3:9866"); // the sync goes through, the last packet waits
    CompletableFuture<Void> create =
        CompletableFuture.runAsync(
            () -> storage.create("closing", ContentWriter.ofBytes(new byte[] {1})), pool);
    Awaitility.await().atMost(Duration.ofSeconds(20)).until(() -> fs.held() == 1);
    // close() holds the stream: pipelineOf would wait. The report must not.
    long start = System.nanoTime();
    storage.reportLateWrite("closing");
    assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(5));
    assertThat(slow.suspects()).containsExactlyInAnyOrderElementsOf(SLOW_PIPELINE);
    fs.release();
    create.get(20, TimeUnit.SECONDS);
  }

  @Test
  void aPendingFileIsWatchedForLateReportsUntilPublishedAndPlacedLikeAnyCreate() throws Exception {
    warmUp();
    fs.nextPipeline(SLOW_PIPELINE.toArray(new String[0]));
    PendingFile pending = storage.openNew("log/7", false);
    pending.stream().write(new byte[] {7});
    fs.slow("dn2:9866");
    CompletableFuture<Void> publish = CompletableFuture.runAsync(pending::publish, pool);
    Awaitility.await().atMost(Duration.ofSeconds(20)).until(() -> fs.held() == 1);
    // What the checkpoint file manager's hedged log write reports while the entry's sync waits.
    storage.reportLateWrite("log/7");
    assertThat(slow.suspects()).containsExactlyInAnyOrderElementsOf(SLOW_PIPELINE);

    // The next pending file (the hedge copy's create, say) is placed away from them.
    PendingFile next = storage.openNew("log/.7.hedge", false);
    next.stream().write(new byte[] {7});
    next.publish();
    assertThat(fs.placed(path("log/.7.hedge"))).containsExactlyInAnyOrderElementsOf(OTHERS);

    fs.release();
    publish.get(20, TimeUnit.SECONDS);
    assertThat(fs.open(path("log/7")).readAllBytes()).containsExactly(7);
  }

  @Test
  void aLateCreateBeforeItsFirstPacketHasNothingToReport() {
    warmUp();
    DataNodePlacement placement = DataNodePlacement.of(fs, slow);
    try (var out = fs.create(path("unsent"), false)) {
      placement.track(out).reportLate();
    } catch (java.io.IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
    assertThat(slow.suspects()).isEmpty();
  }

  @Test
  void withTrackingOffCreatesAreNeverSteered() {
    HadoopStorage untracked =
        HadoopStorage.open(fs, new Path("pipefs://" + tmp), new SlowDataNodes(0, now::get));
    fs.nextPipeline(SLOW_PIPELINE.toArray(new String[0]));
    untracked.create("one", ContentWriter.ofBytes(new byte[] {1}));
    untracked.reportLateWrite("one");
    slow.suspect(SLOW_PIPELINE); // another tracker's suspicion is not this storage's
    untracked.create("two", ContentWriter.ofBytes(new byte[] {1}));
    assertThat(fs.favoredAsked(path("two"))).isNull();
  }

  /**
   * A DataNode that pipeline recovery removed from an open journal's pipeline (it died) is no
   * longer known to work, and new files are placed away from it; nothing was late.
   */
  @Test
  void aDataNodeDroppedFromAnOpenFilesPipelineIsAvoidedByNewFiles() throws Exception {
    warmUp();
    fs.nextPipeline(SLOW_PIPELINE.toArray(new String[0]));
    AppendableFile journal = storage.createAppendable("journal-1");
    journal.append(new byte[] {1});
    assertThat(slow.suspects()).isEmpty();

    fs.fail("dn2:9866"); // killed while the journal is open: its pipeline recovers at once
    journal.append(new byte[] {2});

    assertThat(slow.known()).doesNotContain("dn2:9866");
    assertThat(slow.suspects()).containsExactly("dn2:9866");
    storage.create("after", ContentWriter.ofBytes(new byte[] {3}));
    assertThat(fs.favoredAsked(path("after")))
        .as("favoured DataNodes of a file created after the recovery")
        .hasSize(PipelineFileSystem.REPLICATION)
        .doesNotContain("dn2:9866");
    journal.close();
  }
}
