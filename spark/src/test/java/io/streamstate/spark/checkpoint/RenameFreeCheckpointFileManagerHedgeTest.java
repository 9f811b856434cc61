package io.streamstate.spark.checkpoint;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.streamstate.core.ProcessResources;
import io.streamstate.core.format.HedgeCopyFile;
import io.streamstate.core.hedge.HedgeMetrics;
import io.streamstate.hadoop.ExclusiveCreateLocalFileSystem;
import io.streamstate.spark.StreamStateConf;
import io.streamstate.spark.shared.checkpoint.HedgedLogWrites;
import java.io.FilterOutputStream;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.Arrays;
import java.util.concurrent.CountDownLatch;
import java.util.function.BooleanSupplier;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileAlreadyExistsException;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.permission.FsPermission;
import org.apache.hadoop.util.Progressable;
import org.apache.spark.sql.execution.streaming.checkpointing.CheckpointFileManager.CancellableFSDataOutputStream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;
import org.junit.jupiter.api.io.TempDir;

/**
 * Hedged writes of Spark's log entries by {@link RenameFreeCheckpointFileManager} on a store that
 * takes a name at create (as HDFS): {@code stallfs:}, the local disk through {@link
 * ExclusiveCreateLocalFileSystem}, whose data writes to a chosen file stall until the test releases
 * them (as a slow datanode's), then complete or fail. Nothing asserts on time: a stalled write is
 * held by a latch, so "close returned while the entry's write was stalled" is a fact, not a timing.
 */
class RenameFreeCheckpointFileManagerHedgeTest {
  @TempDir static java.nio.file.Path work;

  private java.nio.file.Path dir;
  private Path root;
  private RenameFreeCheckpointFileManager fm;

  @BeforeEach
  void setUp(TestInfo info) {
    dir = work.resolve(info.getTestMethod().orElseThrow().getName());
    root = new Path(StallingFileSystem.SCHEME + "://" + dir.toAbsolutePath());
    StallingFileSystem.reset();
    fm = new RenameFreeCheckpointFileManager(root, conf());
    fm.createCheckpointDirectory();
  }

  @AfterEach
  void tearDown() {
    StallingFileSystem.releaseAll();
  }

  /** Hedge deadline 30 ms, no budget limit, so that a stalled entry write is always hedged. */
  static Configuration conf() {
    Configuration conf = new Configuration();
    conf.set("fs." + StallingFileSystem.SCHEME + ".impl", StallingFileSystem.class.getName());
    conf.setBoolean("fs." + StallingFileSystem.SCHEME + ".impl.disable.cache", true);
    conf.set(StreamStateConf.HEDGE_FLOOR_MS, "1");
    conf.set(StreamStateConf.HEDGE_INITIAL_DEADLINE_MS, "30");
    conf.set(StreamStateConf.HEDGE_BUDGET_FRACTION, "1");
    return conf;
  }

  private static byte[] entry(long batch) {
    return ("v1\n{\"nextBatchWatermarkMs\":0}\n{\"batch\":" + batch + "}")
        .getBytes(StandardCharsets.UTF_8);
  }

  private void write(RenameFreeCheckpointFileManager m, Path path, byte[] bytes)
      throws IOException {
    CancellableFSDataOutputStream out = m.createAtomic(path, false);
    out.write(bytes);
    out.close();
  }

  private byte[] read(Path path) throws IOException {
    try (FSDataInputStream in = fm.open(path)) {
      return in.readAllBytes();
    }
  }

  private java.nio.file.Path local(String name) {
    return dir.resolve(name);
  }

  private static void await(String what, BooleanSupplier condition) throws InterruptedException {
    for (int i = 0; i < 6000 && !condition.getAsBoolean(); i++) {
      Thread.sleep(10);
    }
    assertThat(condition.getAsBoolean()).as(what).isTrue();
  }

  @Test
  void aStalledEntryWriteIsHedgedAndReadsBackCompleteThenTheCopyGoes() throws Exception {
    Path commit = new Path(root, "commits/0");
    byte[] bytes = entry(0);
    HedgeMetrics.Snapshot before = HedgedLogWrites.metrics(ProcessResources.shared(), conf());
    StallingFileSystem.stall("0");

    write(fm, commit, bytes); // returns although the write of commits/0 is held by the latch

    assertThat(StallingFileSystem.stalledWrites()).isEqualTo(1);
    assertThat(Files.size(local("commits/0"))).as("the entry itself, still stalled").isZero();
    assertThat(local("commits/.0.hedge")).exists();
    HedgeMetrics.Snapshot delta =
        HedgedLogWrites.metrics(ProcessResources.shared(), conf()).since(before);
    assertThat(delta.hedgesFired()).isEqualTo(1);
    assertThat(delta.hedgesWon()).isEqualTo(1);

    // Readers get the whole entry; listings and exists() see only the entry.
    assertThat(read(commit)).isEqualTo(bytes);
    assertThat(fm.exists(commit)).isTrue();
    assertThat(Arrays.stream(fm.list(new Path(root, "commits"))).map(s -> s.getPath().getName()))
        .containsExactly("0");

    // A second writer of batch 0 still loses, at createAtomic, as without hedging.
    RenameFreeCheckpointFileManager other = new RenameFreeCheckpointFileManager(root, conf());
    assertThatThrownBy(() -> other.createAtomic(commit, false))
        .isInstanceOf(FileAlreadyExistsException.class);

    // The stalled write completes: the entry is whole at its name and the copy is deleted.
    StallingFileSystem.release(null);
    await("hedge copy deleted", () -> !Files.exists(local("commits/.0.hedge")));
    assertThat(Files.readAllBytes(local("commits/0"))).isEqualTo(bytes);
    assertThat(read(commit)).isEqualTo(bytes);
    assertThat(
            HedgedLogWrites.metrics(ProcessResources.shared(), conf())
                .since(before)
                .losersCleaned())
        .isEqualTo(1);
  }

  @Test
  void anEntryWhoseWriteFailsAfterItsHedgeWonIsReadFromTheCopyAndDeletedWithIt() throws Exception {
    Path offsets = new Path(root, "offsets/7");
    byte[] bytes = entry(7);
    long tornBefore = HedgedLogWrites.primaryFailuresAfterHedge(ProcessResources.shared());
    StallingFileSystem.stall("7");
    write(fm, offsets, bytes);

    StallingFileSystem.release(new IOException("injected: datanode pipeline failed"));
    await(
        "the entry's write failed after the hedge won",
        () -> HedgedLogWrites.primaryFailuresAfterHedge(ProcessResources.shared()) > tornBefore);

    // The name stays taken (never deleted once a hedge won), the batch reads from the copy.
    assertThat(local("offsets/7")).exists();
    assertThat(local("offsets/.7.hedge")).exists();
    assertThat(read(offsets)).isEqualTo(bytes);
    assertThatThrownBy(
            () -> new RenameFreeCheckpointFileManager(root, conf()).createAtomic(offsets, false))
        .isInstanceOf(FileAlreadyExistsException.class);

    // Spark's purge deletes the entry through the manager: both files go.
    fm.delete(offsets);
    assertThat(local("offsets/7")).doesNotExist();
    assertThat(local("offsets/.7.hedge")).doesNotExist();
    assertThat(fm.exists(offsets)).isFalse();
  }

  /**
   * A query stopped while its offset entry's hedged write is stalled, the entry's and its copy's
   * alike: Spark's stop interrupts the write, whose creates go on in the background, and the entry
   * stays empty (what the YARN demo's restart found). The restarted query's manager, in the same
   * JVM, fences both files and sets the entry aside; the late writes then fail, and the entry Spark
   * writes again is the one read.
   */
  @Test
  void anEntryAStoppedQueryLeftInFlightIsFencedAndSetAsideByTheNextManager() throws Exception {
    Path offsets = new Path(root, "offsets");
    Path entry = new Path(offsets, "3");
    write(fm, new Path(offsets, "2"), entry(2));
    StallingFileSystem.stall("3", ".3.hedge");
    java.util.concurrent.atomic.AtomicReference<Throwable> failure =
        new java.util.concurrent.atomic.AtomicReference<>();
    Thread queryThread =
        new Thread(
            () -> {
              try {
                write(fm, entry, entry(3));
              } catch (Throwable t) {
                failure.set(t);
              }
            });
    queryThread.start();
    await("the entry and its copy stalled", () -> StallingFileSystem.stalledWrites() == 2);
    queryThread.interrupt(); // StreamingQuery.stop()
    queryThread.join(60_000);
    assertThat(failure.get()).isInstanceOf(InterruptedIOException.class);
    assertThat(Files.size(local("offsets/3"))).as("the entry a stopped query left").isZero();

    RenameFreeCheckpointFileManager restarted = new RenameFreeCheckpointFileManager(root, conf());
    assertThat(restarted.list(offsets, p -> p.getName().matches("\\d+")))
        .extracting(f -> f.getPath().getName())
        .containsExactly("2");
    assertThat(local("offsets/.3.hedge")).doesNotExist();
    StallingFileSystem.release(null); // the late writes go on, into fenced streams
    byte[] again = entry(33);
    write(restarted, entry, again); // Spark plans batch 3 again
    assertThat(read(entry)).isEqualTo(again);
    assertThat(Files.readAllBytes(local("offsets/3"))).isEqualTo(again);
    try (var aside = Files.list(local("offsets"))) {
      assertThat(aside.map(p -> p.getFileName().toString()))
          .anyMatch(n -> n.startsWith(".3.torn-"));
    }
  }

  @Test
  void aTornHedgeCopyIsIgnored() throws Exception {
    Files.createDirectories(local("commits"));
    byte[] bytes = entry(3);
    byte[] framed = HedgeCopyFile.encode(bytes);

    // A complete entry next to a torn copy: the entry.
    Files.write(local("commits/3"), bytes);
    Files.write(local("commits/.3.hedge"), Arrays.copyOf(framed, framed.length - 1));
    assertThat(read(new Path(root, "commits/3"))).isEqualTo(bytes);

    // A torn entry next to a torn copy: refused, naming the entry, as without hedging.
    Files.write(local("commits/4"), Arrays.copyOf(bytes, 10));
    Files.write(local("commits/.4.hedge"), Arrays.copyOf(framed, bytes.length));
    assertThatThrownBy(() -> fm.open(new Path(root, "commits/4")))
        .isInstanceOf(UncheckedIOException.class)
        .hasMessageContaining("commits/4")
        .hasMessageContaining("incomplete");

    // The same torn entry next to a complete copy: the copy.
    Files.write(local("commits/.4.hedge"), HedgeCopyFile.encode(entry(4)));
    assertThat(read(new Path(root, "commits/4"))).isEqualTo(entry(4));

    // A complete copy of another, shorter content than the entry's: not this entry's copy.
    Files.write(local("commits/5"), entry(55555));
    Files.write(local("commits/.5.hedge"), HedgeCopyFile.encode(entry(5)));
    assertThat(read(new Path(root, "commits/5"))).isEqualTo(entry(55555));
  }

  @Test
  void unstalledEntriesLargeEntriesAndOtherFilesLeaveNoCopy() throws Exception {
    // Not stalled: whichever copy wins, no copy stays and the entry is whole.
    write(fm, new Path(root, "offsets/0"), entry(0));
    // Over the buffer limit: written directly, never through the hedged writer.
    HedgeMetrics.Snapshot before = HedgedLogWrites.metrics(ProcessResources.shared(), conf());
    byte[] large = new byte[HedgedLogWrites.MAX_HEDGED_BYTES + 10];
    Arrays.fill(large, (byte) 'x');
    System.arraycopy(entry(1), 0, large, 0, entry(1).length);
    write(fm, new Path(root, "offsets/1"), large);
    // Not a log entry: written directly.
    write(fm, new Path(root, "metadata"), "{\"id\":\"x\"}".getBytes(StandardCharsets.UTF_8));
    assertThat(HedgedLogWrites.metrics(ProcessResources.shared(), conf()).since(before).writes())
        .isZero();

    await("no hedge copy left", () -> !Files.exists(local("offsets/.0.hedge")));
    assertThat(Files.readAllBytes(local("offsets/0"))).isEqualTo(entry(0));
    assertThat(Files.readAllBytes(local("offsets/1"))).isEqualTo(large);
    assertThat(local("offsets/.1.hedge")).doesNotExist();

    // Cancel of a buffered entry leaves nothing, and the name is free again.
    CancellableFSDataOutputStream out = fm.createAtomic(new Path(root, "offsets/2"), false);
    out.write(entry(2));
    out.cancel();
    assertThat(local("offsets/2")).doesNotExist();
    write(fm, new Path(root, "offsets/2"), entry(2));
    assertThat(read(new Path(root, "offsets/2"))).isEqualTo(entry(2));
    FileStatus[] listed = fm.list(new Path(root, "offsets"));
    assertThat(Arrays.stream(listed).map(s -> s.getPath().getName()))
        .containsExactlyInAnyOrder("0", "1", "2");
  }

  @Test
  void fileSinkAndFileSourceLogEntriesAreHedgedAndSparksBatchFiltersSkipTheCopies()
      throws Exception {
    // A file sink's log (_spark_metadata/N, compacted as N.compact) and a file source's
    // (sources/<i>/N): written on every batch's path, through this manager, like offsets/N.
    byte[] sink = "v1\n{\"path\":\"part-0\",\"size\":1,\"action\":\"add\"}".getBytes(UTF_8);
    byte[] emptyBatch = "v1".getBytes(UTF_8); // a sink batch that wrote no file
    String[][] cases = {
      {"_spark_metadata", "3"},
      {"_spark_metadata", "9.compact"},
      {"sources/0", "4"},
      {"sources/0", "19.compact"},
      {"_spark_metadata", "5"}
    };
    for (String[] c : cases) {
      Path entry = new Path(root, c[0] + "/" + c[1]);
      byte[] bytes = c[1].equals("5") ? emptyBatch : sink;
      StallingFileSystem.stall(c[1]);
      write(fm, entry, bytes); // returns while the entry's own write is held
      assertThat(local(c[0] + "/." + c[1] + ".hedge")).as(c[1]).exists();
      assertThat(read(entry)).isEqualTo(bytes);
      StallingFileSystem.release(null);
      await(
          "copy of " + entry + " deleted",
          () -> !Files.exists(local(c[0] + "/." + c[1] + ".hedge")));
      assertThat(read(entry)).isEqualTo(bytes);
    }
    StallingFileSystem.stall("6");
    write(fm, new Path(root, "_spark_metadata/6"), sink);
    assertThat(
            Arrays.stream(fm.list(new Path(root, "_spark_metadata")))
                .map(f -> f.getPath().getName()))
        .containsExactlyInAnyOrder("3", "5", "6", "9.compact");
    fm.delete(new Path(root, "_spark_metadata/6"));
    assertThat(local("_spark_metadata/.6.hedge")).doesNotExist();
    assertThat(local("_spark_metadata/6")).doesNotExist();

    // Spark's own readers, with any checkpoint file manager, take no copy for a batch.
    for (String copy : new String[] {".3.hedge", ".9.compact.hedge"}) {
      assertThat(HedgedLogWrites.isHedgeName(copy)).isTrue();
      assertThatThrownBy(
              () ->
                  org.apache.spark.sql.execution.streaming.runtime.CompactibleFileStreamLog
                      .getBatchIdFromFileName(copy))
          .isInstanceOf(NumberFormatException.class);
      assertThatThrownBy(() -> Long.parseLong(copy)).isInstanceOf(NumberFormatException.class);
    }

    // Files written once per run or per query are not hedged.
    HedgeMetrics.Snapshot before = HedgedLogWrites.metrics(ProcessResources.shared(), conf());
    write(fm, new Path(root, "state/0/_metadata/metadata"), sink);
    write(fm, new Path(root, "sources/0/x"), sink);
    write(fm, new Path(root, "sources/x/0"), sink);
    assertThat(HedgedLogWrites.metrics(ProcessResources.shared(), conf()).since(before).writes())
        .isZero();
  }

  /**
   * {@code stallfs:}: the local disk with atomic create; the data writes of a file named {@link
   * #stall}ed block (nothing reaches the disk) until {@link #release}, then complete or fail.
   */
  public static class StallingFileSystem extends ExclusiveCreateLocalFileSystem {
    static final String SCHEME = "stallfs";

    private static volatile java.util.Set<String> stalledNames = java.util.Set.of();
    private static volatile CountDownLatch gate = new CountDownLatch(0);
    private static volatile IOException failure;
    private static volatile int stalledWrites;

    static void reset() {
      stalledNames = java.util.Set.of();
      gate = new CountDownLatch(0);
      failure = null;
      stalledWrites = 0;
    }

    /** Stall the next data writes of files named {@code names} (any directory). */
    static void stall(String... names) {
      failure = null;
      gate = new CountDownLatch(1);
      stalledNames = java.util.Set.of(names);
    }

    /** Let stalled writes go on; with {@code fail} non-null they fail with it. */
    static void release(IOException fail) {
      failure = fail;
      stalledNames = java.util.Set.of();
      gate.countDown();
    }

    static void releaseAll() {
      release(null);
    }

    static int stalledWrites() {
      return stalledWrites;
    }

    @Override
    public FSDataOutputStream create(
        Path f,
        FsPermission permission,
        boolean overwrite,
        int bufferSize,
        short replication,
        long blockSize,
        Progressable progress)
        throws IOException {
      FSDataOutputStream out =
          super.create(f, permission, overwrite, bufferSize, replication, blockSize, progress);
      if (!stalledNames.contains(f.getName())) {
        return out;
      }
      CountDownLatch held = gate;
      return new FSDataOutputStream(
          new FilterOutputStream(out) {
            private boolean waited;

            private void stallOnce() throws IOException {
              if (waited) {
                return;
              }
              waited = true;
              synchronized (StallingFileSystem.class) {
                stalledWrites++;
              }
              try {
                held.await();
              } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new InterruptedIOException("interrupted in a stalled write");
              }
              if (failure != null) {
                throw failure;
              }
            }

            @Override
            public void write(byte[] b, int off, int len) throws IOException {
              stallOnce();
              out.write(b, off, len);
            }

            @Override
            public void write(int b) throws IOException {
              stallOnce();
              out.write(b);
            }
          },
          null);
    }
  }
}
