package io.streamstate.spark.reliability;

import io.streamstate.spark.HedgedFileCommitProtocol;
import org.apache.hadoop.mapreduce.JobContext;
import org.apache.spark.internal.io.FileCommitProtocol;
import scala.collection.immutable.Seq;

/**
 * {@link HedgedFileCommitProtocol} that waits on the driver to be killed at a chosen point of one
 * batch's job commit (Spark's {@code FileStreamSink} names each job after its batch): before {@code
 * _spark_metadata/<batch>} is written (the batch's tasks have published their files, which nothing
 * lists yet), or after it (the batch is in the sink's log, not in Spark's commit log).
 */
public class HoldingFileCommitProtocol extends HedgedFileCommitProtocol {
  private static final long serialVersionUID = 1L;

  /** The batch whose manifest the driver waits before; -1: none. */
  static volatile long holdBeforeManifestOfBatch = -1;

  /** The batch whose manifest the driver waits after; -1: none. */
  static volatile long holdAfterManifestOfBatch = -1;

  private final long batch;

  public HoldingFileCommitProtocol(String jobId, String path) {
    super(jobId, path);
    this.batch = Long.parseLong(jobId);
  }

  @Override
  public void commitJob(JobContext jobContext, Seq<FileCommitProtocol.TaskCommitMessage> commits) {
    if (batch == holdBeforeManifestOfBatch) {
      ReliabilityQuery.holdForKill("before the manifest of batch " + batch);
    }
    super.commitJob(jobContext, commits);
    if (batch == holdAfterManifestOfBatch) {
      ReliabilityQuery.holdForKill("after the manifest of batch " + batch);
    }
  }
}
