package io.streamstate.cli;

import io.streamstate.cli.repartition.SparkRepartition;
import java.io.PrintWriter;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code streamstate repartition CHECKPOINT --partitions N}: Spark 4.2's offline state
 * repartitioning for a checkpoint of streamstate's provider, which Spark's own runner refuses by
 * provider class name. The work is the spark adapter's {@code OfflineRepartition} (Spark's runner
 * and rewriter steps, docs/decisions.md item 25), run in a local Spark session that {@link
 * SparkRepartition} starts; this class only parses and reports, and loads no Spark class itself, so
 * that the other commands run on a Hadoop classpath alone.
 */
@Command(
    name = "repartition",
    mixinStandardHelpOptions = true,
    description = {
      "Rewrites the state of a stopped query checkpointed with streamstate's provider into a new"
          + " number of partitions, as Spark 4.2's offline repartitioning does for its RocksDB"
          + " provider (spark.streamingCheckpointManager.repartition), which refuses ours by class"
          + " name. Adds a batch to the offset and commit logs that pins the new"
          + " spark.sql.shuffle.partitions; the query's next run starts after it, on the new count."
          + " Needs Spark 4.2 on the classpath (bin/streamstate takes $SPARK_HOME/jars) and runs"
          + " a local Spark session. A repartition that failed half way is completed by running it"
          + " again with the same count.",
      ""
    },
    footer = {
      "",
      "Exit codes: 0 done, 2 usage (also: not a checkpoint of streamstate's provider, the same"
          + " partition count, no Spark 4.2 on the classpath), 3 could not read or write."
    })
final class RepartitionCommand implements Callable<Integer> {
  @Spec CommandSpec spec;

  @Mixin CheckpointOptions checkpoint;

  @Option(
      names = "--partitions",
      required = true,
      paramLabel = "N",
      description = "The new number of partitions (spark.sql.shuffle.partitions of later runs).")
  int partitions;

  @Mixin OfflineRewriteOptions rewrite;

  @Override
  public Integer call() {
    if (partitions <= 0) {
      throw new IllegalArgumentException("--partitions must be positive, was " + partitions);
    }
    SparkRepartition.Result result;
    try {
      result =
          SparkRepartition.run(
              checkpoint.location,
              checkpoint.conf,
              partitions,
              !rewrite.skipUncommitted,
              rewrite.master);
    } catch (NoClassDefFoundError e) {
      throw new IllegalArgumentException(
          "repartition needs Spark 4.2 on the classpath (set SPARK_HOME for bin/streamstate): "
              + e.getMessage());
    }
    PrintWriter out = spec.commandLine().getOut();
    out.println(
        checkpoint.location
            + ": state of batch "
            + result.readBatch()
            + " rewritten into "
            + partitions
            + " partitions as batch "
            + result.batch()
            + " (checkpoint format "
            + result.checkpointFormat()
            + "); the query's next run starts after it");
    out.flush();
    return ExitCodes.OK;
  }
}
