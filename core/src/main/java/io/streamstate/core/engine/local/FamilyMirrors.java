package io.streamstate.core.engine.local;

import io.streamstate.core.format.Changelog;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.LongSupplier;

/**
 * The heap mirrors of one local instance's column families ({@link HeapMirror}) and the rule for
 * when a full scan may try again to mirror a family that did not fit. Its one user is {@link
 * LocalDb}, which changes it at open, apply, full scan, family drop and close, under the store's
 * lock; {@link #get} is read from any thread.
 */
final class FamilyMirrors {
  /** Too large: retried once RocksDB estimates fewer keys than this; budget full: scans to skip. */
  private static final class Retry {
    /** Once RocksDB estimates fewer keys than the mirror held when refused; or -1. */
    long keysWhenTooLarge = -1;

    /** Otherwise (the process's budget was full): full scans to let pass, doubling each miss. */
    int scansToSkip;

    int nextSkip;
  }

  private static final int MAX_RETRY_SCANS = 64;

  private final HeapMirrorBudget budget;
  private final Map<String, HeapMirror> mirrors = new ConcurrentHashMap<>();

  /**
   * Per family that did not fit its mirror, when a full scan may try again: a large store's every
   * eviction scan would otherwise copy a mirror's worth of entries and drop them.
   */
  private final Map<String, Retry> retries = new HashMap<>();

  FamilyMirrors(HeapMirrorBudget budget) {
    this.budget = budget;
  }

  boolean enabled() {
    return budget.enabled();
  }

  /** The family's mirror, or null when its reads go to RocksDB. */
  HeapMirror get(String family) {
    return mirrors.get(family);
  }

  /** Whether every one of {@code families} is mirrored. */
  boolean coverAll(Collection<String> families) {
    return mirrors.keySet().containsAll(families);
  }

  /**
   * Each of {@code families}' published entries, in their order, or null unless every one is
   * mirrored.
   */
  Map<String, HeapMirror.Entries> entriesOfAll(Collection<String> families) {
    Map<String, HeapMirror.Entries> entries = new LinkedHashMap<>();
    for (String family : families) {
      HeapMirror mirror = mirrors.get(family);
      if (mirror == null) {
        return null;
      }
      entries.put(family, mirror.entries());
    }
    return entries;
  }

  /**
   * Whether a mirror holds more than half of one family's cap: a store that may soon outgrow its
   * mirror, whose RocksDB should not lag behind (see {@link WriteLag}).
   */
  boolean anyPastHalfItsCap() {
    long half = budget.familyCapBytes() / 2;
    for (HeapMirror mirror : mirrors.values()) {
      if (mirror.bytes() > half) {
        return true;
      }
    }
    return false;
  }

  /** Bytes the mirrors of {@code families} hold (0 for one not mirrored). */
  long bytesOf(Collection<String> families) {
    long bytes = 0;
    for (String family : families) {
      HeapMirror mirror = mirrors.get(family);
      if (mirror != null) {
        bytes += mirror.bytes();
      }
    }
    return bytes;
  }

  /** An empty mirror for a new family, or null with mirrors off. */
  HeapMirror newEmpty() {
    return budget.enabled() ? new HeapMirror(budget) : null;
  }

  /** Reads of {@code family} go to {@code mirror} (complete: empty or published) from now on. */
  void install(String family, HeapMirror mirror) {
    mirrors.put(family, mirror);
    retries.remove(family);
  }

  /**
   * Merges one version's changes of {@code family} into its mirror, if it has one; false if they
   * did not fit and the mirror was dropped (RocksDB alone from now on, until a scan tries again).
   */
  boolean apply(String family, List<Changelog.Change> changes) {
    HeapMirror mirror = mirrors.get(family);
    if (mirror == null || mirror.apply(changes)) {
      return true;
    }
    refused(family, mirror);
    drop(family);
    return false;
  }

  /**
   * A mirror for a full scan of {@code family} to fill, or null: mirrored already, mirrors off, or
   * not yet time to try again. {@code estimatedKeys} (RocksDB's estimate of the family's keys) is
   * asked only for a family refused as too large.
   */
  HeapMirror forScan(String family, LongSupplier estimatedKeys) {
    if (!budget.enabled() || mirrors.containsKey(family)) {
      return null;
    }
    Retry retry = retries.get(family);
    if (retry == null) {
      return new HeapMirror(budget);
    }
    if (retry.keysWhenTooLarge >= 0) {
      return estimatedKeys.getAsLong() < retry.keysWhenTooLarge ? new HeapMirror(budget) : null;
    }
    if (retry.scansToSkip == 0) {
      return new HeapMirror(budget);
    }
    retry.scansToSkip--;
    return null;
  }

  /**
   * A mirror for the scan that opening a restored instance makes of {@code family}, or null:
   * mirrors off, or {@code estimatedKeys} (RocksDB's estimate) more than one family's cap holds at
   * {@link HeapMirror#ENTRY_OVERHEAD} bytes an entry before its keys and values, which is then
   * remembered as a refusal: no full scan tries while RocksDB estimates as many.
   */
  HeapMirror forRestored(String family, long estimatedKeys) {
    if (!budget.enabled()) {
      return null;
    }
    if (estimatedKeys > budget.familyCapBytes() / HeapMirror.ENTRY_OVERHEAD) {
      tooLarge(family, estimatedKeys);
      return null;
    }
    return new HeapMirror(budget);
  }

  /**
   * The mirror an open's scan filled was refused: a family too large is remembered by {@code
   * estimatedKeys}, the estimate {@link #forRestored} was given, so that a full scan tries only
   * once RocksDB estimates fewer; a process budget that was full leaves the next full scan free to
   * try (what the open tried cost the scan it made anyway).
   */
  void refusedAtOpen(String family, HeapMirror mirror, long estimatedKeys) {
    if (mirror.refusal() == HeapMirror.Refusal.FAMILY_TOO_LARGE) {
      tooLarge(family, estimatedKeys);
    }
    mirror.release();
  }

  /** A full scan tries {@code family} again once RocksDB estimates fewer keys than {@code keys}. */
  private void tooLarge(String family, long keys) {
    retries.computeIfAbsent(family, f -> new Retry()).keysWhenTooLarge = keys;
  }

  /** {@code mirror} of {@code family} refused what it was given: when may a scan try again. */
  void refused(String family, HeapMirror mirror) {
    Retry retry = retries.computeIfAbsent(family, f -> new Retry());
    if (mirror.refusal() == HeapMirror.Refusal.FAMILY_TOO_LARGE) {
      retry.keysWhenTooLarge = mirror.size();
    } else {
      retry.keysWhenTooLarge = -1;
      retry.nextSkip = Math.min(MAX_RETRY_SCANS, Math.max(1, retry.nextSkip * 2));
      retry.scansToSkip = retry.nextSkip;
    }
  }

  /** Drops the family's mirror, if any, and gives its bytes back. */
  void drop(String family) {
    HeapMirror mirror = mirrors.remove(family);
    if (mirror != null) {
      mirror.release();
    }
  }

  /** The family is gone: its mirror and what was known of retrying it. */
  void forget(String family) {
    drop(family);
    retries.remove(family);
  }

  void dropAll() {
    for (String family : new ArrayList<>(mirrors.keySet())) {
      drop(family);
    }
  }
}
