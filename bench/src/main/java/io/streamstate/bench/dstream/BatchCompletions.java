package io.streamstate.bench.dstream;

import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.apache.spark.streaming.scheduler.BatchInfo;
import org.apache.spark.streaming.scheduler.StreamingListener;
import org.apache.spark.streaming.scheduler.StreamingListenerBatchCompleted;

/** The batches a streaming context completed, in order, for the thread that drives its clock. */
final class BatchCompletions implements StreamingListener {
  private final LinkedBlockingQueue<BatchInfo> completed = new LinkedBlockingQueue<>();

  @Override
  public void onBatchCompleted(StreamingListenerBatchCompleted batch) {
    completed.add(batch.batchInfo());
  }

  /** The next completed batch; fails after {@code timeoutSeconds}. */
  BatchInfo next(long timeoutSeconds) throws InterruptedException {
    BatchInfo info = completed.poll(timeoutSeconds, TimeUnit.SECONDS);
    if (info == null) {
      throw new IllegalStateException("No batch completed within " + timeoutSeconds + " s");
    }
    return info;
  }
}
