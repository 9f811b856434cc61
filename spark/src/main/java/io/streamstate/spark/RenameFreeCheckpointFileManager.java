package io.streamstate.spark;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;

/**
 * The checkpoint file manager under its first name, kept so that existing configurations ({@code
 * spark.sql.streaming.checkpointFileManagerClass=io.streamstate.spark.RenameFreeCheckpointFileManager})
 * and checkpoints go on working unchanged: the same manager, with the same behaviour and files.
 *
 * <p>The class extends its namesake in {@code io.streamstate.spark.checkpoint}, which it can name
 * only fully qualified (an import would clash with its own name).
 *
 * @deprecated set {@code
 *     spark.sql.streaming.checkpointFileManagerClass=io.streamstate.spark.checkpoint.RenameFreeCheckpointFileManager}
 *     instead.
 */
@Deprecated
public class RenameFreeCheckpointFileManager
    extends io.streamstate.spark.checkpoint.RenameFreeCheckpointFileManager {
  /** The constructor Spark calls ({@code CheckpointFileManager.create}). */
  public RenameFreeCheckpointFileManager(Path path, Configuration hadoopConf) {
    super(path, hadoopConf);
  }
}
