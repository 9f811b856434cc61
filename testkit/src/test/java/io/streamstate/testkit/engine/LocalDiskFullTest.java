package io.streamstate.testkit.engine;

import static io.streamstate.testkit.engine.EngineFixture.assertState;
import static io.streamstate.testkit.engine.EngineFixture.writeVersion;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.streamstate.core.ProcessResources;
import io.streamstate.core.engine.StateTransaction;
import io.streamstate.core.engine.StoreOptions;
import io.streamstate.core.engine.VersionedStore;
import io.streamstate.core.engine.local.LocalSpaceLimit;
import io.streamstate.core.engine.local.RocksDbMemoryBudget;
import io.streamstate.core.error.LocalDiskFullException;
import io.streamstate.testkit.InMemoryStorage;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A store's local directory running out of space (issue 22, item 6). Every local write that finds
 * no room (a flush for a snapshot's local checkpoint, a write into an instance that RocksDB put in
 * its background-error state, a restore's copies, opening RocksDB) fails with a {@link
 * LocalDiskFullException} naming the directory and the setting that placed it; the instance is
 * discarded, never left half-applied or stuck in RocksDB's error state; nothing durable is damaged;
 * once there is room the next load rebuilds the state from durable storage, equal to the plain-Java
 * reference ({@link EngineFixture#reference}).
 *
 * <p>Two ways to run out of space: RocksDB's own space limit and a limit on our copies ({@link
 * LocalSpaceLimit}, in every run), and a real full file system, a tmpfs of 16 MiB mounted by the
 * test (skipped, saying why, where mounting is not allowed: it needs root).
 */
class LocalDiskFullTest {
  private static final String SETTING = "test.localDir";

  @TempDir Path tmp;

  @Test
  void aStoreWhoseLocalLimitIsReachedFailsClearlyAndRecoversFromDurableStorage() throws Exception {
    runOutOfALimitAndRecover("diskfull", true);
  }

  /**
   * As above with the default commit: its RocksDB write runs after it returns, meets RocksDB's
   * error state there, and the next load does not reuse the instance. (On a full file system the
   * instance's files, deleted as it goes, would make room for that load; a limit stays.)
   */
  @Test
  void aCommitWhoseWriteAfterItMeetsTheLimitLeavesTheInstanceToBeRestored() throws Exception {
    runOutOfALimitAndRecover("diskfull-after", false);
  }

  /** {@link #runOutAndRecover} on a space limit, with commits writing before they return or not. */
  private void runOutOfALimitAndRecover(String name, boolean writesBeforeCommitsReturn)
      throws Exception {
    try (ProcessResources resources = new ProcessResources(name)) {
      LocalSpaceLimit limit = LocalSpaceLimit.trackForTests(resources);
      Step runOut = () -> limit.limitForTests(1);
      Step giveBack = limit::liftForTests;
      String cause = "Max allowed space was reached"; // RocksDB's words for its limit
      Path local = tmp.resolve("local");
      Step run =
          () -> runOutAndRecover(new InMemoryStorage(), resources, local, runOut, giveBack, cause);
      if (writesBeforeCommitsReturn) {
        withCommitsWritingBeforeTheyReturn(run);
      } else {
        run.run();
      }
    }
  }

  @Test
  void aStoreOnAFullFileSystemFailsClearlyAndRecoversFromDurableStorage() throws Exception {
    Path mount = tmp.resolve("small-fs");
    Files.createDirectories(mount);
    String refused = mountTmpfs(mount, "16m");
    Assumptions.assumeTrue(refused == null, () -> "skipped: cannot mount a tmpfs: " + refused);
    try (ProcessResources resources = new ProcessResources("diskfull-tmpfs")) {
      Path ballast = mount.resolve("ballast");
      withCommitsWritingBeforeTheyReturn(
          () ->
              runOutAndRecover(
                  new InMemoryStorage(),
                  resources,
                  mount.resolve("local"),
                  () -> fill(ballast),
                  () -> Files.delete(ballast),
                  "No space left on device"));
    } finally {
      run("umount", mount.toString());
    }
  }

  interface Step {
    void run() throws Exception;
  }

  /**
   * Runs {@code body} with each commit's RocksDB write done before it returns (by default it runs
   * after, and the next load finds the failure), so that the commit that meets RocksDB's error
   * state discards the instance at once, before the disk is filled again; LocalDb's diagnostic
   * switch.
   */
  private static void withCommitsWritingBeforeTheyReturn(Step body) throws Exception {
    System.setProperty(WRITES_BEFORE_APPLY_RETURNS, "true");
    try {
      body.run();
    } finally {
      System.clearProperty(WRITES_BEFORE_APPLY_RETURNS);
    }
  }

  private static final String WRITES_BEFORE_APPLY_RETURNS =
      "streamstate.local.writesBeforeApplyReturns";

  /**
   * Versions 1-3 and a snapshot of 3 with room; then no room: the snapshot of 4 fails at its local
   * flush, the commit of 5 is durable but its RocksDB write meets RocksDB's error state (the
   * instance goes), and the load of 5 fails; room again: the load of 5 restores from durable
   * storage, and a fresh store loads every version exactly.
   */
  private static void runOutAndRecover(
      InMemoryStorage durable,
      ProcessResources resources,
      Path local,
      Step runOut,
      Step giveBack,
      String flushCause)
      throws Exception {
    // Shared SSTs (no inlining): a restore copies SST files into the local directory.
    StoreOptions options =
        StoreOptions.defaults().withSnapshotInterval(1_000).withInlineSstMaxBytes(0);
    try (VersionedStore store = open(durable, resources, local, options)) {
      for (long v = 1; v <= 3; v++) {
        commit(store, v);
      }
      assertThat(store.snapshotNow()).isEqualTo(3);
      commit(store, 4);

      runOut.run();
      // A flush: the snapshot's local checkpoint finds no room; no snapshot 4 is published.
      assertThatThrownBy(store::snapshotNow)
          .isInstanceOf(LocalDiskFullException.class)
          .hasMessageContaining("Local disk full")
          .hasMessageContaining("local directory " + local + " is out of space")
          .hasMessageContaining(SETTING)
          .hasMessageContaining(flushCause);
      assertThat(ForcedSnapshotTest.snapshotVersions(durable)).containsExactly(3L);

      // RocksDB now refuses every write of that instance. The commit of 5 is durable (its
      // changelog was published) and its RocksDB write fails: the instance is discarded, not
      // kept (by the commit when it writes before it returns, else by the next load).
      long durableLoads = store.metrics().snapshot().durableLoads();
      commit(store, 5);
      // The discarded instance's files gave some room back: take it again.
      runOut.run();
      // Loading 5 needs the local directory again: it fails, clearly, and leaves no instance.
      assertThatThrownBy(() -> store.begin(5))
          .isInstanceOf(LocalDiskFullException.class)
          .hasMessageContaining("local directory " + local + " is out of space")
          .hasMessageContaining(SETTING);
      assertThat(store.metrics().snapshot().durableLoads())
          .as("the instance in RocksDB's error state was not used again")
          .isEqualTo(durableLoads + 1);
      assertThat(store.localVersion()).isEqualTo(-1);
      assertThat(instanceDirs(local))
          .as("the failed restore's copies were deleted: they would keep the disk full")
          .isEmpty();

      giveBack.run();
      try (StateTransaction tx = store.begin(5)) {
        assertState(tx, 5);
      }
      commit(store, 6);
      assertThat(store.snapshotNow()).isEqualTo(6);
    }
    // Nothing durable was damaged: a fresh store loads every version from durable files alone.
    try (VersionedStore fresh =
        open(durable, resources, local.resolveSibling("fresh"), StoreOptions.defaults())) {
      for (long v = 1; v <= 6; v++) {
        try (StateTransaction tx = fresh.begin(v)) {
          assertState(tx, v);
        }
      }
    }
  }

  /**
   * A mirrored store (every family in the heap) leaves RocksDB behind until a snapshot reads it
   * (WriteLag): with no room, the snapshot's flush fails clearly, and the commits go on from the
   * heap, which none of them needs the local disk for. RocksDB keeps the failed flush's error (it
   * refuses every later write), so once room is back the next snapshot's catch-up fails, naming it;
   * the next load then restores from durable storage, and the store snapshots again. The state is
   * the reference's throughout, and a fresh store loads every version from durable files alone.
   */
  @Test
  void aMirroredStoreCommitsOnWhileItsLocalDiskIsFullAndSnapshotsOnceThereIsRoom()
      throws Exception {
    InMemoryStorage durable = new InMemoryStorage();
    try (ProcessResources resources = new ProcessResources("diskfull-mirrored");
        RocksDbMemoryBudget budget = new RocksDbMemoryBudget(64L << 20, 16L << 20)) {
      LocalSpaceLimit limit = LocalSpaceLimit.trackForTests(resources);
      Path local = tmp.resolve("local");
      StoreOptions options =
          StoreOptions.defaults().withSnapshotInterval(1_000).withInlineSstMaxBytes(0);
      try (VersionedStore store = open(durable, resources, local, options, budget)) {
        for (long v = 1; v <= 3; v++) {
          commit(store, v);
        }
        assertThat(store.snapshotNow()).isEqualTo(3);
        commit(store, 4);
        limit.limitForTests(1);
        assertThatThrownBy(store::snapshotNow)
            .isInstanceOf(LocalDiskFullException.class)
            .hasMessageContaining("local directory " + local + " is out of space");
        long durableLoads = store.metrics().snapshot().durableLoads();
        commit(store, 5); // durable; nothing of it goes to the local disk
        try (StateTransaction tx = store.begin(5)) {
          assertState(tx, 5);
        }
        assertThat(store.metrics().snapshot().durableLoads())
            .as("the instance missed nothing: reused")
            .isEqualTo(durableLoads);
        limit.liftForTests();
        commit(store, 6);
        assertThatThrownBy(store::snapshotNow)
            .isInstanceOf(LocalDiskFullException.class)
            .hasMessageContaining("catch-up to version 6");
        try (StateTransaction tx = store.begin(6)) {
          assertState(tx, 6);
        }
        assertThat(store.metrics().snapshot().durableLoads())
            .as("the instance whose RocksDB refuses writes was not reused")
            .isEqualTo(durableLoads + 1);
        commit(store, 7);
        assertThat(store.snapshotNow()).isEqualTo(7);
      }
      try (VersionedStore fresh =
          open(
              durable,
              resources,
              local.resolveSibling("fresh"),
              StoreOptions.defaults(),
              EngineFixture.BUDGET)) {
        for (long v = 1; v <= 7; v++) {
          try (StateTransaction tx = fresh.begin(v)) {
            assertState(tx, v);
          }
        }
      }
    }
  }

  /**
   * Heap mirrors off (in {@link #runOutAndRecover}): every version goes to RocksDB, and the write
   * that meets RocksDB's error state leaves the instance to be discarded.
   */
  private static final RocksDbMemoryBudget NO_MIRRORS = new RocksDbMemoryBudget(64L << 20, 0);

  private static VersionedStore open(
      InMemoryStorage durable, ProcessResources resources, Path local, StoreOptions options) {
    return open(durable, resources, local, options, NO_MIRRORS);
  }

  private static VersionedStore open(
      InMemoryStorage durable,
      ProcessResources resources,
      Path local,
      StoreOptions options,
      RocksDbMemoryBudget budget) {
    return VersionedStore.builder("s", durable)
        .localDir(local)
        .localDirSetting(SETTING)
        .options(options)
        .resources(resources)
        .memoryBudget(budget)
        .open();
  }

  private static void commit(VersionedStore store, long v) {
    try (StateTransaction tx = store.begin(v - 1)) {
      writeVersion(tx, v);
      assertThat(tx.commit()).isEqualTo(v);
    }
  }

  /** The RocksDB instance directories ({@code db-<generation>}) in a store's local directory. */
  private static List<String> instanceDirs(Path local) throws IOException {
    try (Stream<Path> entries = Files.list(local)) {
      return entries.map(p -> p.getFileName().toString()).filter(n -> n.startsWith("db-")).toList();
    }
  }

  /** Writes {@code ballast} until the file system is full (its last write fails). */
  private static void fill(Path ballast) throws IOException {
    byte[] chunk = new byte[64 << 10];
    new Random(5).nextBytes(chunk);
    try (OutputStream out =
        Files.newOutputStream(ballast, StandardOpenOption.CREATE, StandardOpenOption.APPEND)) {
      while (true) {
        out.write(chunk);
      }
    } catch (IOException full) {
      assertThat(full.getMessage()).contains("No space left on device");
    }
    // Smaller pieces into what is left, so that not even a small file fits.
    byte[] small = new byte[512];
    try (OutputStream out = Files.newOutputStream(ballast, StandardOpenOption.APPEND)) {
      while (true) {
        out.write(small);
        out.flush();
      }
    } catch (IOException full) {
      // full
    }
  }

  /** Mounts a tmpfs of {@code size} at {@code dir}; null if mounted, else why not. */
  private static String mountTmpfs(Path dir, String size) {
    try {
      String out = run("mount", "-t", "tmpfs", "-o", "size=" + size, "tmpfs", dir.toString());
      return out;
    } catch (IOException | InterruptedException e) {
      return e.toString();
    }
  }

  /** Runs a command; null if it succeeded, else its exit code and output. */
  private static String run(String... command) throws IOException, InterruptedException {
    Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes()).trim();
    if (!p.waitFor(30, TimeUnit.SECONDS)) {
      p.destroyForcibly();
      return String.join(" ", command) + " did not end";
    }
    return p.exitValue() == 0
        ? null
        : String.join(" ", command) + ": exit " + p.exitValue() + " " + out;
  }
}
