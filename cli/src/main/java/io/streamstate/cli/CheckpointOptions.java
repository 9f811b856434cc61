package io.streamstate.cli;

import io.streamstate.cli.checkpoint.Checkpoint;
import io.streamstate.core.ProcessResources;
import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * What every command that reads a checkpoint takes: its location, and Hadoop settings on top of the
 * configuration found on the classpath ({@code core-site.xml} and {@code hdfs-site.xml} in {@code
 * $HADOOP_CONF_DIR}, which {@code bin/streamstate} puts there).
 */
public final class CheckpointOptions {
  @Parameters(
      index = "0",
      paramLabel = "CHECKPOINT",
      description =
          "The checkpoint location of a Spark streaming query: a path or a URI"
              + " (file:, hdfs:, s3a:, ...). A path without a scheme is on the default file"
              + " system (fs.defaultFS); a relative one, on local disk.")
  String location;

  @Option(
      names = "--conf",
      paramLabel = "KEY=VALUE",
      description =
          "A Hadoop setting on top of $HADOOP_CONF_DIR's (repeatable), for example"
              + " fs.s3a.endpoint=... A key starting with spark.hadoop. is taken without that"
              + " prefix, as Spark takes it.")
  Map<String, String> conf = new LinkedHashMap<>();

  /** The Hadoop configuration: the classpath's, then {@code --conf}. */
  public Configuration hadoopConf() {
    Configuration c = new Configuration();
    for (Map.Entry<String, String> e : conf.entrySet()) {
      String key = e.getKey().startsWith("spark.hadoop.") ? e.getKey().substring(13) : e.getKey();
      c.set(key, e.getValue());
    }
    return c;
  }

  /** Opens the checkpoint (see {@link Checkpoint#open}). */
  public Checkpoint open(ProcessResources resources) {
    return Checkpoint.open(location, hadoopConf(), resources);
  }
}
