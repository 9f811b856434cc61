package io.streamstate.dstream.wal;

import io.streamstate.core.ProcessResources;
import java.nio.ByteBuffer;
import java.util.Iterator;
import org.apache.spark.SparkConf;
import org.apache.spark.streaming.util.WriteAheadLog;
import org.apache.spark.streaming.util.WriteAheadLogRecordHandle;

/**
 * Spark Streaming's write-ahead log on streamstate's storage (see dstream/README.md): records
 * appended to a journal with group commit and hedged late appends on HDFS and local disk, written
 * as segment objects with create-if-absent on S3; every record self-validating; {@code clean}
 * without listing on the write path. Use {@link StreamStateDriverWriteAheadLog} for {@code
 * spark.streaming.driver.writeAheadLog.class} and {@link StreamStateReceiverWriteAheadLog} for
 * {@code spark.streaming.receiver.writeAheadLog.class}, with {@value WalSettings#DIR} set.
 */
public abstract class StreamStateWriteAheadLog extends WriteAheadLog {
  private final WalLog log;
  private final Runnable release;
  private boolean closed;

  protected StreamStateWriteAheadLog(SparkConf conf, String role) {
    this(WalSettings.from(conf, role), role, ProcessResources.shared());
  }

  private StreamStateWriteAheadLog(WalSettings settings, String role, ProcessResources resources) {
    this(WalLogs.of(resources).acquire(settings, role, resources), resources);
  }

  private StreamStateWriteAheadLog(WalLog log, ProcessResources resources) {
    this(log, () -> WalLogs.of(resources).release(log));
  }

  StreamStateWriteAheadLog(WalLog log, Runnable release) {
    this.log = log;
    this.release = release;
  }

  /** For tests: a log of {@code role} on {@code storage}, of its own (no process registry). */
  static StreamStateWriteAheadLog onStorage(
      io.streamstate.core.storage.Storage storage,
      WalSettings settings,
      String role,
      ProcessResources resources) {
    WalLog log = new WalLog(storage, role, settings, resources);
    return new StreamStateWriteAheadLog(log, log::close) {};
  }

  @Override
  public WriteAheadLogRecordHandle write(ByteBuffer record, long time) {
    checkOpen();
    return log.write(record, time);
  }

  @Override
  public ByteBuffer read(WriteAheadLogRecordHandle handle) {
    checkOpen();
    if (!(handle instanceof WalRecordHandle ours)) {
      throw new IllegalArgumentException(
          "Not a handle of the streamstate write-ahead log: "
              + handle
              + " (was the log class changed while blocks were unprocessed?)");
    }
    return log.read(ours);
  }

  @Override
  public Iterator<ByteBuffer> readAll() {
    checkOpen();
    return log.readAll().iterator();
  }

  @Override
  public void clean(long threshTime, boolean waitForCompletion) {
    checkOpen();
    log.clean(threshTime, waitForCompletion);
  }

  @Override
  public synchronized void close() {
    if (!closed) {
      closed = true;
      release.run();
    }
  }

  private synchronized void checkOpen() {
    if (closed) {
      throw new IllegalStateException("This write-ahead log instance is closed");
    }
  }
}
