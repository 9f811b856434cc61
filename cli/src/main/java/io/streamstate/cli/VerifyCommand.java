package io.streamstate.cli;

import io.streamstate.cli.checkpoint.Checkpoint;
import io.streamstate.cli.checkpoint.RecoveryPoint;
import io.streamstate.cli.deep.StoreRebuild;
import io.streamstate.cli.migrate.MigrationMarker;
import io.streamstate.cli.report.Progress;
import io.streamstate.cli.verify.Verification;
import io.streamstate.cli.verify.VerificationText;
import io.streamstate.core.ProcessResources;
import io.streamstate.core.error.StreamStateException;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.stream.Stream;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code streamstate verify CHECKPOINT}: reads every file a restart could read and says whether the
 * restart would succeed; with {@code --deep}, also rebuilds our stores ({@link StoreRebuild}) and
 * compares their keys with the recorded row counts. Reads only. Exit 0: nothing damaged; 1: damaged
 * (each file named).
 */
@Command(
    name = "verify",
    mixinStandardHelpOptions = true,
    description = {
      "Reads every file a restart of the query could read, each through the reader the restart"
          + " would use: Spark's offset and commit logs (whole, continuous, commits a prefix of"
          + " the offsets; log journals replayed, hedge copies as our manager reads them), and"
          + " every changelog, snapshot manifest, SST, segment and segment-journal record of"
          + " streamstate's stores, verified whole; then, per store, the lineage a restart loads"
          + " (from the version the commit log names down to a snapshot or version 0). Spark's"
          + " own providers' files are checked by name. Each damaged file is named with what is"
          + " wrong and what recovery would do. Reads only.",
      ""
    },
    footer = {
      "",
      "Exit codes: 0 clean, 1 damaged (or a migration to it has not finished), 2 usage (also:"
          + " not a checkpoint), 3 could not read."
    })
final class VerifyCommand implements Callable<Integer> {
  @Spec CommandSpec spec;

  @Mixin CheckpointOptions checkpoint;

  @Option(
      names = "--deep",
      description =
          "Also rebuild each recoverable store of streamstate's provider at the version a restart"
              + " loads, in a scratch RocksDB by the engine's own loader, and compare each column"
              + " family's keys with the row counts the provider recorded in the store. Needs"
              + " RocksDB (rocksdbjni, in $SPARK_HOME/jars) on the classpath.")
  boolean deep;

  @Override
  public Integer call() {
    PrintWriter out = spec.commandLine().getOut();
    long start = System.nanoTime();
    Verification.Result result;
    String incomplete;
    boolean deepClean = true;
    try (ProcessResources resources = new ProcessResources("streamstate-cli");
        Checkpoint cp = checkpoint.open(resources);
        Progress progress = Progress.onTerminal(spec.commandLine().getErr(), "verifying")) {
      incomplete =
          MigrationMarker.read(cp.root())
              .map(source -> MigrationMarker.incomplete(cp.describe(), source))
              .orElse(null);
      result = Verification.run(cp, progress);
      out.print(VerificationText.render(result, (System.nanoTime() - start) / 1_000_000));
      if (deep) {
        deepClean = rebuildStores(cp, resources, result, out);
      }
    }
    if (incomplete != null) {
      // Whatever the files say, a checkpoint a migration is still writing is not clean.
      out.println("INCOMPLETE: " + incomplete);
    }
    out.flush();
    return result.clean() && deepClean && incomplete == null ? ExitCodes.OK : ExitCodes.DAMAGED;
  }

  /**
   * {@code --deep}: each recoverable store of ours rebuilt and counted; one line per store. Returns
   * whether every rebuilt store holds the counts its provider recorded.
   */
  private static boolean rebuildStores(
      Checkpoint cp, ProcessResources resources, Verification.Result result, PrintWriter out) {
    RecoveryPoint recovery = RecoveryPoint.of(cp.commits());
    boolean clean = true;
    out.println();
    for (Verification.StoreVerdict v : result.stores()) {
      String store = v.key().display();
      if (!v.provider().equals("streamstate")) {
        out.println(
            "deep: "
                + store
                + " ("
                + v.provider()
                + "): not rebuilt (Spark's providers: their files are read only through Spark)");
        continue;
      }
      if (!v.recoverable()) {
        out.println("deep: " + store + ": not rebuilt (not recoverable, above)");
        continue;
      }
      Path scratch = null;
      try {
        scratch = Files.createTempDirectory("streamstate-verify-deep-");
        StoreRebuild.Result r =
            StoreRebuild.rebuild(
                resources,
                cp.stateStorage(),
                store,
                v.key().prefix(),
                v.version(),
                recovery.commitOf(v.key()),
                scratch);
        Map<String, long[]> mismatches = r.mismatches();
        if (!mismatches.isEmpty()) {
          clean = false;
          mismatches.forEach(
              (family, counts) ->
                  out.println(
                      "deep: MISMATCH "
                          + store
                          + " version "
                          + v.version()
                          + ": column family "
                          + family
                          + " holds "
                          + counts[0]
                          + " keys, its provider recorded "
                          + counts[1]));
        } else {
          out.println(
              "deep: "
                  + store
                  + " version "
                  + v.version()
                  + " rebuilt: "
                  + r.rows()
                  + (r.rows() == 1 ? " row (" : " rows (")
                  + families(r.counted())
                  + ")"
                  + (r.hasRecordedCounts()
                      ? ", as its provider recorded"
                      : "; no recorded counts to compare"));
        }
      } catch (StreamStateException e) {
        clean = false;
        out.println(
            "deep: FAILS "
                + store
                + " version "
                + v.version()
                + ": "
                + e.getMessage().replace('\n', ' '));
      } catch (NoClassDefFoundError | UnsatisfiedLinkError e) {
        throw new IllegalArgumentException(
            "verify --deep needs RocksDB (rocksdbjni, in $SPARK_HOME/jars) on the classpath: "
                + e.getMessage());
      } catch (IOException e) {
        throw new UncheckedIOException("Cannot create a scratch directory: " + e.getMessage(), e);
      } finally {
        deleteQuietly(scratch);
      }
    }
    return clean;
  }

  /** "default: 3, other: 1": the keys of each column family. */
  private static String families(Map<String, Long> counted) {
    StringBuilder sb = new StringBuilder();
    counted.forEach(
        (f, n) -> sb.append(sb.length() == 0 ? "" : ", ").append(f).append(": ").append(n));
    return sb.toString();
  }

  private static void deleteQuietly(Path dir) {
    if (dir == null || !Files.exists(dir)) {
      return;
    }
    try (Stream<Path> files = Files.walk(dir)) {
      files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
    } catch (IOException e) {
      // a scratch directory under the temporary directory: left for the system to clean
    }
  }
}
