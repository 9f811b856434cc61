package io.streamstate.dstream.wal;

import org.apache.spark.SparkConf;

/**
 * The driver's write-ahead log (the received-block metadata): {@code
 * spark.streaming.driver.writeAheadLog.class=io.streamstate.dstream.wal.StreamStateDriverWriteAheadLog}.
 * Its files go under {@code <writeAheadLog.dir>/driver/}.
 */
public final class StreamStateDriverWriteAheadLog extends StreamStateWriteAheadLog {
  public StreamStateDriverWriteAheadLog(SparkConf conf) {
    super(conf, "driver");
  }
}
