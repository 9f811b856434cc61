package io.streamstate.hadoop;

import static org.assertj.core.api.Assertions.assertThat;

import io.streamstate.core.ProcessResources;
import io.streamstate.core.engine.segment.GroupCommitter;
import io.streamstate.core.engine.segment.SegmentJournalSettings;
import io.streamstate.core.format.Segment;
import io.streamstate.core.hedge.HedgePolicy;
import io.streamstate.core.hedge.HedgedPublish;
import io.streamstate.core.hedge.HedgedWriter;
import io.streamstate.core.storage.ContentWriter;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.hadoop.fs.BlockLocation;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * One slow DataNode out of six (replication 3) on a real MiniDFSCluster: every packet and ack of
 * every pipeline through it is held while it is slow ({@link SlowDataNodeInjector}), at any
 * position in the pipeline. A hedged write and a segment journal append stuck behind it are hedged
 * onto files whose blocks avoid it, and return while the stuck write is still held; the next
 * segment journal avoids it too.
 *
 * <p>Deterministic: the stuck write's pipeline is made to hold the slow DataNode by suspecting the
 * three others first (so its create favours the slow one and two more), and that suspicion is
 * lifted (a clock of the test's own) once the write is stuck, before its hedge deadline.
 */
@Timeout(value = 300, unit = TimeUnit.SECONDS)
class SlowDataNodeIT {
  private static final int DATANODES = 6;
  private static final long WINDOW = 60_000;
  private static final Duration DEADLINE = Duration.ofSeconds(5);

  @TempDir static java.nio.file.Path base;
  private static MiniDfsFixture dfs;
  private static SlowDataNodeInjector injector;
  private static String slowNode;

  private final ExecutorService pool = Executors.newCachedThreadPool();
  private final AtomicLong now = new AtomicLong(1_000_000);
  private final SlowDataNodes slow = new SlowDataNodes(WINDOW, now::get);
  private FileSystem fs;
  private Path root;
  private HadoopStorage storage;

  @BeforeAll
  static void startCluster() throws Exception {
    dfs = MiniDfsFixture.start(base.resolve("dfs"), DATANODES);
    injector = SlowDataNodeInjector.install(dfs.cluster());
    slowNode = injector.dataNodes().get(0);
  }

  @AfterAll
  static void stopCluster() {
    if (injector != null) {
      injector.close();
    }
    if (dfs != null) {
      dfs.close();
    }
  }

  @BeforeEach
  void open() {
    fs = dfs.fileSystem();
    root = dfs.path("/slow-" + System.nanoTime());
    storage = HadoopStorage.open(fs, root, slow);
  }

  @AfterEach
  void release() {
    injector.release();
    pool.shutdownNow();
  }

  /** Small files until every DataNode has been seen working. */
  private void learnEveryDataNode() {
    for (int i = 0; slow.known().size() < DATANODES; i++) {
      assertThat(i).as("DataNodes seen: %s", slow.known()).isLessThan(200);
      storage.create("warm/" + i, ContentWriter.ofBytes(new byte[] {(byte) i}));
    }
  }

  /**
   * Makes the next creates go through the slow DataNode and two others (the three remaining ones
   * suspect, so they are favoured); returns those remaining three.
   */
  private List<String> steerOntoTheSlowDataNode() {
    List<String> others = new ArrayList<>(slow.known());
    others.remove(slowNode);
    List<String> rest = List.copyOf(others.subList(2, 5));
    slow.suspect(rest);
    return rest;
  }

  /** Lifts every suspicion: the test's clock passes the window. */
  private void forgetSuspicions() {
    now.addAndGet(WINDOW + 1);
    assertThat(slow.suspects()).isEmpty();
  }

  private List<String> blockLocations(String name) throws IOException {
    Path path = new Path(root, name);
    FileStatus status = fs.getFileStatus(path);
    List<String> names = new ArrayList<>();
    for (BlockLocation b : fs.getFileBlockLocations(path, 0, Math.max(1, status.getLen()))) {
      names.addAll(Arrays.asList(b.getNames()));
    }
    return names;
  }

  private HedgedWriter hedger() {
    return new HedgedWriter(
        HedgePolicy.builder()
            .floor(DEADLINE)
            .initialDeadline(DEADLINE)
            .minSamples(1 << 10)
            .window(1 << 10)
            .build(),
        pool);
  }

  @Test
  void aWriteStuckOnTheSlowDataNodeIsHedgedOntoAPipelineWithoutIt() throws Exception {
    learnEveryDataNode();
    List<String> rest = steerOntoTheSlowDataNode();
    HedgedWriter hedger = hedger();
    injector.slow(slowNode);

    CompletableFuture<HedgedPublish> publish =
        CompletableFuture.supplyAsync(
            () -> hedger.publish(storage, "commit", "commit-h", new byte[4096]), pool);
    Awaitility.await().atMost(Duration.ofSeconds(60)).until(() -> injector.held() > 0);
    forgetSuspicions(); // before the hedge deadline: only the stuck write's report counts now
    HedgedPublish published = publish.get(60, TimeUnit.SECONDS);

    assertThat(published.hedgeFired()).isTrue();
    assertThat(published.hedgeWon()).isTrue();
    assertThat(injector.held()).as("the primary is still held").isPositive();
    assertThat(slow.suspects()).contains(slowNode).doesNotContainAnyElementsOf(rest);
    assertThat(blockLocations("commit-h"))
        .hasSize(3)
        .doesNotContain(slowNode)
        .containsExactlyInAnyOrderElementsOf(rest);

    injector.release(); // the primary completes late, loses, and is deleted
    Awaitility.await()
        .atMost(Duration.ofSeconds(60))
        .until(() -> hedger.policy().metrics().snapshot().losersCleaned() == 1);
    assertThat(fs.exists(new Path(root, "commit"))).isFalse();
  }

  @Test
  void aJournalAppendStuckOnTheSlowDataNodeIsHedgedAndTheNextJournalAvoidsIt() throws Exception {
    learnEveryDataNode();
    List<String> rest = steerOntoTheSlowDataNode();
    GroupCommitter committer =
        new GroupCommitter(
            ProcessResources.shared(), storage, hedger(), 0, 0, SegmentJournalSettings.defaults());
    assertThat(committer.appendsToJournal()).isTrue();
    GroupCommitter.Result first = commit(committer, 1);
    String firstJournal = journalOf(first.segment());
    Awaitility.await().atMost(Duration.ofSeconds(60)).until(() -> journals().size() == 2);
    for (String journal : journals()) {
      assertThat(blockLocations(journal)).as(journal).contains(slowNode);
    }

    injector.slow(slowNode);
    CompletableFuture<GroupCommitter.Result> stuck =
        CompletableFuture.supplyAsync(() -> commit(committer, 2), pool);
    Awaitility.await().atMost(Duration.ofSeconds(60)).until(() -> injector.held() > 0);
    forgetSuspicions();
    GroupCommitter.Result second = stuck.get(60, TimeUnit.SECONDS);

    assertThat(second.published().hedgeWon()).isTrue();
    assertThat(second.segment()).endsWith("-h.segment");
    assertThat(injector.held()).as("the append is still held").isPositive();
    assertThat(blockLocations(second.segment())).doesNotContain(slowNode);

    GroupCommitter.Result third = commit(committer, 3);
    String thirdJournal = journalOf(third.segment());
    assertThat(thirdJournal).isNotEqualTo(firstJournal);
    assertThat(blockLocations(thirdJournal))
        .hasSize(3)
        .doesNotContain(slowNode)
        .containsExactlyInAnyOrderElementsOf(rest);
    assertThat(injector.held()).isPositive();
    injector.release();
  }

  private static GroupCommitter.Result commit(GroupCommitter committer, long version) {
    GroupCommitter.Ticket ticket = committer.expect(version);
    return committer.commit(
        ticket, new Segment.Member("0/0/", version, version - 1, new byte[] {(byte) version}));
  }

  private List<String> journals() {
    return storage.list("_segments/").stream()
        .map(f -> f.name())
        .filter(n -> n.endsWith(".journal"))
        .toList();
  }

  private static String journalOf(String record) {
    assertThat(record).contains(".journal@");
    return record.substring(0, record.indexOf(".journal@") + ".journal".length());
  }
}
