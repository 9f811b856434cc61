package io.streamstate.dstream.wal;

import org.apache.spark.SparkConf;

/**
 * The receivers' write-ahead log (the received blocks): {@code
 * spark.streaming.receiver.writeAheadLog.class=io.streamstate.dstream.wal.StreamStateReceiverWriteAheadLog}.
 * Its files go under {@code <writeAheadLog.dir>/receiver/}; an executor's receivers share one
 * journal and its syncs.
 */
public final class StreamStateReceiverWriteAheadLog extends StreamStateWriteAheadLog {
  public StreamStateReceiverWriteAheadLog(SparkConf conf) {
    super(conf, "receiver");
  }
}
