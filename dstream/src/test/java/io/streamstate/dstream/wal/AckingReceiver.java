package io.streamstate.dstream.wal;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import org.apache.spark.storage.StorageLevel;
import org.apache.spark.streaming.receiver.Receiver;

/**
 * A reliable receiver for {@link ReceiverWalKillIT}: blocks of {@value #BLOCK} ids {@code run * 1e9
 * + counter} ({@code run} from the system property {@value #RUN_PROPERTY} of the driver JVM, since
 * the receiver object itself comes back from the checkpoint on recovery), each stored with the
 * blocking {@code store(Iterator)} (the block is in the receiver's write-ahead log and its metadata
 * in the driver's when it returns), then appended to the acknowledged file with an fsync: an
 * acknowledged id is one the source may forget.
 */
final class AckingReceiver extends Receiver<Long> {
  private static final long serialVersionUID = 1L;
  static final String RUN_PROPERTY = "walit.run";
  static final int BLOCK = 50;

  /**
   * Set by the driver before a graceful stop (same JVM in local mode): the producer stores no more
   * blocks, so that the stop does not race Spark's own (see {@link ReceiverWalDriver}).
   */
  private static volatile boolean draining;

  private static final java.util.concurrent.CountDownLatch DRAINED =
      new java.util.concurrent.CountDownLatch(1);

  private final String ackFile;

  /** Stops storing blocks; waits up to 30 s for the block in progress to be acknowledged. */
  static boolean drain() throws InterruptedException {
    draining = true;
    return DRAINED.await(30, java.util.concurrent.TimeUnit.SECONDS);
  }

  AckingReceiver(String ackFile) {
    super(StorageLevel.MEMORY_AND_DISK_SER());
    this.ackFile = ackFile;
  }

  @Override
  public void onStart() {
    Thread producer = new Thread(this::produce, "acking-receiver");
    producer.setDaemon(true);
    producer.start();
  }

  @Override
  public void onStop() {
    // The producer sees isStopped().
  }

  private void produce() {
    long base = Long.getLong(RUN_PROPERTY) * 1_000_000_000L;
    long counter = 0;
    try (FileChannel ack =
        FileChannel.open(
            Path.of(ackFile),
            StandardOpenOption.CREATE,
            StandardOpenOption.WRITE,
            StandardOpenOption.APPEND)) {
      while (!isStopped() && !draining) {
        List<Long> ids = new ArrayList<>(BLOCK);
        StringBuilder lines = new StringBuilder();
        for (int i = 0; i < BLOCK; i++) {
          long id = base + counter++;
          ids.add(id);
          lines.append(id).append('\n');
        }
        store(ids.iterator());
        ack.write(ByteBuffer.wrap(lines.toString().getBytes(StandardCharsets.US_ASCII)));
        ack.force(false);
        Thread.sleep(20);
      }
      if (draining) {
        DRAINED.countDown();
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (IOException | RuntimeException e) {
      if (!isStopped()) {
        stop("The acking receiver failed", e);
      }
    }
  }
}
