package io.streamstate.cli;

import io.streamstate.cli.checkpoint.Checkpoint;
import io.streamstate.cli.checkpoint.LogEntries;
import io.streamstate.cli.checkpoint.RecoveryPoint;
import io.streamstate.cli.checkpoint.SparkLog;
import io.streamstate.cli.checkpoint.StateDirectory;
import io.streamstate.cli.checkpoint.StoreInventory;
import io.streamstate.cli.dump.SparkDump;
import io.streamstate.cli.inspect.Inspection;
import io.streamstate.core.ProcessResources;
import io.streamstate.core.error.CorruptFileException;
import java.io.PrintWriter;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code streamstate dump CHECKPOINT --operator N --partition P}: the rows of one store partition,
 * decoded with the checkpoint's schema by Spark's own state data source, as JSON lines. This class
 * checks the request against what the checkpoint holds (operator, store name, partition count, the
 * versions kept), with the readers {@code inspect} uses and without Spark, so that a wrong request
 * fails fast in one line; {@link SparkDump} reads the rows in a local Spark session. Reads only.
 */
@Command(
    name = "dump",
    mixinStandardHelpOptions = true,
    description = {
      "Prints the rows of one store partition of a stateful operator as JSON lines (one object"
          + " per row: the key and value columns of Spark's state data source, decoded with the"
          + " checkpoint's schema), sorted by key. Reads through Spark's state data source"
          + " (format \"statestore\") in a local Spark session, for streamstate's provider and"
          + " Spark's HDFS-backed and RocksDB providers alike: needs Spark 4.2 on the classpath"
          + " (bin/streamstate takes $SPARK_HOME/jars). Reads only.",
      ""
    },
    footer = {
      "",
      "Exit codes: 0 done, 2 usage (also: no such operator, store, partition, or a version the"
          + " checkpoint does not keep; no Spark 4.2 on the classpath), 3 the state could not be"
          + " read."
    })
final class DumpCommand implements Callable<Integer> {
  @Spec CommandSpec spec;

  @Mixin CheckpointOptions checkpoint;

  @Option(
      names = "--operator",
      required = true,
      paramLabel = "N",
      description = "The stateful operator's id (inspect lists them).")
  long operator;

  @Option(
      names = "--partition",
      required = true,
      paramLabel = "P",
      description = "The partition (0 to the batch's number of shuffle partitions - 1).")
  int partition;

  @Option(
      names = "--version",
      paramLabel = "V",
      description =
          "The store version: the state after batch V - 1 (default: the version a restart loads,"
              + " the last committed batch's + 1).")
  Long version;

  @Option(
      names = "--store",
      paramLabel = "NAME",
      defaultValue = "default",
      description =
          "The store name (default: ${DEFAULT-VALUE}; a stream-stream join's are"
              + " left-keyToNumValues, left-keyWithIndexToValue, right-...).")
  String store;

  @Option(
      names = "--limit",
      paramLabel = "L",
      description = "Print at most L rows (the first L by key).")
  Long limit;

  @Option(
      names = "--key-prefix",
      paramLabel = "S",
      description =
          "Keep only rows whose key's first field, as Spark casts it to a string, starts with S.")
  String keyPrefix;

  @Option(
      names = "--master",
      defaultValue = "local[1]",
      description = "The Spark master of the session that reads (default: ${DEFAULT-VALUE}).")
  String master;

  @Override
  public Integer call() {
    if (limit != null && limit < 0) {
      throw new IllegalArgumentException("--limit must not be negative, was " + limit);
    }
    SparkDump.Request request;
    try (ProcessResources resources = new ProcessResources("streamstate-cli");
        Checkpoint cp = checkpoint.open(resources)) {
      request = check(cp);
    }
    PrintWriter out = spec.commandLine().getOut();
    try {
      SparkDump.run(request, out::println);
    } catch (NoClassDefFoundError e) {
      throw new IllegalArgumentException(
          "dump needs Spark 4.2 on the classpath (set SPARK_HOME for bin/streamstate): "
              + e.getMessage());
    }
    out.flush();
    return ExitCodes.OK;
  }

  /** The request, once the checkpoint is known to hold the store and version asked for. */
  private SparkDump.Request check(Checkpoint cp) {
    String where = cp.describe();
    RecoveryPoint recovery = RecoveryPoint.of(cp.commits());
    if (recovery.lastCommittedBatch() == null) {
      throw new IllegalArgumentException(where + " has no committed batch: no state to dump");
    }
    Map<StateDirectory.StoreKey, StoreInventory.Store> stores =
        StoreInventory.of(cp.state(), cp.segments());
    Set<Long> operators = new TreeSet<>();
    Set<String> names = new TreeSet<>();
    Set<Integer> partitions = new TreeSet<>();
    for (StateDirectory.StoreKey k : stores.keySet()) {
      operators.add(k.operator());
      if (k.operator() == operator) {
        names.add(k.storeNameOrDefault());
        partitions.add(k.partition());
      }
    }
    if (!operators.contains(operator)) {
      throw new IllegalArgumentException(
          where + " has no stateful operator " + operator + "; its operators: " + list(operators));
    }
    if (!names.contains(store)) {
      throw new IllegalArgumentException(
          "operator "
              + operator
              + " of "
              + where
              + " has no store '"
              + store
              + "'; its stores: "
              + String.join(", ", names));
    }
    long v = version == null ? recovery.version() : version;
    int count = partitionCount(cp, v - 1, partitions);
    if (partition < 0 || partition >= count) {
      throw new IllegalArgumentException(
          "operator "
              + operator
              + " of "
              + where
              + " has "
              + count
              + " partitions (0-"
              + (count - 1)
              + "): no partition "
              + partition);
    }
    StateDirectory.StoreKey key =
        new StateDirectory.StoreKey(operator, partition, store.equals("default") ? null : store);
    StoreInventory.Store files = stores.get(key);
    if (files == null) {
      throw new IllegalArgumentException(
          where + " has no file of store " + key.display() + " (" + store + ")");
    }
    Inspection.Store s = Inspection.storeOf(cp, files, recovery);
    if (!s.recoverable()) {
      throw new CorruptFileException(
          key.display()
              + " of "
              + where
              + " cannot be loaded at version "
              + recovery.version()
              + ": "
              + s.problem()
              + " (streamstate verify names the damage)");
    }
    long oldest = Math.max(1, s.oldestRecoverableVersion());
    // Spark's state data source reads batch V - 1's offset and commit entries too.
    for (SparkLog log : new SparkLog[] {cp.offsets(), cp.commits()}) {
      if (log.first() != null) {
        oldest = Math.max(oldest, log.first() + 1);
      }
    }
    long newest = recovery.version();
    if (v < oldest || v > newest) {
      throw new IllegalArgumentException(
          "Cannot dump version "
              + v
              + " of "
              + key.display()
              + " in "
              + where
              + ": the checkpoint keeps versions "
              + (oldest == newest ? String.valueOf(oldest) : oldest + "-" + newest)
              + " of it (version V is the state after batch V - 1; a restart loads version "
              + newest
              + ")");
    }
    boolean journaled =
        cp.offsets().layout().contains("journal") || cp.commits().layout().contains("journal");
    return new SparkDump.Request(
        checkpoint.location,
        checkpoint.conf,
        v - 1,
        operator,
        store,
        partition,
        keyPrefix,
        limit,
        journaled,
        master);
  }

  /**
   * The number of partitions batch {@code batch} ran on: pinned in its offset entry (a repartition
   * changes it from one batch to the next), else as many as the operator has stores.
   */
  private static int partitionCount(Checkpoint cp, long batch, Set<Integer> partitions) {
    SparkLog.Entry entry = cp.offsets().entries().get(batch);
    if (entry != null && entry.whole()) {
      try {
        String pinned =
            LogEntries.parseOffset(entry.text()).conf().get(LogEntries.SHUFFLE_PARTITIONS);
        if (pinned != null) {
          return Integer.parseInt(pinned);
        }
      } catch (RuntimeException unparseable) {
        // counted from the stores below
      }
    }
    return partitions.isEmpty()
        ? 0
        : partitions.stream().mapToInt(Integer::intValue).max().getAsInt() + 1;
  }

  private static String list(Set<Long> ids) {
    StringBuilder sb = new StringBuilder();
    for (long id : ids) {
      sb.append(sb.length() == 0 ? "" : ", ").append(id);
    }
    return sb.toString();
  }
}
