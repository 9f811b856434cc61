package io.streamstate.cli;

import io.streamstate.cli.repartition.SparkConvert;
import io.streamstate.core.error.ConflictException;
import java.io.PrintWriter;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code streamstate convert CHECKPOINT --to streamstate|rocksdb}: moves a stopped query's state to
 * another state store provider, which Spark pins in the offset log and so cannot change by
 * configuration. The work is the spark adapter's {@code OfflineConvert} (Spark 4.2's rewriter
 * steps: the old provider reads, the new one writes), run in a local Spark session; this class only
 * parses and reports, and loads no Spark class itself.
 */
@Command(
    name = "convert",
    mixinStandardHelpOptions = true,
    description = {
      "Moves the state of a stopped query to another state store provider: from Spark's"
          + " HDFS-backed or RocksDB provider (with or without changelog checkpointing) to"
          + " streamstate's, and from streamstate's to Spark's RocksDB provider. Adds a batch to"
          + " the offset and commit logs that pins the new provider class, with every store's"
          + " rows of the last committed batch written through the new provider; the query's"
          + " next run starts after it, on the new provider. Replaces nothing: the old"
          + " provider's files stay. Needs Spark 4.2 on the classpath (bin/streamstate takes"
          + " $SPARK_HOME/jars) and runs a local Spark session. A conversion that failed half"
          + " way is completed by running it again.",
      ""
    },
    footer = {
      "",
      "Exit codes: 0 done, 1 refused (the last batch did not commit), 2 usage (also: not a"
          + " checkpoint, a provider pair it cannot convert, already on that provider, no Spark"
          + " 4.2 on the classpath), 3 could not read or write."
    })
final class ConvertCommand implements Callable<Integer> {
  @Spec CommandSpec spec;

  @Mixin CheckpointOptions checkpoint;

  @Option(
      names = "--to",
      required = true,
      paramLabel = "PROVIDER",
      description =
          "streamstate (io.streamstate.spark.StreamStateProvider) or rocksdb (Spark's"
              + " RocksDBStateStoreProvider). hdfs (Spark's HDFS-backed provider) is refused:"
              + " Spark's rewriter opens new stores empty, which that provider does not support.")
  String to;

  @Option(
      names = "--out",
      paramLabel = "DST",
      description =
          "Convert a copy: migrate CHECKPOINT to DST first (every file read back and compared;"
              + " resumable, as the migrate command), then convert DST. CHECKPOINT is not written.")
  String out;

  @Mixin OfflineRewriteOptions rewrite;

  @Override
  public Integer call() {
    PrintWriter printer = spec.commandLine().getOut();
    String location = checkpoint.location;
    if (out != null) {
      SparkConvert.providerClass(to); // a wrong --to is refused before anything is copied
      MigrateCommand.copy(checkpoint, out, -1, printer, spec.commandLine().getErr());
      location = out;
    }
    SparkConvert.Result result;
    try {
      result =
          SparkConvert.run(location, checkpoint.conf, to, !rewrite.skipUncommitted, rewrite.master);
    } catch (NoClassDefFoundError e) {
      throw new IllegalArgumentException(
          "convert needs Spark 4.2 on the classpath (set SPARK_HOME for bin/streamstate): "
              + e.getMessage());
    } catch (IllegalStateException e) {
      throw new ConflictException(e.getMessage(), e);
    }
    printer.println(
        location
            + ": state of batch "
            + result.readBatch()
            + " ("
            + result.from()
            + ", "
            + result.partitions()
            + " partitions) rewritten for "
            + result.to()
            + " as batch "
            + result.batch()
            + " (checkpoint format "
            + result.checkpointFormat()
            + "); the query's next run starts after it, on "
            + result.to()
            + ". Nothing was replaced: the files of "
            + result.from()
            + " stay.");
    printer.flush();
    return ExitCodes.OK;
  }
}
