package io.streamstate.testkit.engine;

import static org.assertj.core.api.Assertions.assertThat;

import io.streamstate.core.engine.StateTransaction;
import io.streamstate.core.engine.StoreOptions;
import io.streamstate.core.engine.VersionedStore;
import io.streamstate.core.engine.local.RocksDbMemoryBudget;
import io.streamstate.testkit.InMemoryStorage;
import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Spark never closes state store providers when a session stops, so an executor exits with its
 * stores open. A RocksDB flush still running while the process's native destructors run used to
 * crash the JVM at exit (SIGSEGV, exit code 134, in a quarter to two thirds of runs like these).
 * Each child process here writes enough to keep flushes going and exits with its stores open; every
 * exit must be clean.
 */
class ExitWithOpenStoresTest {
  private static final int RUNS = 10;

  @TempDir Path tmp;

  @Test
  void aProcessExitingWithOpenStoresExitsCleanly() throws Exception {
    String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    List<String> failures = new ArrayList<>();
    for (int run = 0; run < RUNS; run++) {
      Path dir = tmp.resolve("run" + run);
      Files.createDirectories(dir);
      File log = dir.resolve("child.log").toFile();
      Process child =
          new ProcessBuilder(
                  java,
                  "-Xmx256m",
                  "-XX:ErrorFile=" + dir.resolve("hs_err_%p.log"),
                  "-cp",
                  System.getProperty("java.class.path"),
                  Child.class.getName(),
                  dir.toString())
              .redirectErrorStream(true)
              .redirectOutput(log)
              .start();
      assertThat(child.waitFor(120, TimeUnit.SECONDS)).as("child %d finished", run).isTrue();
      if (child.exitValue() != 0) {
        String out = Files.readString(log.toPath(), StandardCharsets.UTF_8);
        failures.add(
            "run " + run + ": exit " + child.exitValue() + "\n" + out.lines().limit(12).toList());
      }
    }
    assertThat(failures).as("exits with stores open").isEmpty();
  }

  /** Commits to six stores with a small memory budget (flushes all along), then exits. */
  public static final class Child {
    public static void main(String[] args) throws Exception {
      Path dir = Path.of(args[0]);
      RocksDbMemoryBudget budget = new RocksDbMemoryBudget(8L << 20);
      InMemoryStorage durable = new InMemoryStorage();
      List<VersionedStore> stores = new ArrayList<>();
      for (int s = 0; s < 6; s++) {
        stores.add(
            VersionedStore.builder("s" + s, durable)
                .prefix("p" + s + "/")
                .localDir(dir.resolve("l" + s))
                .options(StoreOptions.defaults())
                .memoryBudget(budget)
                .open());
      }
      Random random = new Random(1);
      byte[] value = new byte[200];
      for (int version = 1; version <= 8; version++) {
        for (VersionedStore store : stores) {
          try (StateTransaction tx = store.begin(version - 1)) {
            for (int i = 0; i < 5000; i++) {
              random.nextBytes(value);
              tx.put(
                  "default",
                  ("k" + random.nextInt(200_000)).getBytes(StandardCharsets.UTF_8),
                  value);
            }
            tx.commit();
          }
        }
      }
      System.exit(0); // the stores stay open, as in an executor after spark.stop()
    }
  }
}
