package io.streamstate.core.journal;

import io.streamstate.core.error.OutcomeUnknownException;
import io.streamstate.core.storage.AppendableFile;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * An appendable file in memory, as strict as the contract: a closed or failed file refuses appends;
 * an append can be held (a stalled pipeline) or made to fail.
 */
final class FakeAppendableFile implements AppendableFile {
  private final String name;
  private volatile long length;
  private volatile boolean open = true;
  private volatile CountDownLatch gate;
  private volatile boolean failNext;
  final CountDownLatch appendStarted = new CountDownLatch(1);
  final AtomicInteger closes = new AtomicInteger();

  FakeAppendableFile(String name) {
    this.name = name;
  }

  /** Holds every append from now on until {@link #release}. */
  void hold() {
    gate = new CountDownLatch(1);
  }

  void release() {
    gate.countDown();
  }

  /** The next append fails with an unknown outcome. */
  void failNextAppend() {
    failNext = true;
  }

  @Override
  public String name() {
    return name;
  }

  @Override
  public long append(byte[] bytes) {
    appendStarted.countDown();
    CountDownLatch g = gate;
    if (g != null) {
      try {
        if (!g.await(30, TimeUnit.SECONDS)) {
          throw new IllegalStateException("never released");
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException(e);
      }
    }
    synchronized (this) {
      if (!open) {
        throw new IllegalStateException(name + " is closed");
      }
      if (failNext) {
        open = false;
        throw new OutcomeUnknownException("injected failure appending to " + name);
      }
      long offset = length;
      length += bytes.length;
      return offset;
    }
  }

  @Override
  public long length() {
    return length;
  }

  @Override
  public boolean isOpen() {
    return open;
  }

  @Override
  public void close() {
    open = false;
    closes.incrementAndGet();
  }
}
