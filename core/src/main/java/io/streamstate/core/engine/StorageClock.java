package io.streamstate.core.engine;

import io.streamstate.core.ProcessResources;
import io.streamstate.core.storage.ContentWriter;
import io.streamstate.core.storage.FileInfo;
import io.streamstate.core.storage.Storage;
import io.streamstate.core.storage.Storages;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.WeakHashMap;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The storage's own time, the one clock every decision by a file's age is judged by
 * (docs/protocol.md, "Clocks"): a file's modification time is stamped by the storage (the NameNode,
 * the object store, the local kernel), so its age is only meaningful against the same clock. A
 * process learns it by writing a probe file under {@value #PROBE_DIR} and reading back its
 * modification time, at most once a minute, and carries it forward with the monotonic clock; so
 * neither the skew of this process's wall clock nor a step of it moves an age decision. The wall
 * clock only serves to report a skew ({@value #SKEW_WARN_MILLIS} ms or more, a WARN naming it).
 *
 * <p>One per storage root per process ({@link #of}), shared by retention, the segment sweep, the
 * snapshot uploader and the segment journal's writer.
 *
 * @apiNote Internal: public for the engine's packages only.
 */
public final class StorageClock {
  private static final Logger LOG = LoggerFactory.getLogger(StorageClock.class);

  /** Where probe files go: one per probe, deleted at once (leftovers once older than a day). */
  public static final String PROBE_DIR = "_clock/";

  /** How long a probe's reading is used before the next probe. */
  static final long PROBE_INTERVAL_MILLIS = 60_000;

  /** A skew at least this large between the wall clock and storage time is reported. */
  public static final long SKEW_WARN_MILLIS = 5_000;

  /** Probe files left by a failed delete go once storage time is this far past them. */
  private static final long LEFTOVER_PROBE_MILLIS = TimeUnit.DAYS.toMillis(1);

  private final Storage storage;
  private final LongSupplier wallClock;
  private final LongSupplier monotonicNanos;
  private final Executor background;
  private final Object probeLock = new Object();
  private final AtomicBoolean refreshing = new AtomicBoolean();

  /** The last probe's reading; null until one succeeded. */
  private volatile Reading reading;

  /**
   * What a probe learned: storage time {@code storageMillis} at the monotonic instant {@code
   * atNanos} (never later than the storage's real time then), and the wall clock's skew.
   */
  private record Reading(long storageMillis, long atNanos, long wallSkewMillis) {
    long storageNow(long nanos) {
      return storageMillis + TimeUnit.NANOSECONDS.toMillis(nanos - atNanos);
    }
  }

  /** The clocks of a process by storage root (a component of its {@link ProcessResources}). */
  private static final class ByStorage {
    final Map<Storage, StorageClock> clocks = new WeakHashMap<>();
    LongSupplier wallClock = System::currentTimeMillis;
    LongSupplier monotonicNanos = System::nanoTime;
  }

  /**
   * @param wallClock this process's wall clock (epoch milliseconds): only reported against storage
   *     time, and used by {@link #estimateNow} before the first probe
   * @param monotonicNanos a monotonic clock ({@link System#nanoTime}) carrying readings forward
   * @param background where {@link #estimateNow} refreshes a stale reading
   */
  public StorageClock(
      Storage storage, LongSupplier wallClock, LongSupplier monotonicNanos, Executor background) {
    this.storage = storage;
    this.wallClock = wallClock;
    this.monotonicNanos = monotonicNanos;
    this.background = background;
  }

  /** The clock of {@code storage} in {@code resources}'s process. */
  public static StorageClock of(ProcessResources resources, Storage storage) {
    ByStorage all = resources.component(ByStorage.class, ByStorage::new);
    synchronized (all) {
      LongSupplier wall = all.wallClock;
      LongSupplier monotonic = all.monotonicNanos;
      return all.clocks.computeIfAbsent(
          storage,
          s -> new StorageClock(s, wall, monotonic, resources.cachedPool("storage-clock")));
    }
  }

  /**
   * Makes the storage clocks {@code resources} makes from now on read {@code wallClock} (epoch
   * milliseconds) and {@code monotonicNanos} as this process's clocks: for tests that skew one
   * process's clock, or move time on.
   */
  public static void useClocks(
      ProcessResources resources, LongSupplier wallClock, LongSupplier monotonicNanos) {
    ByStorage all = resources.component(ByStorage.class, ByStorage::new);
    synchronized (all) {
      all.wallClock = wallClock;
      all.monotonicNanos = monotonicNanos;
    }
  }

  /**
   * Storage time now, for deciding whether a file is old enough to delete: never later than the
   * storage's real time (up to one probe's round trip earlier). Probes if the last reading is a
   * minute old. Empty if storage time cannot be learned (the probe failed): decide nothing by age.
   */
  public OptionalLong now() {
    Reading r = fresh();
    return r == null ? OptionalLong.empty() : OptionalLong.of(r.storageNow(monotonicNanos()));
  }

  /**
   * Whether {@code file} is at least {@code millis} old by storage time; false if storage time
   * cannot be learned.
   */
  public boolean isOlderThan(FileInfo file, long millis) {
    OptionalLong now = now();
    return now.isPresent() && file.isSurelyOlderThan(now.getAsLong(), millis);
  }

  /**
   * Storage time now as far as known without waiting for the storage, for writers on the commit
   * path: the last reading carried forward, or this process's wall clock before the first one
   * (whose probe then starts in the background). A reading is not refreshed from here: the
   * monotonic clock carries it forward, and deleters refresh it when they judge ages, so the commit
   * path adds no storage request beyond the first probe.
   */
  public long estimateNow() {
    Reading r = reading;
    if (r == null && refreshing.compareAndSet(false, true)) {
      try {
        background.execute(
            () -> {
              try {
                fresh();
              } finally {
                refreshing.set(false);
              }
            });
      } catch (RuntimeException rejected) {
        refreshing.set(false); // the process is closing
      }
    }
    return r == null ? wallClock.getAsLong() : r.storageNow(monotonicNanos());
  }

  /** The wall clock's skew against storage time at the last probe (storage minus wall). */
  public OptionalLong lastWallSkewMillis() {
    Reading r = reading;
    return r == null ? OptionalLong.empty() : OptionalLong.of(r.wallSkewMillis());
  }

  private long monotonicNanos() {
    return monotonicNanos.getAsLong();
  }

  private boolean isStale(Reading r) {
    return monotonicNanos() - r.atNanos() >= TimeUnit.MILLISECONDS.toNanos(PROBE_INTERVAL_MILLIS);
  }

  /** The reading, probing first if it is stale; null if the probe failed. */
  private Reading fresh() {
    Reading r = reading;
    if (r != null && !isStale(r)) {
      return r;
    }
    synchronized (probeLock) {
      r = reading;
      if (r != null && !isStale(r)) {
        return r; // another thread probed meanwhile
      }
      r = probe();
      if (r != null) {
        reading = r;
      }
      return r;
    }
  }

  /**
   * Writes a probe file and reads its modification time back. The storage stamped it between the
   * create's start and the listing's end; taking the stamp as storage time at the listing's end
   * errs towards younger files (safe).
   */
  private Reading probe() {
    long wallBefore = wallClock.getAsLong();
    String name =
        PROBE_DIR
            + String.format("%020d", Math.max(0, wallBefore))
            + "-"
            + HexFormat.of().toHexDigits(CommitIds.next());
    try {
      storage.create(name, ContentWriter.ofBytes(new byte[0]));
      List<FileInfo> probes = storage.list(PROBE_DIR);
      long atNanos = monotonicNanos();
      long wallAfter = wallClock.getAsLong();
      FileInfo mine = null;
      for (FileInfo f : probes) {
        if (f.name().equals(name)) {
          mine = f;
        }
      }
      if (mine == null) {
        LOG.warn(
            "Cannot learn the storage time of {}: the probe file {} is not listed after its"
                + " create; no file is deleted by its age until a probe succeeds",
            storage.describe(),
            name);
        return null;
      }
      long stamp = mine.lastModifiedMillis();
      long skew = stamp - (wallBefore + (wallAfter - wallBefore) / 2);
      if (Math.abs(skew) >= SKEW_WARN_MILLIS) {
        LOG.warn(
            "The clock of this process is {} ms {} the time of storage {} (probe file {}): file"
                + " ages for retention and sweeps are judged by storage time, so this is safe;"
                + " but check this host's time synchronisation (NTP)",
            Math.abs(skew),
            skew < 0 ? "ahead of" : "behind",
            storage.describe(),
            name);
      }
      removeProbes(probes, name, stamp);
      return new Reading(stamp, atNanos, skew);
    } catch (RuntimeException e) {
      LOG.warn(
          "Cannot learn the storage time of {} (probe file {}): {}; no file is deleted by its age"
              + " until a probe succeeds",
          storage.describe(),
          name,
          e.toString());
      return null;
    }
  }

  /** Deletes this probe, and probes a failed delete left behind long ago. */
  private void removeProbes(List<FileInfo> probes, String mine, long stamp) {
    List<String> toDelete = new ArrayList<>();
    toDelete.add(mine);
    for (FileInfo f : probes) {
      if (!f.name().equals(mine) && stamp - f.lastModifiedMillis() >= LEFTOVER_PROBE_MILLIS) {
        toDelete.add(f.name());
      }
    }
    try {
      Storages.deleteAll(storage, toDelete);
    } catch (RuntimeException e) {
      // A leftover probe harms nothing: a later probe deletes it.
      LOG.debug("Cannot delete probe files {} of {}: {}", toDelete, storage.describe(), e);
    }
  }
}
