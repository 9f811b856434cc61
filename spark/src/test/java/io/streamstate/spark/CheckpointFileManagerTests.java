package io.streamstate.spark;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.streamstate.spark.checkpoint.RenameFreeCheckpointFileManager;
import java.io.IOException;
import java.io.InputStream;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileAlreadyExistsException;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.execution.streaming.checkpointing.CheckpointFileManager;
import org.apache.spark.sql.execution.streaming.checkpointing.CheckpointFileManager.CancellableFSDataOutputStream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;

/**
 * The {@code createAtomic} contract of {@link RenameFreeCheckpointFileManager} on one store, and
 * two "drivers" racing for the same offset-log entry. Subclasses give the store (local disk, HDFS,
 * S3A). No Spark session: Spark's own callers ({@code HDFSMetadataLog.write}) are imitated by
 * {@link #write}.
 */
public abstract class CheckpointFileManagerTests {
  static final int RACE_ROUNDS = 100;

  /** A directory of the store under test that no other test uses. */
  protected abstract Path newRoot(String testName) throws IOException;

  /** The configuration a manager is made with (as Spark gives it). */
  protected abstract Configuration conf();

  /**
   * The configuration of a second, independent driver: its own file system client (own connections
   * and, on HDFS, its own lease holder).
   */
  protected abstract Configuration independentClientConf();

  /** How the store is named in summary lines. */
  protected abstract String storeName();

  /**
   * Whether an entry shows under its name while it is written, so that a driver that dies mid-write
   * leaves it torn (local disk, HDFS; not object stores, which publish whole at close), and its
   * entries are plain files (not log journals, whose torn last record ends the journal).
   */
  protected boolean crashesLeaveTornEntries() {
    return true;
  }

  private Path root;
  private RenameFreeCheckpointFileManager fm;
  private ExecutorService pool;

  @BeforeEach
  void setUpManager(TestInfo info) throws IOException {
    root = newRoot(info.getTestMethod().orElseThrow().getName());
    fm = new RenameFreeCheckpointFileManager(root, conf());
    fm.createCheckpointDirectory();
    pool = Executors.newFixedThreadPool(8);
  }

  @AfterEach
  void tearDownManager() throws InterruptedException {
    pool.shutdownNow();
    pool.awaitTermination(30, TimeUnit.SECONDS);
    fm.close();
  }

  /** As {@code HDFSMetadataLog.write}: create, write, close; cancel on any failure. */
  public static void write(CheckpointFileManager fm, Path path, byte[] bytes, boolean overwrite)
      throws IOException {
    CancellableFSDataOutputStream out = fm.createAtomic(path, overwrite);
    try {
      out.write(bytes);
      out.close();
    } catch (Throwable e) {
      out.cancel();
      throw e;
    }
  }

  public static byte[] read(CheckpointFileManager fm, Path path) throws IOException {
    try (InputStream in = fm.open(path)) {
      return in.readAllBytes();
    }
  }

  /**
   * A complete entry of Spark's offset or commit log of exactly {@code size} bytes: a version line
   * and one JSON object (the manager refuses to open a torn one).
   */
  public static byte[] logEntry(String label, int size) {
    String head = "v1\n{\"" + label + "\":\"";
    String tail = "\"}";
    StringBuilder b = new StringBuilder(head);
    while (b.length() < size - tail.length()) {
      b.append((char) ('a' + b.length() % 26));
    }
    return b.append(tail).toString().getBytes(UTF_8);
  }

  private static byte[] content(String label, int size) {
    byte[] b = new byte[size];
    byte[] l = label.getBytes(UTF_8);
    for (int i = 0; i < size; i++) {
      b[i] = l[i % l.length];
    }
    return b;
  }

  @Test
  void writtenFileIsVisibleWithExactBytesAfterClose() throws IOException {
    Path path = new Path(root, "offsets/0");
    byte[] bytes = logEntry("batchWatermarkMs", 3000);
    write(fm, path, bytes, false);

    assertThat(fm.exists(path)).isTrue();
    assertThat(read(fm, path)).isEqualTo(bytes);
    assertThat(names(fm.list(new Path(root, "offsets")))).containsExactly("0");
  }

  @Test
  void createWithoutOverwriteOfExistingFileThrowsFileAlreadyExistsAndKeepsOriginal()
      throws IOException {
    Path path = new Path(root, "commits/7");
    byte[] original = logEntry("original", 500);
    write(fm, path, original, false);

    assertThatThrownBy(() -> write(fm, path, content("intruder", 700), false))
        .isInstanceOf(FileAlreadyExistsException.class)
        .hasMessageContaining("commits/7");
    assertThat(read(fm, path)).isEqualTo(original);
    // A second manager (another driver) is refused the same way.
    RenameFreeCheckpointFileManager other =
        new RenameFreeCheckpointFileManager(root, independentClientConf());
    assertThatThrownBy(() -> write(other, path, content("other", 10), false))
        .isInstanceOf(FileAlreadyExistsException.class);
    assertThat(read(fm, path)).isEqualTo(original);
  }

  /**
   * Spark asks whether the next log entry exists before it creates it; a manager that writes the
   * log answers from what it listed and wrote, without a request. A second writer's entry still
   * cannot be overwritten: the create-if-absent refuses it, as Spark needs.
   */
  @Test
  void existsOfTheNextEntryCostsNoRequestAndAnotherWritersEntryStaysSafe() throws IOException {
    Path log = new Path(root, "offsets");
    byte[] zero = logEntry("zero", 100);
    write(fm, new Path(log, "0"), zero, false);

    long before = RenameFreeCheckpointFileManager.existsAnsweredLocally();
    assertThat(fm.exists(new Path(log, "1"))).isFalse();
    assertThat(RenameFreeCheckpointFileManager.existsAnsweredLocally() - before)
        .as("answered without a request")
        .isEqualTo(1);
    assertThat(fm.exists(new Path(log, "0"))).isTrue();

    // A second query on the checkpoint writes entry 1 meanwhile. This manager may still answer
    // "absent", but its create of 1 fails and the other writer's entry stays as it was.
    RenameFreeCheckpointFileManager other =
        new RenameFreeCheckpointFileManager(root, independentClientConf());
    byte[] theirs = logEntry("theirs", 200);
    write(other, new Path(log, "1"), theirs, false);
    assertThatThrownBy(() -> write(fm, new Path(log, "1"), logEntry("mine", 300), false))
        .isInstanceOf(FileAlreadyExistsException.class);
    assertThat(read(other, new Path(log, "1"))).isEqualTo(theirs);
    assertThat(fm.exists(new Path(log, "1"))).as("learned from the refused create").isTrue();

    // A manager that has not written into the log asks the store.
    RenameFreeCheckpointFileManager reader = new RenameFreeCheckpointFileManager(root, conf());
    assertThat(reader.exists(new Path(log, "1"))).isTrue();
    assertThat(reader.exists(new Path(log, "2"))).isFalse();

    // A deleted entry is absent; one in another log directory is asked for.
    fm.delete(new Path(log, "0"));
    assertThat(fm.exists(new Path(log, "0"))).isFalse();
    write(other, new Path(root, "commits/0"), logEntry("commit", 50), false);
    assertThat(fm.exists(new Path(root, "commits/0"))).isTrue();
  }

  @Test
  void cancelLeavesNoFile() throws IOException {
    Path path = new Path(root, "offsets/3");
    CancellableFSDataOutputStream out = fm.createAtomic(path, false);
    out.write(content("partial", 10_000));
    out.cancel();
    out.close(); // after cancel: does nothing
    assertThat(fm.exists(path)).isFalse();

    // The name is free again.
    byte[] bytes = logEntry("after", 100);
    write(fm, path, bytes, false);
    assertThat(read(fm, path)).isEqualTo(bytes);
  }

  @Test
  void aTornSparkLogEntryIsRefusedNamingTheFile() throws IOException {
    Path offsets = new Path(root, "offsets/5");
    byte[] whole = logEntry("batchWatermarkMs", 800);
    write(fm, offsets, java.util.Arrays.copyOf(whole, 400), false); // a driver died mid-write
    assertThatThrownBy(() -> read(fm, offsets))
        .hasMessageContaining(offsets.toString())
        .hasMessageContaining("is incomplete")
        .hasMessageContaining("restore the entry from a backup");
    Path commits = new Path(root, "commits/5");
    write(fm, commits, whole, false);
    assertThat(read(fm, commits)).isEqualTo(whole);
    // A memory source's offset is a bare number, a missing one is "-": both are whole entries.
    Path memory = new Path(root, "offsets/6");
    byte[] numbers = "v1\n{\"batchWatermarkMs\":0}\n17\n-".getBytes(UTF_8);
    write(fm, memory, numbers, false);
    assertThat(read(fm, memory)).isEqualTo(numbers);
    // Only Spark's log entries are checked: other files are returned as written.
    Path other = new Path(root, "sources/0/0");
    write(fm, other, java.util.Arrays.copyOf(whole, 400), false);
    assertThat(read(fm, other)).hasSize(400);
  }

  /**
   * A driver that died while writing the newest entry of a log left it torn; the restarted driver's
   * manager sets it aside when Spark lists the log to find where to resume, so that Spark plans
   * (offsets) or runs (commits) that batch again. A torn entry that is not such a crash's (the
   * offset entry of a committed batch) stays refused.
   */
  @Test
  void aNewestEntryTornByACrashIsSetAsideWhenARestartedDriverListsTheLog() throws IOException {
    org.junit.jupiter.api.Assumptions.assumeTrue(crashesLeaveTornEntries());
    Path offsets = new Path(root, "offsets");
    Path commits = new Path(root, "commits");
    write(fm, new Path(offsets, "0"), logEntry("offsets0", 300), false);
    write(fm, new Path(commits, "0"), logEntry("commits0", 60), false);
    write(fm, new Path(offsets, "1"), logEntry("offsets1", 300), false);
    byte[] commit1 = logEntry("commits1", 60);
    write(fm, new Path(commits, "1"), Arrays.copyOf(commit1, 0), false); // died writing it

    RenameFreeCheckpointFileManager restarted =
        new RenameFreeCheckpointFileManager(root, independentClientConf());
    assertThat(batches(restarted, offsets)).containsExactlyInAnyOrder("0", "1");
    assertThat(batches(restarted, commits)).containsExactly("0");
    assertThat(setAside(commits)).singleElement().asString().matches("\\.1\\.torn-\\d+");
    write(restarted, new Path(commits, "1"), commit1, false); // Spark ran batch 1 again
    assertThat(read(restarted, new Path(commits, "1"))).isEqualTo(commit1);
    // It died again, while writing the next offset entry.
    byte[] offsets2 = logEntry("offsets2", 300);
    write(restarted, new Path(offsets, "2"), Arrays.copyOf(offsets2, 120), false);

    RenameFreeCheckpointFileManager again =
        new RenameFreeCheckpointFileManager(root, independentClientConf());
    assertThat(batches(again, offsets)).containsExactlyInAnyOrder("0", "1");
    assertThat(batches(again, commits)).containsExactlyInAnyOrder("0", "1");
    assertThat(setAside(offsets)).singleElement().asString().matches("\\.2\\.torn-\\d+");
    assertThat(again.exists(new Path(offsets, "2"))).isFalse();
    write(again, new Path(offsets, "2"), offsets2, false); // Spark planned batch 2 again
    assertThat(read(again, new Path(offsets, "2"))).isEqualTo(offsets2);
    assertThat(batches(again, offsets)).containsExactlyInAnyOrder("0", "1", "2");

    // Damage, not a crash in flight: batch 3's offset entry is torn, yet batch 3 committed.
    write(again, new Path(commits, "2"), logEntry("commits2", 60), false);
    write(again, new Path(offsets, "3"), Arrays.copyOf(logEntry("offsets3", 300), 100), false);
    write(again, new Path(commits, "3"), logEntry("commits3", 60), false);
    RenameFreeCheckpointFileManager third =
        new RenameFreeCheckpointFileManager(root, independentClientConf());
    assertThat(batches(third, offsets)).contains("3");
    assertThatThrownBy(() -> read(third, new Path(offsets, "3")))
        .hasMessageContaining(new Path(offsets, "3").toString())
        .hasMessageContaining("its batch committed");
    assertThat(setAside(offsets)).hasSize(1);
  }

  /** The batch ids Spark's log sees in {@code dir} (it lists with a filter of numeric names). */
  private static List<String> batches(CheckpointFileManager fm, Path dir) {
    return names(fm.list(dir, p -> p.getName().matches("\\d+")));
  }

  /** The names of {@code dir}'s set-aside entries, as the store lists them. */
  private List<String> setAside(Path dir) throws IOException {
    List<String> out = new ArrayList<>();
    for (FileStatus f : dir.getFileSystem(conf()).listStatus(dir)) {
      if (f.getPath().getName().contains(".torn-")) {
        out.add(f.getPath().getName());
      }
    }
    return out;
  }

  @Test
  void cancelBeforeAnyWriteLeavesNoFile() throws IOException {
    Path path = new Path(root, "x/y/empty");
    fm.createAtomic(path, false).cancel();
    assertThat(fm.exists(path)).isFalse();
  }

  @Test
  void overwriteReplacesContentWithoutThrowing() throws IOException {
    Path path = new Path(root, "metadata");
    write(fm, path, content("first", 1000), true);
    byte[] second = content("second", 200);
    write(fm, path, second, true);
    assertThat(read(fm, path)).isEqualTo(second);
  }

  /**
   * Two attempts of one task writing the same state file with {@code overwriteIfPossible=true}, as
   * Spark's {@code HDFSBackedStateStoreProvider} writes {@code N.delta} (a speculative copy on
   * another executor, or a retry beside a zombie attempt): the attempt that is killed is cancelled,
   * and the file must then hold the other attempt's content, whichever started or finished first.
   * With Spark's default manager each attempt writes a temp file; a cancel deletes only that.
   */
  @Test
  void aCancelledAttemptNeverRemovesTheFileAnotherAttemptOfTheSameOverwriteCompleted()
      throws IOException {
    RenameFreeCheckpointFileManager otherExecutor =
        new RenameFreeCheckpointFileManager(root, independentClientConf());
    byte[] winner = content("winner", 3000);

    // The killed attempt started first, the winner after it and completed.
    Path first = new Path(root, "state/0/0/1.delta");
    CancellableFSDataOutputStream killed = fm.createAtomic(first, true);
    killed.write(content("killed", 2000));
    write(otherExecutor, first, winner, true);
    killed.cancel();
    assertThat(read(fm, first)).as("after the earlier attempt's cancel").isEqualTo(winner);

    // The killed attempt started after the winner completed.
    Path second = new Path(root, "state/0/0/2.delta");
    write(otherExecutor, second, winner, true);
    killed = fm.createAtomic(second, true);
    killed.write(content("killed", 2000));
    killed.cancel();
    assertThat(read(fm, second)).as("after the later attempt's cancel").isEqualTo(winner);

    // Both in flight, the first to start completes, the other is cancelled.
    Path third = new Path(root, "state/0/0/3.delta");
    CancellableFSDataOutputStream early = fm.createAtomic(third, true);
    killed = otherExecutor.createAtomic(third, true);
    killed.write(content("killed", 2000));
    early.write(winner);
    early.close();
    killed.cancel();
    assertThat(read(fm, third)).as("after the later attempt's cancel").isEqualTo(winner);
    otherExecutor.close();
  }

  @Test
  void deleteIsRecursiveAndSilentWhenMissing() throws IOException {
    write(fm, new Path(root, "state/0/1/1.delta"), content("d", 10), false);
    write(fm, new Path(root, "state/0/1/2.delta"), content("d", 10), false);
    fm.delete(new Path(root, "state"));
    assertThat(fm.exists(new Path(root, "state"))).isFalse();
    fm.delete(new Path(root, "state")); // absent: no exception
    fm.delete(new Path(root, "never/was"));
  }

  @Test
  void mkdirsAndListBehaveAsSparksManager() throws IOException {
    Path dir = new Path(root, "sources/0");
    fm.mkdirs(dir);
    assertThat(fm.exists(dir)).isTrue();
    assertThat(fm.list(dir)).isEmpty();
    write(fm, new Path(dir, "1"), content("a", 3), false);
    write(fm, new Path(dir, "2"), content("b", 3), false);
    assertThat(names(fm.list(dir, p -> p.getName().equals("2")))).containsExactly("2");
    assertThat(names(fm.list(dir))).containsExactlyInAnyOrder("1", "2");
  }

  /**
   * As Spark's ChecksumCheckpointFileManager does: many createAtomic/open at once on one manager.
   */
  @Test
  void concurrentWritesAndReadsFromManyThreadsOnOneManager() throws Exception {
    int files = 64;
    List<Future<?>> futures = new ArrayList<>();
    CountDownLatch start = new CountDownLatch(1);
    for (int i = 0; i < files; i++) {
      int n = i;
      futures.add(
          pool.submit(
              () -> {
                start.await();
                Path path = new Path(root, "state/0/" + (n % 4) + "/" + n + ".delta");
                byte[] bytes = content("file-" + n + "-", 2000 + n);
                write(fm, path, bytes, false);
                assertThat(read(fm, path)).isEqualTo(bytes);
                // Half also race a second writer of their own name from another thread: loses.
                if (n % 2 == 0) {
                  assertThatThrownBy(() -> write(fm, path, content("late", 5), false))
                      .isInstanceOf(FileAlreadyExistsException.class);
                }
                return null;
              }));
    }
    start.countDown();
    for (Future<?> f : futures) {
      f.get(120, TimeUnit.SECONDS);
    }
    int listed = 0;
    for (int p = 0; p < 4; p++) {
      listed += fm.list(new Path(root, "state/0/" + p)).length;
    }
    assertThat(listed).isEqualTo(files);
  }

  /**
   * Two drivers (two managers, two file system clients) write the same offset-log entry with
   * different content, released together: in every round exactly one wins, the other gets {@link
   * FileAlreadyExistsException}, and the file holds exactly the winner's bytes.
   */
  @Test
  void racingDriversForOneOffsetLogEntryHaveExactlyOneWinner() throws Exception {
    RenameFreeCheckpointFileManager a = fm;
    RenameFreeCheckpointFileManager b =
        new RenameFreeCheckpointFileManager(root, independentClientConf());
    Path offsets = new Path(root, "offsets");
    a.mkdirs(offsets);
    int aWon = 0;
    int bWon = 0;
    int oneWinner = 0;
    int refusedAtCreate = 0;
    int refusedAtClose = 0;
    for (int round = 0; round < RACE_ROUNDS; round++) {
      Path path = new Path(offsets, String.valueOf(round));
      byte[] bytesA = logEntry("driverA-round" + round, 4096);
      byte[] bytesB = logEntry("driverB-round" + round, 4096);
      CountDownLatch go = new CountDownLatch(1);
      Future<String> fa = pool.submit(() -> race(a, path, bytesA, go));
      Future<String> fb = pool.submit(() -> race(b, path, bytesB, go));
      go.countDown();
      String ra = fa.get(60, TimeUnit.SECONDS);
      String rb = fb.get(60, TimeUnit.SECONDS);
      List<String> outcomes = List.of(ra, rb);
      assertThat(outcomes.stream().filter("won"::equals).count())
          .as("round %d: outcomes %s", round, outcomes)
          .isEqualTo(1);
      oneWinner++;
      byte[] stored = read(a, path);
      if (ra.equals("won")) {
        aWon++;
        assertThat(stored).as("round %d", round).isEqualTo(bytesA);
      } else {
        bWon++;
        assertThat(stored).as("round %d", round).isEqualTo(bytesB);
      }
      String loser = ra.equals("won") ? rb : ra;
      if (loser.equals("refused at create")) {
        refusedAtCreate++;
      } else {
        refusedAtClose++;
      }
    }
    assertThat(names(a.list(offsets))).hasSize(RACE_ROUNDS);
    System.out.printf(
        "RenameFreeCheckpointFileManager race on %s: %d rounds, exactly one winner in %d"
            + " (A %d, B %d); loser refused at createAtomic in %d, at close in %d%n",
        storeName(), RACE_ROUNDS, oneWinner, aWon, bWon, refusedAtCreate, refusedAtClose);
  }

  private static String race(CheckpointFileManager fm, Path path, byte[] bytes, CountDownLatch go)
      throws Exception {
    go.await();
    CancellableFSDataOutputStream out;
    try {
      out = fm.createAtomic(path, false);
    } catch (Exception e) {
      // The trait declares no checked exceptions; the manager throws the IOException itself.
      if (e instanceof FileAlreadyExistsException) {
        return "refused at create";
      }
      throw e;
    }
    try {
      out.write(bytes);
      out.close();
      return "won";
    } catch (FileAlreadyExistsException e) {
      out.cancel();
      return "refused at close";
    } catch (Throwable e) {
      out.cancel();
      throw e;
    }
  }

  private static List<String> names(FileStatus[] statuses) {
    return Arrays.stream(statuses).map(s -> s.getPath().getName()).toList();
  }
}
