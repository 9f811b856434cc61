package io.streamstate.bench.spark;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.FileNotFoundException;
import java.io.IOException;
import java.io.OutputStream;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileAlreadyExistsException;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The simulated file system's semantics and request counters, with {@code fs.simfs.latencyScale=0}:
 * every latency is drawn and accounted ({@code modelMs}), none is slept.
 */
class SimulatedFileSystemTest {
  @TempDir java.nio.file.Path tmp;

  /** A fresh instance: its own authority tag, so its own counters. */
  private SimulatedFileSystem open(String profile) throws IOException {
    return open(profile + "." + UUID.randomUUID().toString().replace("-", ""), 42);
  }

  private SimulatedFileSystem open(String authority, long seed) throws IOException {
    return open(authority, seed, new Configuration(false));
  }

  private SimulatedFileSystem open(String authority, long seed, Configuration conf)
      throws IOException {
    conf.setDouble("fs.simfs.latencyScale", 0);
    conf.setLong("fs.simfs.seed", seed);
    SimulatedFileSystem fs = new SimulatedFileSystem();
    fs.initialize(URI.create("simfs://" + authority + "/"), conf);
    return fs;
  }

  private Path path(SimulatedFileSystem fs, String relative) {
    return new Path("simfs://" + fs.getUri().getAuthority() + tmp.resolve(relative));
  }

  private static Map<String, Long> counters(SimulatedFileSystem fs) {
    return SimulatedFileSystem.counters(fs.getUri().getAuthority()).snapshot();
  }

  private static void write(SimulatedFileSystem fs, Path p, String content, boolean overwrite)
      throws IOException {
    try (OutputStream out = fs.create(p, overwrite)) {
      out.write(content.getBytes(StandardCharsets.UTF_8));
    }
  }

  private static String read(SimulatedFileSystem fs, Path p) throws IOException {
    try (FSDataInputStream in = fs.open(p)) {
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
  }

  @Test
  void aStreamKeptOpenPaysEachSyncAsADataWriteAndABlockAllocationPerBlockPastTheFirst()
      throws IOException {
    SimulatedFileSystem fs = open("busy-namenode");
    Path journal = path(fs, "cp/state/_segments/1-a.journal");
    try (FSDataOutputStream out = fs.create(journal, false)) {
      assertThat(out.hasCapability("hsync")).isTrue();
      assertThat(fs.hasPathCapability(journal, "streamstate.fs.append.hsync")).isTrue();
      out.write(new byte[100]);
      out.hsync();
      // A reader sees what was synced while the stream is still open.
      assertThat(Files.size(tmp.resolve("cp/state/_segments/1-a.journal"))).isEqualTo(100);
      out.write(new byte[50]);
      out.hsync();
      out.hsync(); // nothing new: free
      Map<String, Long> c = counters(fs);
      assertThat(c)
          .containsEntry("create", 1L)
          .containsEntry("sync", 2L)
          .containsEntry("stateSync", 2L)
          .containsEntry("addBlock", 0L)
          .containsEntry("write", 0L)
          .containsEntry("metadataOps", 1L)
          .containsEntry("bytesWritten", 150L)
          .containsEntry("filesWritten", 0L);
      // Crossing into a second block costs one allocation at the NameNode.
      out.write(new byte[(int) SimulatedFileSystem.BLOCK_BYTES]);
      out.hsync();
      assertThat(counters(fs)).containsEntry("addBlock", 1L).containsEntry("metadataOps", 2L);
    }
    // Closing a fully synced stream pays nothing more; it is one more file written.
    Map<String, Long> c = counters(fs);
    assertThat(c).containsEntry("write", 0L).containsEntry("filesWritten", 1L);

    // A file written, synced and closed at once costs what it did unsynced: create, one data write.
    SimulatedFileSystem other = open("busy-namenode");
    try (FSDataOutputStream out = other.create(path(other, "cp/state/0/0/x.changelog"), false)) {
      out.write(new byte[10]);
      out.hsync();
    }
    assertThat(counters(other))
        .containsEntry("create", 1L)
        .containsEntry("sync", 1L)
        .containsEntry("write", 0L)
        .containsEntry("addBlock", 0L)
        .containsEntry("metadataOps", 1L);
    assertThat(open("s3").hasPathCapability(journal, "streamstate.fs.append.hsync")).isFalse();
  }

  @Test
  void readsBackTheBytesWrittenAndStoresThemOnTheLocalDisk() throws IOException {
    SimulatedFileSystem fs = open("s3");
    Path p = path(fs, "a/b/file.bin");
    byte[] data = new byte[100_000];
    for (int i = 0; i < data.length; i++) {
      data[i] = (byte) (i * 31);
    }
    try (OutputStream out = fs.create(p, false)) {
      out.write(data, 0, 60_000);
      out.write(data, 60_000, 40_000);
    }
    try (FSDataInputStream in = fs.open(p)) {
      assertThat(in.readAllBytes()).isEqualTo(data);
    }
    assertThat(Files.readAllBytes(tmp.resolve("a/b/file.bin"))).isEqualTo(data);
    assertThat(fs.getFileStatus(p).getLen()).isEqualTo(100_000);
    Map<String, Long> c = counters(fs);
    assertThat(c).containsEntry("bytesWritten", 100_000L).containsEntry("bytesRead", 100_000L);
  }

  @Test
  void createWithoutOverwriteFailsOnAnExistingFileAndKeepsItsContent() throws IOException {
    SimulatedFileSystem fs = open("slow-datanode");
    Path p = path(fs, "v/00001");
    write(fs, p, "first", false);
    assertThatThrownBy(() -> write(fs, p, "second", false))
        .isInstanceOf(FileAlreadyExistsException.class)
        .hasMessageContaining("00001 already exists");
    assertThatThrownBy(() -> fs.createFile(p).overwrite(false).build())
        .isInstanceOf(FileAlreadyExistsException.class);
    assertThat(read(fs, p)).isEqualTo("first");
    write(fs, p, "third", true);
    assertThat(read(fs, p)).isEqualTo("third");
  }

  @Test
  void createRefusesADirectoryAndAParentThatIsAFile() throws IOException {
    SimulatedFileSystem fs = open("none");
    fs.mkdirs(path(fs, "dir"));
    write(fs, path(fs, "file"), "x", false);
    assertThatThrownBy(() -> write(fs, path(fs, "dir"), "y", true))
        .isInstanceOf(FileAlreadyExistsException.class)
        .hasMessageContaining("is a directory");
    assertThatThrownBy(() -> write(fs, path(fs, "file/child"), "y", true))
        .isInstanceOf(org.apache.hadoop.fs.ParentNotDirectoryException.class);
  }

  @Test
  void declaresConditionalCreate() throws IOException {
    SimulatedFileSystem fs = open("s3");
    assertThat(fs.hasPathCapability(path(fs, "x"), "fs.option.create.conditional.overwrite"))
        .isTrue();
  }

  @Test
  void countsEachOperationKindExactly() throws IOException {
    SimulatedFileSystem fs = open("busy-namenode");
    Path dir = path(fs, "state/0/1");
    fs.mkdirs(dir); // mkdirs 1
    write(fs, new Path(dir, "1.delta"), "aa", false); // create 1, write 1
    write(fs, path(fs, "offsets/0"), "bbb", false); // create 2, write 2
    read(fs, new Path(dir, "1.delta")); // open 1
    fs.getFileStatus(new Path(dir, "1.delta")); // status 1
    fs.listStatus(dir); // list 1
    fs.rename(new Path(dir, "1.delta"), new Path(dir, "2.delta")); // rename 1
    fs.delete(new Path(dir, "2.delta"), false); // delete 1
    assertThatThrownBy(() -> fs.open(path(fs, "missing"))) // open 2 (a GET that fails)
        .isInstanceOf(FileNotFoundException.class);
    assertThatThrownBy(() -> fs.getFileStatus(path(fs, "missing"))) // status 2
        .isInstanceOf(FileNotFoundException.class);

    Map<String, Long> c = counters(fs);
    assertThat(c)
        .containsEntry("mkdirs", 1L)
        .containsEntry("create", 2L)
        .containsEntry("write", 2L)
        .containsEntry("open", 2L)
        .containsEntry("status", 2L)
        .containsEntry("list", 1L)
        .containsEntry("rename", 1L)
        .containsEntry("delete", 1L)
        // everything but write and open: mkdirs 1 + create 2 + status 2 + list 1 + rename 1 +
        // delete 1
        .containsEntry("metadataOps", 8L)
        .containsEntry("filesWritten", 2L)
        .containsEntry("stateFilesWritten", 1L)
        .containsEntry("bytesWritten", 5L)
        .containsEntry("bytesRead", 2L)
        .containsEntry("delayMs", 0L)
        // Under state/: all but the offset file's create and the two requests for "missing".
        .containsEntry("stateMkdirs", 1L)
        .containsEntry("stateCreate", 1L)
        .containsEntry("stateOpen", 1L)
        .containsEntry("stateStatus", 1L)
        .containsEntry("stateList", 1L)
        .containsEntry("stateRename", 1L)
        .containsEntry("stateDelete", 1L)
        .containsEntry("stateMetadataOps", 6L);
    // 8 metadata ops at 2-6 ms each (load 1: one caller), 4 data ops at 1-4 ms.
    assertThat(c.get("modelMs")).isBetween(19L, 64L);
  }

  @Test
  void countsRequestsUnderAStateDirectorySeparatelyFromSparksLogs() throws IOException {
    SimulatedFileSystem fs = open("s3");
    // Spark's logs next to the state directory, and names that only look like state/.
    Path offsets = path(fs, "cp/offsets");
    fs.mkdirs(offsets);
    write(fs, new Path(offsets, "0"), "o", false);
    write(fs, path(fs, "cp/commits/state"), "c", false);
    write(fs, path(fs, "cp/mystate/0"), "m", false);
    fs.rename(new Path(offsets, "0"), new Path(offsets, "1"));
    fs.listStatus(offsets);
    // The provider's own requests.
    Path store = path(fs, "cp/state/0/2");
    fs.mkdirs(store);
    fs.getFileStatus(path(fs, "cp/state")); // the directory itself is not under it
    write(fs, new Path(store, "1.changelog"), "aa", false);
    write(fs, new Path(store, "2.changelog"), "bb", false);
    read(fs, new Path(store, "1.changelog"));
    fs.listStatus(store);
    fs.listStatus(store);
    fs.getFileStatus(new Path(store, "2.changelog"));
    fs.delete(new Path(store, "1.changelog"), false);
    // A rename counts as state when either side is under state/.
    write(fs, path(fs, "cp/tmp-upload"), "t", false);
    fs.rename(path(fs, "cp/tmp-upload"), new Path(store, "3.changelog"));

    Map<String, Long> c = counters(fs);
    assertThat(c)
        .containsEntry("mkdirs", 2L)
        .containsEntry("create", 6L)
        .containsEntry("open", 1L)
        .containsEntry("rename", 2L)
        .containsEntry("delete", 1L)
        .containsEntry("status", 2L)
        .containsEntry("list", 3L)
        .containsEntry("metadataOps", 16L)
        .containsEntry("stateMkdirs", 1L)
        .containsEntry("stateCreate", 2L)
        .containsEntry("stateOpen", 1L)
        .containsEntry("stateRename", 1L)
        .containsEntry("stateDelete", 1L)
        .containsEntry("stateStatus", 1L)
        .containsEntry("stateList", 2L)
        .containsEntry("stateMetadataOps", 8L)
        .containsEntry("filesWritten", 6L)
        .containsEntry("stateFilesWritten", 2L);
    // Every kind but the data write has its state/ part, and nothing else is named state*.
    assertThat(c.keySet().stream().filter(k -> k.startsWith("state")))
        .containsExactlyInAnyOrder(
            "stateCreate",
            "stateSync",
            "stateAddBlock",
            "stateOpen",
            "stateRename",
            "stateDelete",
            "stateMkdirs",
            "stateStatus",
            "stateList",
            "stateMetadataOps",
            "stateFilesWritten");
  }

  @Test
  void aReadPaysForTheBytesItReadsNotForTheBytesItSeeksOver() throws IOException {
    SimulatedFileSystem fs = open("s3");
    Path p = path(fs, "journal.bin");
    byte[] data = new byte[8_000_000];
    data[7_999_999] = 42;
    try (OutputStream out = fs.create(p, false)) {
      out.write(data);
    }
    long modelBefore = counters(fs).get("modelMs");
    try (FSDataInputStream in = fs.open(p)) {
      // What a journal member's reader does: skip to the member, read it.
      assertThat(in.skip(7_999_000)).isEqualTo(7_999_000);
      byte[] member = in.readNBytes(1_000);
      assertThat(member[999]).isEqualTo((byte) 42);
    }
    Map<String, Long> c = counters(fs);
    assertThat(c).containsEntry("bytesRead", 1_000L).containsEntry("open", 1L);
    // A GET's 15-40 ms and 1,000 bytes at 80 MB/s; the whole file would have added 100 ms.
    assertThat(c.get("modelMs") - modelBefore).isBetween(14L, 41L);
  }

  @Test
  void sameSeedAndSameRequestsGiveTheSameLatenciesAndAnotherSeedOthers() throws IOException {
    long[] totals = new long[3];
    long[] seeds = {7, 7, 8};
    for (int i = 0; i < 3; i++) {
      SimulatedFileSystem fs =
          open("s3.seed" + i + UUID.randomUUID().toString().substring(0, 8), seeds[i]);
      for (int f = 0; f < 50; f++) {
        write(fs, path(fs, "run" + i + "/f" + f), "x".repeat(f * 1000), false);
        fs.listStatus(path(fs, "run" + i));
      }
      totals[i] = counters(fs).get("modelMs");
    }
    // 50 creates, 50 PUTs and 50 LISTs: at least 50 * (10 + 25 + 20) ms.
    assertThat(totals[0]).isGreaterThan(2_750L).isEqualTo(totals[1]).isNotEqualTo(totals[2]);
  }

  @Test
  void listsChildrenWithTheirSizesUnderTheSimfsScheme() throws IOException {
    SimulatedFileSystem fs = open("s3");
    Path dir = path(fs, "listing");
    write(fs, new Path(dir, "one"), "1", false);
    write(fs, new Path(dir, "three"), "333", false);
    fs.mkdirs(new Path(dir, "sub"));
    FileStatus[] listed = fs.listStatus(dir);
    assertThat(Arrays.stream(listed).map(s -> s.getPath().getName()))
        .containsExactlyInAnyOrder("one", "three", "sub");
    assertThat(listed)
        .allSatisfy(
            s -> assertThat(s.getPath().toUri().getScheme()).isEqualTo(SimulatedFileSystem.SCHEME))
        .allSatisfy(
            s ->
                assertThat(s.getPath().toUri().getAuthority())
                    .isEqualTo(fs.getUri().getAuthority()));
    assertThat(Arrays.stream(listed).filter(s -> s.getPath().getName().equals("three")))
        .singleElement()
        .satisfies(s -> assertThat(s.getLen()).isEqualTo(3))
        .satisfies(s -> assertThat(s.isFile()).isTrue());
    assertThat(
            Arrays.stream(listed).filter(FileStatus::isDirectory).map(s -> s.getPath().getName()))
        .containsExactly("sub");
    assertThatThrownBy(() -> fs.listStatus(path(fs, "nowhere")))
        .isInstanceOf(FileNotFoundException.class);
  }

  @Test
  void renameMovesButNeverOverwrites() throws IOException {
    SimulatedFileSystem fs = open("none");
    Path a = path(fs, "r/a");
    Path b = path(fs, "r/b");
    write(fs, a, "A", false);
    write(fs, b, "B", false);
    assertThat(fs.rename(a, b)).isFalse();
    assertThat(read(fs, a)).isEqualTo("A");
    assertThat(read(fs, b)).isEqualTo("B");
    Path c = path(fs, "r/c");
    assertThat(fs.rename(a, c)).isTrue();
    assertThat(fs.exists(a)).isFalse();
    assertThat(read(fs, c)).isEqualTo("A");
    assertThat(fs.rename(path(fs, "r/missing"), path(fs, "r/d"))).isFalse();
  }

  @Test
  void deleteRemovesFilesAndDirectoriesOnlyRecursively() throws IOException {
    SimulatedFileSystem fs = open("none");
    Path dir = path(fs, "d");
    write(fs, new Path(dir, "x/y"), "y", false);
    assertThatThrownBy(() -> fs.delete(dir, false))
        .isInstanceOf(IOException.class)
        .hasMessageContaining("is not empty");
    assertThat(fs.delete(dir, true)).isTrue();
    assertThat(Files.exists(tmp.resolve("d"))).isFalse();
    assertThat(fs.delete(dir, true)).isFalse();
  }

  @Test
  void noStateSuffixDiscardsStreamstateStateFilesButKeepsSparkLogs() throws IOException {
    SimulatedFileSystem fs = open("s3-nostate");
    Path changelog = path(fs, "cp/state/0/3/changelog/00000000000000000001.changelog");
    write(fs, changelog, "state bytes", false);
    write(
        fs,
        path(fs, "cp/state/_segments/00000000000000000001-00000000000000ab.segment"),
        "s",
        false);
    write(fs, path(fs, "cp/offsets/0"), "offset", false);
    assertThat(Files.exists(tmp.resolve("cp/state/0/3/changelog"))).isFalse();
    assertThat(Files.exists(tmp.resolve("cp/state/_segments"))).isFalse();
    assertThat(fs.listStatus(path(fs, "cp/state/0/3/changelog"))).isEmpty();
    assertThat(fs.getFileStatus(path(fs, "cp/state/0/3/changelog")).isDirectory()).isTrue();
    assertThat(read(fs, path(fs, "cp/offsets/0"))).isEqualTo("offset");
    Map<String, Long> c = counters(fs);
    // Only the offset file is a request (the changelog and the segment are discarded).
    assertThat(c)
        .containsEntry("create", 1L)
        .containsEntry("write", 1L)
        .containsEntry("filesWritten", 1L)
        .containsEntry("stateFilesWritten", 0L)
        .containsEntry("stateCreate", 0L)
        .containsEntry("stateList", 0L)
        .containsEntry("stateStatus", 0L)
        .containsEntry("stateMetadataOps", 0L)
        .containsEntry("bytesWritten", 6L);
  }

  @Test
  void tagsMakeSeparateInstancesWithTheirOwnCounters() throws IOException {
    String tag = UUID.randomUUID().toString().substring(0, 8);
    SimulatedFileSystem a = open("slow-datanode.a" + tag, 42);
    SimulatedFileSystem b = open("slow-datanode.b" + tag, 42);
    write(a, path(a, "t/1"), "1", false);
    write(a, path(a, "t/2"), "2", false);
    write(b, path(b, "u/1"), "1", false);
    assertThat(counters(a)).containsEntry("filesWritten", 2L);
    assertThat(counters(b)).containsEntry("filesWritten", 1L);
  }

  // ---- slow-datanode-periods: pipelines ----

  @Test
  void eachFileHasAPipelineOfThreeDistinctDataNodesKeptForItsLife() throws IOException {
    Configuration conf = new Configuration(false);
    conf.setInt("fs.simfs.datanodes", 8);
    SimulatedFileSystem fs =
        open("slow-datanode-periods." + UUID.randomUUID().toString().substring(0, 8), 42, conf);
    Set<String> seen = new HashSet<>();
    for (int f = 0; f < 50; f++) {
      try (FSDataOutputStream out = fs.create(path(fs, "cp/state/_segments/" + f), false)) {
        List<String> pipeline = fs.pipelineOf(out);
        assertThat(pipeline)
            .hasSize(3)
            .doesNotHaveDuplicates()
            .allSatisfy(dn -> assertThat(dn).matches("dn[1-8]"));
        // The same pipeline (and the same stream, wrapped or not) for every write and sync.
        for (int i = 0; i < 3; i++) {
          out.write(new byte[100]);
          out.hsync();
          assertThat(fs.pipelineOf(out)).isEqualTo(pipeline);
          assertThat(fs.pipelineOf(out.getWrappedStream())).isEqualTo(pipeline);
        }
        seen.addAll(pipeline);
      }
    }
    assertThat(seen).hasSize(8);
    // Reported as HDFS reports dfs.replication: a writer asks that many favoured DataNodes.
    assertThat(fs.getDefaultReplication(path(fs, "cp/x"))).isEqualTo((short) 3);
    assertThat(open("slow-datanode").getDefaultReplication()).isEqualTo((short) 1);
    // A stream of another file system, or any other stream, has none.
    assertThat(fs.pipelineOf(OutputStream.nullOutputStream())).isEmpty();
    SimulatedFileSystem other = open("slow-datanode-periods");
    try (FSDataOutputStream out = other.create(path(other, "x"), false)) {
      assertThat(fs.pipelineOf(out)).isEmpty();
      assertThat(other.pipelineOf(out)).hasSize(3);
    }
  }

  @Test
  void profilesWithoutDataNodesHaveNoPipelinesAndIgnoreFavoredNodes() throws IOException {
    for (String profile : new String[] {"none", "slow-datanode", "busy-namenode", "s3"}) {
      SimulatedFileSystem fs = open(profile);
      Path p = path(fs, profile + "/f");
      try (FSDataOutputStream out = fs.create(p, false, List.of("dn1", "dn2", "dn3"))) {
        out.write(1);
        assertThat(fs.pipelineOf(out)).as(profile).isEmpty();
      }
      assertThat(read(fs, p)).hasSize(1);
      assertThat(counters(fs))
          .containsEntry("create", 1L)
          .containsEntry("favoredCreates", 1L)
          .containsEntry("slowNodeWaits", 0L);
    }
  }

  @Test
  void aCreateWithFavoredDataNodesWritesThroughThem() throws IOException {
    SimulatedFileSystem fs = open("slow-datanode-periods");
    try (FSDataOutputStream out =
        fs.create(path(fs, "cp/commits/3.hedge"), false, List.of("dn5", "dn2", "dn6"))) {
      assertThat(fs.pipelineOf(out)).containsExactly("dn5", "dn2", "dn6");
    }
    // Fewer than three DataNodes it has: those first, the rest at random.
    try (FSDataOutputStream out =
        fs.create(path(fs, "cp/commits/4.hedge"), false, List.of("dn4", "datanode-9", "dn4"))) {
      List<String> pipeline = fs.pipelineOf(out);
      assertThat(pipeline).hasSize(3).doesNotHaveDuplicates().startsWith("dn4");
    }
    // Without favoured nodes, as create(path, overwrite).
    try (FSDataOutputStream out = fs.create(path(fs, "cp/commits/5"), false, List.of())) {
      assertThat(fs.pipelineOf(out)).hasSize(3);
    }
    assertThat(counters(fs)).containsEntry("create", 3L).containsEntry("favoredCreates", 2L);
    // Still create-if-absent.
    assertThatThrownBy(() -> fs.create(path(fs, "cp/commits/5"), false, List.of("dn1")))
        .isInstanceOf(FileAlreadyExistsException.class);
  }

  @Test
  void dataWritesAndSyncsThroughASlowDataNodeWaitForTheEndOfItsPeriodOthersDoNot()
      throws IOException {
    SimulatedFileSystem fs = open("slow-datanode-periods");
    DataNodeCluster cluster = fs.model().cluster();
    long[] found = SlowPeriods.instantWithOneSlowDataNode(cluster);
    long[] now = {found[0]};
    String slow = DataNodeCluster.name((int) found[1]);
    long wait = found[2] - found[0];
    fs.model().useClock(() -> now[0]);
    List<String> healthy = new java.util.ArrayList<>();
    for (int i = 0; i < cluster.size() && healthy.size() < 3; i++) {
      if (!DataNodeCluster.name(i).equals(slow)) {
        healthy.add(DataNodeCluster.name(i));
      }
    }

    // A file written and closed at once through the slow DataNode: its data write waits.
    try (OutputStream out = fs.create(path(fs, "cp/sink/part-0"), false, List.of(slow))) {
      out.write(new byte[1_000]);
    }
    assertThat(counters(fs))
        .containsEntry("slowNodeWaits", 1L)
        .containsEntry("slowNodeWaitMs", wait)
        .containsEntry("sinkFilesWritten", 1L);
    // Its hedge copy on healthy DataNodes does not.
    try (OutputStream out = fs.create(path(fs, "cp/sink/part-0.hedge"), false, healthy)) {
      out.write(new byte[1_000]);
    }
    assertThat(counters(fs)).containsEntry("slowNodeWaits", 1L);

    // A journal kept open through it: every sync inside the period waits, none after it.
    try (FSDataOutputStream journal =
        fs.create(path(fs, "cp/state/_segments/1.journal"), false, List.of(healthy.get(0), slow))) {
      journal.write(new byte[10]);
      journal.hsync();
      journal.write(new byte[10]);
      journal.hsync();
      assertThat(counters(fs))
          .containsEntry("slowNodeWaits", 3L)
          .containsEntry("slowNodeWaitMs", 3 * wait);
      now[0] = found[2];
      journal.write(new byte[10]);
      journal.hsync();
    }
    Map<String, Long> c = counters(fs);
    assertThat(c).containsEntry("slowNodeWaits", 3L).containsEntry("sync", 3L);
    // Waits count in the model's time; metadata never waits for a DataNode.
    assertThat(c.get("modelMs")).isGreaterThanOrEqualTo(3 * wait);
  }

  @Test
  void countsRequestsUnderTheSinkDirectorySeparately() throws IOException {
    SimulatedFileSystem fs = open("slow-datanode-periods");
    Path sink = path(fs, "out/sink/000-r0");
    fs.mkdirs(new Path(sink, "_spark_metadata"));
    write(fs, new Path(sink, "part-00000-abc.snappy.parquet"), "pq", false);
    write(fs, new Path(sink, "_spark_metadata/0"), "v1", false);
    fs.getFileStatus(new Path(sink, "part-00000-abc.snappy.parquet"));
    fs.listStatus(new Path(sink, "_spark_metadata"));
    write(fs, path(fs, "out/checkpoints/000-r0/state/0/0/1.delta"), "d", false);
    write(fs, path(fs, "out/checkpoints/000-r0/offsets/0"), "o", false);
    Map<String, Long> c = counters(fs);
    assertThat(c)
        .containsEntry("filesWritten", 4L)
        .containsEntry("sinkFilesWritten", 2L)
        .containsEntry("stateFilesWritten", 1L)
        .containsEntry("sinkCreate", 2L)
        .containsEntry("sinkMkdirs", 1L)
        .containsEntry("sinkStatus", 1L)
        .containsEntry("sinkList", 1L)
        .containsEntry("sinkMetadataOps", 5L)
        .containsEntry("stateMetadataOps", 1L)
        .containsEntry("metadataOps", 7L);
  }

  @Test
  void rejectsAnUnknownProfile() {
    assertThatThrownBy(() -> open("tape.x", 1))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("Unknown simfs profile 'tape'");
  }
}
