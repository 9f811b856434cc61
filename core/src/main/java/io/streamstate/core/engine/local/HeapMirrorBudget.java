package io.streamstate.core.engine.local;

import java.util.concurrent.atomic.AtomicLong;

/**
 * The heap a process's {@link HeapMirror}s may hold together, and one mirror at most: a family
 * larger than that stays in RocksDB alone (a large state is what RocksDB is for; a small one is
 * read faster from the heap). Charged as entries go in, given back as they go or a mirror drops.
 */
public final class HeapMirrorBudget {
  private final long capBytes;
  private final long familyCapBytes;
  private final AtomicLong used = new AtomicLong();

  /**
   * @param capBytes the heap all mirrors of the process may hold; 0: no mirrors
   * @param familyCapBytes the heap one family's mirror may hold
   */
  public HeapMirrorBudget(long capBytes, long familyCapBytes) {
    if (capBytes < 0 || familyCapBytes < 0) {
      throw new IllegalArgumentException(
          "heap mirror caps must be >= 0, got " + capBytes + " and " + familyCapBytes);
    }
    this.capBytes = capBytes;
    this.familyCapBytes = Math.min(capBytes, familyCapBytes);
  }

  /** Whether a mirror may be made at all. */
  boolean enabled() {
    return familyCapBytes > 0;
  }

  /** Charges {@code delta} more bytes, if the process's cap allows (a mirror checks its own). */
  boolean tryCharge(long delta) {
    while (true) {
      long now = used.get();
      if (now + delta > capBytes) {
        return false;
      }
      if (used.compareAndSet(now, now + delta)) {
        return true;
      }
    }
  }

  void release(long bytes) {
    used.addAndGet(-bytes);
  }

  /** Bytes the process's mirrors hold now. */
  public long usedBytes() {
    return used.get();
  }

  public long capBytes() {
    return capBytes;
  }

  public long familyCapBytes() {
    return familyCapBytes;
  }
}
