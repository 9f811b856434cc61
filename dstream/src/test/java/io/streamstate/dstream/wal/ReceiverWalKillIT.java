package io.streamstate.dstream.wal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.streamstate.dstream.testing.ChildJvm;
import io.streamstate.hadoop.MiniDfsFixture;
import io.streamstate.hadoop.S3ProxyFixture;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.stream.Stream;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.LocatedFileStatus;
import org.apache.hadoop.fs.RemoteIterator;
import org.junit.jupiter.api.Test;

/**
 * Issue 20, item 1: a receiver-based DStream whose driver is killed with SIGKILL mid-run and
 * recovered with {@code StreamingContext.getOrCreate}, both write-ahead logs ours, on local disk,
 * HDFS (MiniDFSCluster) and S3 (S3Proxy). The driver runs in a child JVM ({@link
 * ReceiverWalDriver}); its {@link AckingReceiver} acknowledges a block (fsync'd file) only after
 * the blocking {@code store} returned. After the kill (at a seeded random time once some batches
 * were written), a second run recovers, processes the unprocessed batches from our log, runs on,
 * and stops gracefully. Every acknowledged id is in the output exactly once; no id twice (ids
 * stored but not yet acknowledged at the kill may appear, once); our log's files exist under {@code
 * <wal>/receiver/} and {@code <wal>/driver/}, Spark's default log directories in the checkpoint do
 * not.
 */
class ReceiverWalKillIT {
  private static final long SEED = Long.getLong("walit.seed", 20L);
  private static final int BATCHES_BEFORE_KILL = 4;
  private static final int BATCHES_AFTER_RESTART = 4;
  private static final Path WORK =
      Paths.get("target", "it-work", "ReceiverWalKillIT").toAbsolutePath();

  @Test
  void acknowledgedIdsAreProcessedOnceAfterDriverKillOnLocalDisk() throws Exception {
    Path dir = freshDir("local");
    run(
        "local",
        dir,
        dir.resolve("checkpoint").toUri().toString(),
        dir.resolve("wal").toUri().toString(),
        Map.of(),
        new Configuration());
  }

  @Test
  void acknowledgedIdsAreProcessedOnceAfterDriverKillOnHdfs() throws Exception {
    Path dir = freshDir("hdfs");
    try (MiniDfsFixture dfs = MiniDfsFixture.start(dir.resolve("dfs"))) {
      String root = dfs.fileSystem().getUri().toString();
      run(
          "hdfs",
          dir,
          root + "/walkill/checkpoint",
          root + "/walkill/wal",
          Map.of(),
          dfs.fileSystem().getConf());
    }
  }

  @Test
  void acknowledgedIdsAreProcessedOnceAfterDriverKillOnS3() throws Exception {
    Path dir = freshDir("s3");
    try (S3ProxyFixture s3 = S3ProxyFixture.start()) {
      Map<String, String> spark = new HashMap<>();
      s3.sharedClientSettings().forEach((k, v) -> spark.put("spark.hadoop." + k, v));
      // Spark's metadata checkpoint on S3A too (written to a temporary name, then renamed: a copy).
      run(
          "s3",
          dir,
          "s3a://" + S3ProxyFixture.BUCKET + "/walkill/checkpoint",
          "s3a://" + S3ProxyFixture.BUCKET + "/walkill/wal",
          spark,
          s3.conf());
    }
  }

  private static void run(
      String storage,
      Path dir,
      String checkpoint,
      String wal,
      Map<String, String> sparkConf,
      Configuration hadoop)
      throws Exception {
    Path out = Files.createDirectories(dir.resolve("out"));
    Path ack = dir.resolve("acknowledged.txt");
    Path stop = dir.resolve("stop");
    List<String> args = new ArrayList<>(List.of(checkpoint, wal, out.toString(), ack.toString()));
    args.add(stop.toString());
    sparkConf.forEach((k, v) -> args.add(k + "=" + v));
    Random random = new Random(SEED ^ storage.hashCode());
    long started = System.nanoTime();

    Process first = startDriver(1, dir.resolve("driver-1.log"), args);
    Process second = null;
    try {
      awaitBatches(first, out, BATCHES_BEFORE_KILL, dir.resolve("driver-1.log"));
      Thread.sleep(random.nextInt(1500));
      first.destroyForcibly();
      first.waitFor();
      int batchesAtKill = nonEmptyBatches(out);
      long ackedAtKill = readIds(ack).size();

      second = startDriver(2, dir.resolve("driver-2.log"), args);
      awaitBatches(second, out, batchesAtKill + BATCHES_AFTER_RESTART, dir.resolve("driver-2.log"));
      Files.createFile(stop);
      assertThat(second.waitFor(90, java.util.concurrent.TimeUnit.SECONDS))
          .as("the second driver stops within 90 s of the stop request")
          .isTrue();
      assertThat(second.exitValue())
          .as("exit code of the second driver; its log: %s", dir.resolve("driver-2.log"))
          .isZero();
      assertThat(Files.readString(dir.resolve("driver-2.log")))
          .contains("recovered from " + checkpoint);

      List<Long> acked = readIds(ack);
      List<Long> output = new ArrayList<>();
      try (Stream<Path> files = Files.list(out)) {
        for (Path f : files.filter(f -> !f.getFileName().toString().startsWith(".")).toList()) {
          output.addAll(readIds(f));
        }
      }
      Set<Long> outputSet = new HashSet<>(output);
      assertThat(output.size()).as("ids written twice").isEqualTo(outputSet.size());
      Set<Long> missing = new HashSet<>(acked);
      missing.removeAll(outputSet);
      assertThat(missing).as("acknowledged ids missing from the output").isEmpty();
      assertThat(acked).as("ids acknowledged by the second run").anyMatch(id -> id >= 2e9);
      Set<Long> unacked = new HashSet<>(outputSet);
      acked.forEach(unacked::remove);
      assertThat(unacked)
          .as("output ids never acknowledged (stored by the first run, killed before its ack)")
          .allMatch(id -> id < 2e9)
          .hasSizeLessThanOrEqualTo(2 * AckingReceiver.BLOCK);

      FileSystem fs = FileSystem.newInstance(URI.create(wal), hadoop);
      try {
        assertThat(countFiles(fs, wal + "/receiver"))
            .as("our receiver log's files under %s/receiver", wal)
            .isPositive();
        assertThat(countFiles(fs, wal + "/driver"))
            .as("our driver log's files under %s/driver", wal)
            .isPositive();
        for (String sparks : List.of("receivedData", "receivedBlockMetadata")) {
          assertThat(fs.exists(new org.apache.hadoop.fs.Path(checkpoint + "/" + sparks)))
              .as("Spark's own log directory %s/%s", checkpoint, sparks)
              .isFalse();
        }
      } finally {
        fs.close();
      }
      String recovery =
          Files.readAllLines(dir.resolve("driver-2.log")).stream()
              .filter(l -> l.startsWith("DRIVER timing: "))
              .findFirst()
              .orElse("DRIVER timing: ?")
              .substring("DRIVER timing: ".length());
      System.out.printf(
          "ReceiverWalKillIT %s: acked ids %d (%d at the kill), output ids %d (%d never acked),"
              + " batch files %d, kills 1, recovering driver %s, %.1f s%n",
          storage,
          acked.size(),
          ackedAtKill,
          outputSet.size(),
          unacked.size(),
          nonEmptyBatches(out),
          recovery,
          (System.nanoTime() - started) / 1e9);
    } finally {
      first.destroyForcibly();
      if (second != null) {
        second.destroyForcibly();
        second.waitFor();
      }
      first.waitFor();
    }
  }

  private static Process startDriver(int run, Path log, List<String> args) throws IOException {
    return ChildJvm.main(ReceiverWalDriver.class, args)
        .jvmArgs(
            "-XX:+UseParallelGC",
            "-XX:TieredStopAtLevel=1",
            "-Duser.timezone=UTC",
            "-D" + AckingReceiver.RUN_PROPERTY + "=" + run)
        .log(log)
        .start()
        .process();
  }

  private static void awaitBatches(Process driver, Path out, int batches, Path log) {
    await()
        .atMost(Duration.ofSeconds(90))
        .pollInterval(Duration.ofMillis(100))
        .failFast("the driver exited early; its log: " + log, () -> !driver.isAlive())
        .until(() -> nonEmptyBatches(out) >= batches);
  }

  private static int nonEmptyBatches(Path out) {
    try (Stream<Path> files = Files.list(out)) {
      return (int)
          files
              .filter(f -> !f.getFileName().toString().startsWith("."))
              .filter(
                  f -> {
                    try {
                      return Files.size(f) > 0;
                    } catch (IOException e) {
                      return false;
                    }
                  })
              .count();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** The ids of a file, one a line; a last line without its newline (torn by the kill) is not. */
  private static List<Long> readIds(Path file) throws IOException {
    if (!Files.exists(file)) {
      return List.of();
    }
    String text = Files.readString(file, StandardCharsets.US_ASCII);
    int end = text.lastIndexOf('\n');
    List<Long> ids = new ArrayList<>();
    if (end < 0) {
      return ids;
    }
    for (String line : text.substring(0, end).split("\n")) {
      if (!line.isEmpty()) {
        ids.add(Long.parseLong(line));
      }
    }
    return ids;
  }

  private static int countFiles(FileSystem fs, String dir) throws IOException {
    org.apache.hadoop.fs.Path path = new org.apache.hadoop.fs.Path(dir);
    if (!fs.exists(path)) {
      return 0;
    }
    int n = 0;
    RemoteIterator<LocatedFileStatus> it = fs.listFiles(path, true);
    while (it.hasNext()) {
      FileStatus f = it.next();
      if (f.isFile()) {
        n++;
      }
    }
    return n;
  }

  private static Path freshDir(String storage) throws IOException {
    Path dir = WORK.resolve(storage);
    if (Files.exists(dir)) {
      try (Stream<Path> all = Files.walk(dir)) {
        all.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
      }
    }
    return Files.createDirectories(dir);
  }
}
