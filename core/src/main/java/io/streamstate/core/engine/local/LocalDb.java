package io.streamstate.core.engine.local;

import io.streamstate.core.engine.ByteKeys;
import io.streamstate.core.error.StreamStateException;
import io.streamstate.core.format.Changelog;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executor;
import java.util.concurrent.atomic.AtomicLong;
import org.rocksdb.BlockBasedTableConfig;
import org.rocksdb.BloomFilter;
import org.rocksdb.Checkpoint;
import org.rocksdb.ColumnFamilyDescriptor;
import org.rocksdb.ColumnFamilyHandle;
import org.rocksdb.ColumnFamilyOptions;
import org.rocksdb.CompactRangeOptions;
import org.rocksdb.CompressionType;
import org.rocksdb.DBOptions;
import org.rocksdb.FlushOptions;
import org.rocksdb.IndexType;
import org.rocksdb.Options;
import org.rocksdb.ReadOptions;
import org.rocksdb.RocksDB;
import org.rocksdb.RocksDBException;
import org.rocksdb.RocksIterator;
import org.rocksdb.WriteBatch;
import org.rocksdb.WriteOptions;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The one owner of a RocksDB instance's native handles. Every call checks that the instance is open
 * and turns {@link RocksDBException} into a {@link StreamStateException} naming the store, so no
 * caller can reach native code through a closed handle. Handles are closed in reverse order of
 * creation. RocksDB types never leave this package: iteration goes through {@link Cursor}.
 *
 * <p>Writes go with the WAL disabled: durability is the changelog's job, and a local instance is
 * never trusted after a crash.
 *
 * @apiNote Internal: public for the engine's packages only.
 */
public final class LocalDb implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(LocalDb.class);
  public static final String DEFAULT_FAMILY = "default";

  private final String storeName;
  private final Path dir;
  private final DBOptions dbOptions;
  private final ColumnFamilyOptions familyOptions;
  private final WriteOptions writeOptions;

  /** A memtable's size: a commit's changes are written in batches of about this many bytes. */
  private final long writeBufferBytes;

  private final ReadOptions readOptions;

  /**
   * For a full scan of a family whose files are larger than half the block cache: its blocks are
   * read and dropped, not cached. Such a scan would evict every cached block, each one inserted
   * only to be evicted before the next scan comes back to it (its cache inserts and evictions were
   * 4 % of a 10M-key scan's CPU, issue 21), and the blocks point reads keep using would go too.
   */
  private final ReadOptions uncachedScanOptions;

  /** The shared block cache's capacity (the memory budget's cap). */
  private final long cacheBytes;

  private final BloomFilter bloomFilter;
  private final RocksDB db;
  private final Map<String, ColumnFamilyHandle> families = new LinkedHashMap<>();

  /** Per family, a key no live key is smaller than (see {@link #newIterator}); absent: unknown. */
  private final Map<String, byte[]> liveLowerBounds = new ConcurrentHashMap<>();

  /**
   * Per family, a filter holding every live key, so that reads that miss skip RocksDB; absent:
   * unknown (an instance restored from files has none until a full scan builds one).
   */
  private final Map<String, LiveKeyFilter> liveKeyFilters = new ConcurrentHashMap<>();

  /**
   * Per family, a new live-key filter being built in the background ({@link FilterRebuild}); an
   * apply takes it once its scan has ended. Changed by applies, drops and close only (the lock).
   */
  private final Map<String, FilterRebuild> filterRebuilds = new LinkedHashMap<>();

  /**
   * Per family, its committed entries in the heap while they fit the budget ({@link HeapMirror});
   * absent: read from RocksDB. Changed by applies, full scans and close (the lock).
   */
  private final FamilyMirrors mirrors;

  /**
   * What RocksDB has not been given while every family is mirrored ({@link WriteLag}); its own
   * monitor serializes the applies that extend it and the catch-ups that end it.
   */
  private final WriteLag lag;

  /** Where filter rebuilds scan: the compaction pool's threads, or a test's executor. */
  private Executor backgroundExecutor = CompactionPool.EXECUTOR;

  /** Room for keys in the filter of a family that starts empty, before a scan sizes it. */
  private static final int NEW_FAMILY_FILTER_KEYS = 16_384;

  /**
   * A commit that deletes at least this many keys of a family, and at least a quarter of what the
   * family then holds (RocksDB's estimate), compacts the family ({@link #compactAfterDeletes}).
   */
  static final long COMPACT_AFTER_DELETES_MIN = 100_000;

  /** Compactions after large deletes that ran to the end (tests, logs). */
  private final AtomicLong deleteCompactions = new AtomicLong();

  /**
   * The compactions after large deletes started so far, in order on {@link CompactionPool}; done
   * when none is queued or running. Each completes normally (a failure is logged).
   */
  private volatile CompletableFuture<Void> compactions = CompletableFuture.completedFuture(null);

  /**
   * The RocksDB write of the last {@link #apply}, when it runs after the apply returned, or of a
   * lag's catch-up that {@link #compactionsDone} started; done otherwise. Completes normally: a
   * failure goes to {@link #writeFailure}.
   */
  private volatile CompletableFuture<Void> pendingWrite = CompletableFuture.completedFuture(null);

  /** Why a write that ran after its apply returned failed; null while none did. */
  private volatile RuntimeException writeFailure;

  /**
   * Whether an apply may leave its RocksDB write to run after it returns; the JVM property {@value
   * #WRITES_BEFORE_APPLY_RETURNS} turns it off (a diagnostic switch, core/README).
   */
  private final boolean writesAfterApply = !Boolean.getBoolean(WRITES_BEFORE_APPLY_RETURNS);

  static final String WRITES_BEFORE_APPLY_RETURNS = "streamstate.local.writesBeforeApplyReturns";

  /** Where writes after an apply run: {@link LocalWritePool}, or a test's executor. */
  private Executor writeExecutor = LocalWritePool.EXECUTOR;

  /** Set when {@link #close} begins: a compaction not yet started is skipped. */
  private volatile boolean closing;

  /** Counts {@link #apply} calls: a scan that saw them all unchanged may build a filter. */
  private volatile long applies;

  private boolean closed;

  /** The SST format every supported RocksDB reads (docs/spark-lines.md). */
  static final int SST_FORMAT_VERSION = 5;

  /** The process's open instances, this one among them while it is open. */
  private final OpenDatabases openDatabases;

  /** The store's local directory's space: a write that found no room is reported as such. */
  private final LocalSpace space;

  /**
   * Gives what RocksDB freed back to the operating system (told of flushes, compactions, close).
   */
  private final NativeHeapTrimmer trimmer;

  private LocalDb(
      String storeName,
      Path dir,
      RocksDbMemoryBudget budget,
      OpenDatabases openDatabases,
      LocalSpace space) {
    RocksDbVersion.check();
    this.openDatabases = openDatabases;
    this.space = space;
    this.trimmer = budget.trimmer();
    this.storeName = storeName;
    this.dir = dir;
    this.mirrors = new FamilyMirrors(budget.heapMirrors());
    this.lag = new WriteLag(budget.heapMirrors());
    this.dbOptions =
        new DBOptions()
            .setCreateIfMissing(true)
            .setCreateMissingColumnFamilies(true)
            .setWriteBufferManager(budget.writeBufferManager())
            .setMaxBackgroundJobs(2)
            .setKeepLogFileNum(2)
            .setMaxManifestFileSize(4L << 20)
            .setListeners(List.of(budget.trimmer().listener()));
    space.attach(dbOptions);
    this.bloomFilter = new BloomFilter(10, false);
    BlockBasedTableConfig table =
        new BlockBasedTableConfig()
            .setBlockCache(budget.cache())
            .setCacheIndexAndFilterBlocks(true)
            .setPinL0FilterAndIndexBlocksInCache(true)
            .setFilterPolicy(bloomFilter)
            // Partitioned index and filters: with a state much larger than the memory budget,
            // a whole-file filter or index evicted from the cache is read back in full (MBs) on
            // the next point read; partitions are read a block at a time, and their top level
            // stays pinned.
            .setIndexType(IndexType.kTwoLevelIndexSearch)
            .setPartitionFilters(true)
            .setMetadataBlockSize(4096)
            .setPinTopLevelIndexAndFilter(true)
            // SST format 5, not 9.x's default 6: snapshots share SST files across Spark lines,
            // and RocksDB 8.3 (Spark 3.5's) cannot read format 6 ("unsupported format_version"),
            // so a checkpoint moved back from 4.x to 3.5 would not load.
            .setFormatVersion(SST_FORMAT_VERSION)
            .setCacheIndexAndFilterBlocksWithHighPriority(true);
    this.familyOptions =
        sortedInsertOptions()
            .setTableFormatConfig(table)
            .setWriteBufferSize(budget.writeBufferBytes())
            .setMaxWriteBufferNumber(3)
            // Most point reads of a streaming aggregation miss (a new key, a new window), and
            // most of a small state lives in memtables: a whole-key bloom filter in each memtable
            // answers those misses without walking the skip list (SST files have theirs above).
            .setMemtableWholeKeyFiltering(true)
            .setMemtablePrefixBloomSizeRatio(0.1)
            // Spark's RocksDB provider's choice: cheaper to compress and read back than Snappy.
            .setCompressionType(CompressionType.LZ4_COMPRESSION);
    this.writeOptions = new WriteOptions().setDisableWAL(true);
    this.writeBufferBytes = budget.writeBufferBytes();
    this.readOptions = new ReadOptions();
    this.uncachedScanOptions = new ReadOptions().setFillCache(false);
    this.cacheBytes = budget.capBytes();
    boolean fresh = !Files.exists(dir.resolve("CURRENT"));
    List<String> names = existingFamilies(dir);
    List<ColumnFamilyDescriptor> descriptors = new ArrayList<>();
    for (String name : names) {
      descriptors.add(new ColumnFamilyDescriptor(bytes(name), familyOptions));
    }
    List<ColumnFamilyHandle> handles = new ArrayList<>();
    try {
      this.db = RocksDB.open(dbOptions, dir.toString(), descriptors, handles);
    } catch (RocksDBException e) {
      closeOptions();
      StreamStateException diskFull = space.diskFullOrNull("opening local RocksDB in " + dir, e);
      if (diskFull != null) {
        throw diskFull;
      }
      String hint =
          String.valueOf(e.getMessage()).contains("unsupported format_version")
              ? " (its snapshot's SST files were written by a newer RocksDB than this JVM's: a"
                  + " checkpoint snapshotted on Spark 4.x by a streamstate release before SST"
                  + " format 5 loads on Spark 4.x only; load it there once so that a newer"
                  + " snapshot replaces them, see docs/spark-lines.md)"
              : "";
      throw new StreamStateException(
          "Cannot open local RocksDB of store " + storeName + " in " + dir + ": " + e + hint, e);
    }
    for (int i = 0; i < names.size(); i++) {
      families.put(names.get(i), handles.get(i));
    }
    if (fresh) {
      startEmptyMirrorOrFilter(DEFAULT_FAMILY);
    } else {
      takeStoredFilters();
      mirrorWhatFits();
    }
    openDatabases.add(this);
  }

  /**
   * Mirrors each family of a restored instance that fits, scanning it once at open. Otherwise only
   * a full scan would build its mirror: the first batch after a restart would read RocksDB with a
   * cold cache, and a family that only point reads reach (a join's values, read by key and index)
   * is never scanned in full, so it would read RocksDB for good (issue 21 bench, section 23). A
   * family RocksDB estimates too large is not scanned.
   */
  private void mirrorWhatFits() {
    for (Map.Entry<String, ColumnFamilyHandle> family : families.entrySet()) {
      long estimatedKeys = estimatedKeys(family.getKey());
      HeapMirror mirror = mirrors.forRestored(family.getKey(), estimatedKeys);
      if (mirror == null) {
        continue;
      }
      boolean fits = true;
      EntryCopier copier = new EntryCopier();
      try (RocksIterator it = db.newIterator(family.getValue(), readOptions)) {
        for (it.seekToFirst(); fits && it.isValid(); it.next()) {
          fits = mirror.append(copier.key(it), copier.value(it));
        }
        it.status();
      } catch (RocksDBException e) {
        // Reads go to RocksDB, which reports what is wrong where it matters.
        mirror.release();
        continue;
      }
      if (fits) {
        mirror.publish();
        installMirror(family.getKey(), mirror);
      } else {
        mirrors.refusedAtOpen(family.getKey(), mirror, estimatedKeys);
      }
    }
  }

  /**
   * Takes the live-key filters a checkpoint wrote beside its files (restored from a snapshot), for
   * the families this instance has. The file goes first: it describes the files as they were
   * checkpointed, and this instance changes from now on. One that does not verify gives no filters.
   */
  private void takeStoredFilters() {
    Path file = dir.resolve(LiveKeyFilterFile.NAME);
    if (!Files.exists(file)) {
      return;
    }
    Map<String, LiveKeyFilter> stored;
    try {
      stored = LiveKeyFilterFile.read(file);
      Files.delete(file);
    } catch (IOException e) {
      LOG.warn("Store {}: not using the stored live-key filters: {}", storeName, e.getMessage());
      try {
        Files.deleteIfExists(file);
      } catch (IOException ignored) {
        // a file left behind is read again only by a reopen of this directory, which checks it
      }
      return;
    }
    stored.forEach(
        (family, filter) -> {
          if (families.containsKey(family)) {
            liveKeyFilters.put(family, filter);
          }
        });
  }

  /**
   * Opens (or creates) the instance in {@code dir}, one of {@code openDatabases} until closed; a
   * write that finds no room in the store's local directory fails as {@code space} reports it.
   */
  public static LocalDb open(
      String storeName,
      Path dir,
      RocksDbMemoryBudget budget,
      OpenDatabases openDatabases,
      LocalSpace space) {
    return new LocalDb(storeName, dir, budget, openDatabases, space);
  }

  /** Whether {@link #close} ran; read under this instance's lock. */
  boolean isClosed() {
    return closed;
  }

  long aggregatedLongProperty(String property) throws RocksDBException {
    return db.getAggregatedLongProperty(property);
  }

  /** Waits for running flushes and compactions and schedules no more; call under this lock. */
  void cancelBackgroundWork() {
    db.cancelAllBackgroundWork(true);
  }

  private static List<String> existingFamilies(Path dir) {
    List<String> names = new ArrayList<>();
    names.add(DEFAULT_FAMILY);
    if (!Files.exists(dir.resolve("CURRENT"))) {
      return names;
    }
    try (Options options = new Options()) {
      for (byte[] name : RocksDB.listColumnFamilies(options, dir.toString())) {
        String s = new String(name, StandardCharsets.UTF_8);
        if (!s.equals(DEFAULT_FAMILY)) {
          names.add(s);
        }
      }
    } catch (RocksDBException e) {
      throw new StreamStateException("Cannot list column families in " + dir + ": " + e, e);
    }
    return names;
  }

  public Set<String> familyNames() {
    checkOpen();
    return families.keySet();
  }

  public boolean hasFamily(String name) {
    checkOpen();
    return families.containsKey(name);
  }

  public byte[] get(String family, byte[] key) {
    checkOpen();
    HeapMirror mirror = mirrors.get(family);
    if (mirror != null) {
      return mirror.get(key);
    }
    awaitWrites();
    ColumnFamilyHandle handle = families.get(family);
    if (handle == null || surelyAbsent(family, key)) {
      return null;
    }
    try {
      return PointReads.get(db, handle, readOptions, key);
    } catch (RocksDBException e) {
      throw failure("read", e);
    }
  }

  /** Point reads of {@code family} that step an iterator while they ascend; close it. */
  public AscendingReads ascendingReads(String family) {
    checkOpen();
    return new AscendingReads(this, family);
  }

  /** A plain iterator over {@code family} with this instance's read options; null if none. */
  RocksIterator rawIterator(String family) {
    checkOpen();
    awaitWrites();
    ColumnFamilyHandle handle = families.get(family);
    return handle == null ? null : db.newIterator(handle, readOptions);
  }

  StreamStateException readFailure(RocksDBException e) {
    return failure("read", e);
  }

  /** Whether {@code key} exists, without copying its value into the JVM. */
  public boolean exists(String family, byte[] key) {
    checkOpen();
    HeapMirror mirror = mirrors.get(family);
    if (mirror != null) {
      return mirror.contains(key);
    }
    awaitWrites();
    ColumnFamilyHandle handle = families.get(family);
    if (handle == null || surelyAbsent(family, key)) {
      return false;
    }
    try {
      return PointReads.exists(db, handle, readOptions, key);
    } catch (RocksDBException e) {
      throw failure("read", e);
    }
  }

  /**
   * False when {@code key} is surely not in the family (its live-key filter rules it out, in the
   * heap, without a call into RocksDB); true when it may be.
   */
  public boolean mightContain(String family, byte[] key) {
    checkOpen();
    HeapMirror mirror = mirrors.get(family);
    if (mirror != null) {
      return mirror.contains(key);
    }
    awaitWrites(); // the filter is the write's to update
    return !surelyAbsent(family, key);
  }

  /**
   * Whether {@code family}'s committed entries are in the heap now ({@link HeapMirror}): its {@link
   * #get} and {@link #exists} are then exact binary searches, no cheaper to remember than to ask
   * again. A mirror may come (a full scan) or go (an apply) later; either way the answers stay
   * those of the same committed version.
   */
  public boolean mirrored(String family) {
    return mirrors.get(family) != null;
  }

  /** Changes RocksDB took from ended write lags, so far (tests). */
  long changesCaughtUp() {
    synchronized (lag) {
      return lag.changesCaughtUp();
    }
  }

  /** Bytes of {@code family}'s heap mirror, or -1 when it has none (tests). */
  long mirrorBytes(String family) {
    HeapMirror mirror = mirrors.get(family);
    return mirror == null ? -1 : mirror.bytes();
  }

  /** A new, empty family: mirrored if mirrors are on, else with an empty live-key filter. */
  private void startEmptyMirrorOrFilter(String family) {
    HeapMirror empty = mirrors.newEmpty();
    if (empty != null) {
      installMirror(family, empty);
    } else {
      liveKeyFilters.put(family, LiveKeyFilter.withCapacity(NEW_FAMILY_FILTER_KEYS));
    }
  }

  /**
   * Reads of {@code family} go to {@code mirror} from now on. Its live-key filter goes: the mirror
   * answers every read itself, and keeping the filter cost a hash per put and a background scan of
   * RocksDB each time it filled (issue 21 bench, section 20). A family whose mirror is dropped
   * reads from RocksDB without a filter until a full scan builds one.
   */
  private void installMirror(String family, HeapMirror mirror) {
    mirrors.install(family, mirror);
    liveKeyFilters.remove(family);
    cancelFilterRebuild(family);
  }

  /** The size of a family's SST files; 0 if RocksDB cannot tell. */
  private long filesBytes(ColumnFamilyHandle handle) {
    try {
      return db.getLongProperty(handle, "rocksdb.total-sst-files-size");
    } catch (RocksDBException e) {
      return 0;
    }
  }

  /** RocksDB's estimate of a family's keys; the largest long if it cannot tell. */
  private long estimatedKeys(String family) {
    try {
      return db.getLongProperty(families.get(family), "rocksdb.estimate-num-keys");
    } catch (RocksDBException e) {
      return Long.MAX_VALUE;
    }
  }

  /** Whether the family's live-key filter rules {@code key} out. */
  private boolean surelyAbsent(String family, byte[] key) {
    LiveKeyFilter filter = liveKeyFilters.get(family);
    return filter != null && !filter.mightContain(key);
  }

  /** Whether {@code family} has a live-key filter now (tests). */
  boolean hasLiveKeyFilter(String family) {
    return liveKeyFilters.containsKey(family);
  }

  /**
   * An iterator over a family positioned at the first key {@code >= from} (null: the first key);
   * null if the family does not exist.
   *
   * <p>Deleted keys stay in RocksDB as tombstones until compaction drops them, and a seek to the
   * first key steps over every one of them. Spark evicts expired state (the oldest windows, the
   * smallest keys) every batch, so the tombstones pile up exactly where each eviction scan starts.
   * So the instance remembers, per family, a key below which nothing live exists (the first key the
   * last scan from the start found, lowered by every later put of a smaller key) and seeks there
   * instead: the index skips the tombstones below it.
   *
   * <p>An iterator from the start that reaches the end has seen every live key: it leaves a new
   * live-key filter for the family behind if the family needs one ({@link #needsNewFilter}), unless
   * the instance changed meanwhile. Over a family larger than half the block cache it reads without
   * filling the cache ({@link #uncachedScanOptions}).
   */
  public Cursor newIterator(String family, byte[] from) {
    checkOpen();
    ColumnFamilyHandle handle = families.get(family);
    if (handle == null) {
      return null;
    }
    HeapMirror mirror = mirrors.get(family);
    if (mirror != null) {
      HeapMirror.Entries entries = mirror.entries();
      return new Cursor(entries, entries.indexOf(from));
    }
    awaitWrites();
    byte[] bound = liveLowerBounds.get(family);
    boolean fromNothingBelow =
        from == null || (bound != null && ByteKeys.ORDER.compare(from, bound) < 0);
    RocksIterator it =
        db.newIterator(
            handle,
            fromNothingBelow && filesBytes(handle) > cacheBytes / 2
                ? uncachedScanOptions
                : readOptions);
    byte[] start = fromNothingBelow ? bound : from;
    if (start == null) {
      it.seekToFirst();
    } else {
      it.seek(start);
    }
    if (fromNothingBelow && it.isValid()) {
      // Nothing live below where the scan started, and this is the first key at or above it.
      liveLowerBounds.put(family, it.key());
    }
    FullScan scan = fromNothingBelow ? new FullScan(family, applies) : null;
    Cursor cursor = new Cursor(it, scan != null && scan.buildsSomething() ? scan : null);
    cursor.finishIfAtEnd();
    return cursor;
  }

  /**
   * What a scan from a family's start has passed: its keys hashed, for a new live-key filter, and
   * its entries, for a heap mirror while they fit the budget. Complete only if the scan reaches the
   * end with no apply in between.
   */
  private final class FullScan {
    private final String family;
    private final long appliesAtStart;

    /**
     * The keys passed so far, hashed; null once there are too many for a filter, or from the start
     * if the family's filter still has room ({@link #needsNewFilter}).
     */
    private KeyHashes keys;

    /** The entries passed so far; null once they do not fit (or a mirror exists already). */
    private HeapMirror mirror;

    FullScan(String family, long appliesAtStart) {
      this.family = family;
      this.appliesAtStart = appliesAtStart;
      this.keys = needsNewFilter(family) ? new KeyHashes() : null;
      this.mirror = mirrors.forScan(family, () -> estimatedKeys(family));
    }

    /** Whether there is anything to build: a filter, a mirror, or both. */
    boolean buildsSomething() {
      return keys != null || mirror != null;
    }

    /** Whether the scan still needs each entry's value. */
    boolean wantsValues() {
      return mirror != null;
    }

    /** False once there is nothing more to build: stop calling. */
    boolean add(byte[] key, byte[] value) {
      if (keys != null && !keys.add(key)) {
        keys = null;
      }
      if (mirror != null && !mirror.append(key, value)) {
        mirrors.refused(family, mirror);
        abandonMirror();
      }
      return keys != null || mirror != null;
    }

    /** The scan reached the end: every live entry was added, unless an apply ran meanwhile. */
    void finish() {
      boolean complete = !closed && applies == appliesAtStart && families.containsKey(family);
      if (complete && mirror != null && mirrors.get(family) == null) {
        mirror.publish();
        installMirror(family, mirror);
        mirror = null;
      } else if (complete && keys != null && mirrors.get(family) == null) {
        liveKeyFilters.put(family, keys.filter(0));
      }
      abandonMirror();
    }

    /** Gives back what an unfinished mirror holds. */
    void abandonMirror() {
      if (mirror != null) {
        mirror.release();
        mirror = null;
      }
    }
  }

  /**
   * Whether a full scan of {@code family} should build it a new live-key filter: it has none, or
   * more keys went into its filter than it has room for (false positives past the 2 % it was sized
   * for). A filter with room answers as well as a new one would, deleted keys and all (they cost
   * only the room they take), and hashing every key was 2.7 % of a 10M-key run's CPU (issue 21):
   * Spark's watermark eviction scans the whole store every batch.
   */
  private boolean needsNewFilter(String family) {
    LiveKeyFilter filter = liveKeyFilters.get(family);
    return filter == null || filter.added() > filter.capacity();
  }

  /**
   * A position in one column family's committed entries (a RocksDB iterator, which stays in this
   * package). Close it when done.
   */
  public static final class Cursor implements AutoCloseable {
    /** The RocksDB iterator, or null when the cursor steps through a heap mirror. */
    private final RocksIterator it;

    /** The heap mirror's entries as the cursor was made (applies replace, never change them). */
    private final HeapMirror.Entries heap;

    private int heapIndex;

    /** Set while the cursor scans from the family's start, adding each entry it passes. */
    private FullScan fullScan;

    /** Copies the RocksDB iterator's entries out of native memory; null over a heap mirror. */
    private final EntryCopier copier;

    /** The current key and value once read (each read is a copy out of native memory). */
    private byte[] key;

    private byte[] value;

    private Cursor(RocksIterator it, FullScan fullScan) {
      this.it = it;
      this.heap = null;
      this.fullScan = fullScan;
      this.copier = new EntryCopier();
    }

    private Cursor(HeapMirror.Entries heap, int from) {
      this.it = null;
      this.heap = heap;
      this.heapIndex = from;
      this.copier = null;
    }

    public boolean isValid() {
      return it == null ? heapIndex < heap.size() : it.isValid();
    }

    /** The current key; the same array until {@link #next}, so hand it out once. */
    public byte[] key() {
      if (it == null) {
        return heap.keys()[heapIndex];
      }
      if (key == null) {
        key = copier.key(it);
      }
      return key;
    }

    public byte[] value() {
      if (it == null) {
        return heap.values()[heapIndex];
      }
      if (value == null) {
        value = copier.value(it);
      }
      return value;
    }

    public void next() {
      if (it == null) {
        heapIndex++;
        return;
      }
      if (fullScan != null && !fullScan.add(key(), fullScan.wantsValues() ? value() : null)) {
        fullScan = null;
      }
      key = null;
      value = null;
      it.next();
      finishIfAtEnd();
    }

    private void finishIfAtEnd() {
      if (fullScan != null && !it.isValid()) {
        fullScan.finish();
        fullScan = null;
      }
    }

    @Override
    public void close() {
      if (fullScan != null) {
        fullScan.abandonMirror();
        fullScan = null;
      }
      if (it != null) {
        it.close();
      }
    }
  }

  /**
   * Applies one version's changes: families created or dropped first, then the heap mirrors, then
   * RocksDB, in write batches of at most 64 KiB each.
   *
   * <p>When every family is mirrored after the mirrors took the changes, readers see the new
   * version in the heap alone, and RocksDB is not written now: it lags ({@link WriteLag}) until
   * something reads it (a checkpoint, a family whose mirror went), and then takes the difference
   * between what it holds and the newest version, in which a key put and deleted in between never
   * appears (issue 21 bench, section 24). Otherwise (a lag the heap budget refuses, a family not
   * mirrored) the RocksDB write runs after this returns, on {@link LocalWritePool} (a commit waits
   * for its durable write and the mirrors, not for memtable inserts, sections 20 and 31), and every
   * later use of RocksDB waits for it: the next apply, a read of a family not mirrored, a
   * checkpoint, {@link #usable}, close. If a catch-up or a write fails, the mirrors stay exact, but
   * the instance is not {@link #usable} any more: its holder discards it and the next load restores
   * from durable storage.
   */
  public void apply(Changelog changelog) {
    checkOpen();
    awaitPendingWrite();
    applies++; // before any change: a scan running now builds no filter
    boolean applied = false;
    synchronized (lag) {
      try {
        applyFamilyOps(changelog);
        // What RocksDB holds, if the mirrors hold it too: where a lag may begin.
        Map<String, HeapMirror.Entries> rocksDbHolds =
            writesAfterApply && !lag.lagging() ? mirrors.entriesOfAll(families.keySet()) : null;
        long heldBytes = rocksDbHolds == null ? 0 : mirrors.bytesOf(families.keySet());
        applyToMirrors(changelog);
        Map<String, HeapMirror.Entries> newest =
            writesAfterApply ? mirrors.entriesOfAll(families.keySet()) : null;
        if (newest == null) {
          if (lag.lagging()) {
            writeChanges(lag.end()); // up to the version before this one, which a mirror left
          }
          if (writesAfterApply) {
            // A family RocksDB alone holds: the next transaction's reads wait for this write, but
            // the commit does not (an eviction's millions of deletions took it seconds, issue 21
            // section 31), and the write runs beside the batch's other tasks.
            pendingWrite =
                CompletableFuture.runAsync(() -> writeAfterApply(changelog), writeExecutor);
          } else {
            writeChanges(changelog);
          }
        } else {
          // A store whose mirror may soon not fit does not lag: a mirror dropped while RocksDB
          // lags makes it catch up, a mirror's worth, before the commit returns. It catches up
          // on the pool instead, and later versions are written after their applies.
          boolean nearCap = mirrors.anyPastHalfItsCap();
          if (lag.lagging()
              || (rocksDbHolds != null && !nearCap && lag.begin(rocksDbHolds, heldBytes))) {
            lag.advance(changelog.version(), newest);
            if (nearCap) {
              pendingWrite = CompletableFuture.runAsync(this::catchUpAfterApply, writeExecutor);
            }
          } else {
            pendingWrite =
                CompletableFuture.runAsync(() -> writeAfterApply(changelog), writeExecutor);
          }
        }
        applied = true;
      } catch (RocksDBException e) {
        throw failure("write", e);
      } finally {
        if (!applied) {
          if (lag.lagging()) {
            lag.discard();
            writeFailure = // RocksDB lacks what the lag held: never read it again
                new StreamStateException(
                    "the apply of version " + changelog.version() + " failed while RocksDB lagged");
          }
          mirrors.dropAll(); // applied in part: the instance is discarded next
        }
      }
    }
  }

  private void applyFamilyOps(Changelog changelog) throws RocksDBException {
    for (Changelog.FamilyOp op : changelog.familyOps()) {
      liveLowerBounds.remove(op.family());
      if (op.kind() == Changelog.FamilyOp.Kind.CREATE) {
        if (!families.containsKey(op.family())) {
          families.put(
              op.family(),
              db.createColumnFamily(new ColumnFamilyDescriptor(bytes(op.family()), familyOptions)));
          lag.familyCreated(op.family());
          startEmptyMirrorOrFilter(op.family());
        }
      } else {
        awaitCompactions(); // one may be compacting the family whose handle this closes
        cancelFilterRebuild(op.family()); // or scanning it
        liveKeyFilters.remove(op.family());
        mirrors.forget(op.family());
        ColumnFamilyHandle handle = families.remove(op.family());
        if (handle != null) {
          db.dropColumnFamily(handle);
          handle.close();
          lag.familyDropped(op.family());
        }
      }
    }
  }

  /** Merges each family's changes into its mirror; a mirror they do not fit is dropped. */
  private void applyToMirrors(Changelog changelog) {
    for (Changelog.FamilyChanges fc : changelog.changes()) {
      if (!families.containsKey(fc.family())) {
        throw new StreamStateException(
            "Changelog of version "
                + changelog.version()
                + " of store "
                + storeName
                + " writes to column family '"
                + fc.family()
                + "', which does not exist");
      }
      mirrors.apply(fc.family(), fc.changes()); // one that does not fit goes: RocksDB alone
    }
  }

  private boolean everyFamilyMirrored() {
    return mirrors.coverAll(families.keySet());
  }

  /** {@link #writeChanges} after {@link #apply} returned; a failure is kept for {@link #usable}. */
  private void writeAfterApply(Changelog changelog) {
    try {
      writeChanges(changelog);
    } catch (RocksDBException | RuntimeException | Error e) {
      RuntimeException failure = failure("write of version " + changelog.version(), e);
      LOG.warn(
          "Store {}: version {} is durable, but writing it to the local RocksDB failed; the"
              + " next load restores from durable storage",
          storeName,
          changelog.version(),
          e);
      writeFailure = failure;
    }
  }

  /**
   * Brings RocksDB up to the newest version applied, for a use of RocksDB itself: waits for a write
   * that runs after its apply returned, and ends a {@link WriteLag}, writing its difference now.
   * Throws if a write (this one or an earlier one) failed.
   */
  private void awaitWrites() {
    awaitPendingWrite();
    RuntimeException failed = catchUp();
    if (failed != null) {
      throw failed;
    }
  }

  /**
   * Ends a {@link WriteLag}, if one lasts, writing its difference into RocksDB in the calling
   * thread; a failure is kept for {@link #usable} and returned.
   */
  private RuntimeException catchUp() {
    synchronized (lag) {
      if (!lag.lagging()) {
        return null;
      }
      Changelog owed = lag.end();
      try {
        writeChanges(owed);
        return null;
      } catch (RocksDBException | RuntimeException | Error e) {
        writeFailure = failure("catch-up to version " + owed.version(), e);
        return writeFailure;
      }
    }
  }

  /** {@link #catchUp} on {@link #writeExecutor}, as a write after an apply; a failure is logged. */
  private void catchUpAfterApply() {
    RuntimeException failed = catchUp();
    if (failed != null) {
      LOG.warn(
          "Store {}: writing what its heap mirrors hold to the local RocksDB failed; the next load"
              + " restores from durable storage",
          storeName,
          failed);
    }
  }

  /**
   * Waits for a RocksDB write that runs after its apply returned; throws if it (or an earlier one)
   * failed.
   */
  private void awaitPendingWrite() {
    CompletableFuture<Void> write = pendingWrite;
    if (!write.isDone()) {
      write.join(); // completes normally: writeAfterApply keeps its failure
    }
    RuntimeException failed = writeFailure;
    if (failed != null) {
      throw new StreamStateException(
          "Local RocksDB of store " + storeName + " in " + dir + " missed a write: " + failed,
          failed);
    }
  }

  /**
   * Whether the instance holds every version it was given: waits for a RocksDB write that runs
   * after its apply returned, and is false if one failed (the instance then lacks a version its
   * mirrors hold, and its holder discards it). A load asks before it reuses the instance, so that a
   * failed write is known before the next transaction, not found by a read.
   */
  public boolean usable() {
    pendingWrite.join(); // completes normally
    return writeFailure == null;
  }

  /**
   * The most bytes one write batch holds: rocksdbjni copies a serialized batch into native memory
   * twice, and glibc maps every allocation from 128 KiB up afresh, so each batch of a memtable's
   * size (16 MiB) faulted its pages in during the copy (issue 21 bench, section 25).
   */
  private static final long WRITE_PIECE_BYTES = 64L << 10;

  /** Writes a version's changes into RocksDB (the mirrors took them already). */
  private void writeChanges(Changelog changelog) throws RocksDBException {
    long pieceBytes = Math.min(writeBufferBytes, WRITE_PIECE_BYTES);
    // A first guess of the batch's size (it grows if short), at most one piece's.
    long initialBytes = Math.min(changelog.changeCount() * 64L, pieceBytes + (pieceBytes >> 2));
    WriteBatchRep batch = new WriteBatchRep(initialBytes);
    Map<String, Long> deletesByFamily = new LinkedHashMap<>();
    List<String> filtersToRebuild = new ArrayList<>();
    for (Changelog.FamilyChanges fc : changelog.changes()) {
      int id = families.get(fc.family()).getID();
      long deletes = 0;
      byte[] bound = liveLowerBounds.get(fc.family());
      LiveKeyFilter filter = takeRebuiltFilter(fc.family());
      FilterRebuild rebuild = filterRebuilds.get(fc.family());
      for (Changelog.Change c : fc.changes()) {
        if (batch.bytes() >= pieceBytes) {
          // A batch goes into one memtable whole, and memtables are charged to the memory
          // budget, pinned: a commit of millions of changes (an eviction) in one batch grew the
          // memtables past the cap (503 MB pinned at a 256 MiB cap). In pieces of at most a
          // memtable's size, RocksDB switches and flushes between them. Not atomic: a failure
          // part way is the local instance's end (the commit discards it, a load fails), never a
          // partial state that is read.
          write(batch);
          batch = new WriteBatchRep(initialBytes);
        }
        if (c.isDelete()) {
          batch.delete(id, c.key());
          deletes++;
        } else {
          batch.put(id, c.key(), c.value());
          if (filter != null || rebuild != null) {
            long hash = ByteKeys.hash64(c.key());
            if (filter != null) {
              filter.addHash(hash);
            }
            if (rebuild != null) {
              rebuild.addPut(hash);
            }
          }
          if (bound != null && ByteKeys.ORDER.compare(c.key(), bound) < 0) {
            bound = c.key().clone();
          }
        }
      }
      if (bound != null) {
        liveLowerBounds.put(fc.family(), bound);
      }
      if (filter != null && rebuild == null && filter.stale()) {
        filtersToRebuild.add(fc.family()); // once this version is written
      }
      if (filter != null && filter.saturated()) {
        liveKeyFilters.remove(fc.family()); // until a scan builds a larger one
      }
      deletesByFamily.merge(fc.family(), deletes, Long::sum);
    }
    write(batch);
    for (String family : filtersToRebuild) {
      filterRebuilds.put(
          family,
          FilterRebuild.start(
              db,
              families.get(family),
              "column family '" + family + "' of store " + storeName,
              backgroundExecutor));
    }
    for (Map.Entry<String, Long> e : deletesByFamily.entrySet()) {
      compactAfterDeletes(e.getKey(), e.getValue(), changelog.version());
    }
  }

  /**
   * The family's live-key filter for this apply to add to: the one a background rebuild made, if
   * its scan has ended (installed now, with the keys put since its snapshot), else the current one.
   */
  private LiveKeyFilter takeRebuiltFilter(String family) {
    FilterRebuild rebuild = filterRebuilds.get(family);
    if (rebuild != null && rebuild.ended()) {
      filterRebuilds.remove(family);
      LiveKeyFilter rebuilt = rebuild.filter();
      if (rebuilt != null) {
        liveKeyFilters.put(family, rebuilt);
      }
    }
    return liveKeyFilters.get(family);
  }

  private void cancelFilterRebuild(String family) {
    FilterRebuild rebuild = filterRebuilds.remove(family);
    if (rebuild != null) {
      rebuild.cancel();
    }
  }

  /** Runs the writes that follow an apply on {@code executor} from now on (tests). */
  void writeExecutor(Executor executor) {
    this.writeExecutor = executor;
  }

  /** Runs filter rebuilds' scans on {@code executor} from now on (tests). */
  void backgroundExecutor(Executor executor) {
    this.backgroundExecutor = executor;
  }

  /**
   * Starts a compaction of {@code family} if this version deleted a large share of it. Spark evicts
   * expired state in one batch (a watermark passing a window: a quarter of a 10M-key store at
   * once), and until compaction reaches them, every deleted key stays as a tombstone that each
   * later scan steps over; Spark's append-mode eviction scans the whole store every batch, so after
   * such an eviction every batch, and a restart's first, paid for millions of them (docs/bench,
   * issue 21, section 11: 12-13 s batches instead of 9, a 10M-key restart's first batch 17.9 s
   * instead of 13.5). Compacting drops them and the data they shadow, and the store's next
   * replay-debt snapshot, which waits for it ({@link #compactionsDone}), uploads the smaller files.
   *
   * <p>It runs on {@link CompactionPool} after the apply returns, not on the commit's path: inside
   * the commit it made the eviction batch's commit seconds longer (1.6-4.0 s a store at 10M keys,
   * section 13). Meanwhile the instance is read and written as usual (RocksDB compacts beside
   * both); {@link #close} and a family's drop wait for it. A load's replay of such a version starts
   * one too, whose first batch would otherwise scan the tombstones.
   */
  private void compactAfterDeletes(String family, long deletes, long version)
      throws RocksDBException {
    ColumnFamilyHandle handle = families.get(family);
    if (deletes < COMPACT_AFTER_DELETES_MIN || handle == null) {
      return;
    }
    long keys = db.getLongProperty(handle, "rocksdb.estimate-num-keys");
    if (deletes * 4 < keys) {
      return;
    }
    compactions =
        compactions.thenRunAsync(
            () -> compact(handle, family, deletes, keys, version), CompactionPool.EXECUTOR);
  }

  /** One compaction of {@link #compactAfterDeletes}, on the pool; never throws. */
  private void compact(
      ColumnFamilyHandle handle, String family, long deletes, long keys, long version) {
    if (closing) {
      return;
    }
    long started = System.nanoTime();
    // Not exclusive: the commits that follow go on writing, and RocksDB's own compactions of what
    // they flush must not wait behind this one (L0 files past the limit would stall the writes).
    try (CompactRangeOptions options = new CompactRangeOptions()) {
      db.compactRange(handle, null, null, options.setExclusiveManualCompaction(false));
    } catch (RocksDBException | RuntimeException e) {
      // Only reads get slower: the tombstones stay until RocksDB's own compactions reach them.
      LOG.warn(
          "Store {}: compacting column family '{}' after version {} deleted {} keys failed: {}",
          storeName,
          family,
          version,
          deletes,
          e.toString());
      return;
    }
    deleteCompactions.incrementAndGet();
    LOG.info(
        "Store {}: version {} deleted {} keys of column family '{}' (~{} left): compacted it in"
            + " {} ms",
        storeName,
        version,
        deletes,
        family,
        keys,
        (System.nanoTime() - started) / 1_000_000);
  }

  /**
   * Completes when RocksDB has every version applied and the compactions after large deletes
   * started so far have ended (at once if there are none); never exceptionally. A {@link WriteLag}
   * ends on {@link #writeExecutor} first (its deletions may start a compaction), not in the caller.
   */
  public CompletableFuture<Void> compactionsDone() {
    CompletableFuture<Void> write;
    synchronized (lag) {
      if (lag.lagging()) {
        pendingWrite = pendingWrite.thenRunAsync(this::catchUpAfterApply, writeExecutor);
      }
      write = pendingWrite; // it may start one
    }
    return write.isDone() ? compactions : write.thenCompose(v -> compactions);
  }

  /** Waits until the compactions after large deletes started so far have ended. */
  public void awaitCompactions() {
    pendingWrite.join(); // it may start one; completes normally
    CompletableFuture<Void> running;
    do {
      running = compactions;
      running.join();
    } while (running != compactions);
  }

  /** How many compactions large deletes caused ({@link #compactAfterDeletes}). */
  public long deleteCompactions() {
    return deleteCompactions.get();
  }

  private void write(WriteBatchRep batch) throws RocksDBException {
    if (batch.count() > 0) {
      try (WriteBatch serialized = new WriteBatch(batch.toBytes())) {
        db.write(writeOptions, serialized);
      }
    }
  }

  /** Flushes memtables and writes a checkpoint (hard links where possible) to {@code target}. */
  public void checkpoint(Path target) {
    checkOpen();
    awaitWrites();
    try (FlushOptions flush = new FlushOptions().setWaitForFlush(true);
        Checkpoint checkpoint = Checkpoint.create(db)) {
      db.flush(flush, new ArrayList<>(families.values()));
      checkpoint.createCheckpoint(target.toString());
    } catch (RocksDBException e) {
      throw failure("checkpoint", e);
    }
    // The filters as of exactly these files: the caller holds the store's lock, so no apply runs.
    Map<String, LiveKeyFilter> filters = new LinkedHashMap<>();
    for (String family : families.keySet()) {
      LiveKeyFilter filter = liveKeyFilters.get(family);
      HeapMirror mirror = mirrors.get(family);
      if (filter == null && mirror != null) {
        // A mirrored family keeps no filter; a restore has no mirror, but can use this one.
        HeapMirror.Entries entries = mirror.entries();
        filter = KeyHashes.filterOf(entries.keys(), entries.size());
      }
      if (filter != null) {
        filters.put(family, filter);
      }
    }
    if (!filters.isEmpty()) {
      try {
        LiveKeyFilterFile.write(target.resolve(LiveKeyFilterFile.NAME), filters);
      } catch (IOException e) {
        StreamStateException diskFull =
            space.diskFullOrNull("writing live-key filters into " + target, e);
        throw diskFull != null
            ? diskFull
            : new StreamStateException(
                "Cannot write live-key filters into checkpoint " + target + ": " + e, e);
      }
    }
  }

  /** Keys in all families: exact for a mirrored family, RocksDB's estimate for the others. */
  public long estimateKeys() {
    checkOpen();
    long n = 0;
    try {
      for (Map.Entry<String, ColumnFamilyHandle> e : families.entrySet()) {
        HeapMirror mirror = mirrors.get(e.getKey());
        // A mirrored family's RocksDB may not have the last version yet (see apply).
        n +=
            mirror != null
                ? mirror.entries().size()
                : db.getLongProperty(e.getValue(), "rocksdb.estimate-num-keys");
      }
    } catch (RocksDBException e) {
      throw failure("read properties", e);
    }
    return n;
  }

  public long memoryBytes() {
    checkOpen();
    try {
      long n = 0;
      for (ColumnFamilyHandle h : families.values()) {
        n += db.getLongProperty(h, "rocksdb.cur-size-all-mem-tables");
      }
      return n;
    } catch (RocksDBException e) {
      throw failure("read properties", e);
    }
  }

  public Path dir() {
    return dir;
  }

  private void checkOpen() {
    if (closed) {
      throw new IllegalStateException("Local RocksDB of store " + storeName + " is closed");
    }
  }

  /**
   * A RocksDB call (or a write after its apply) failed: a lack of space is a {@link
   * io.streamstate.core.error.LocalDiskFullException} (RocksDB then holds a background error and
   * refuses every later write, so the caller discards the instance, as it does after any failed
   * write), anything else a plain error.
   */
  private StreamStateException failure(String what, Throwable e) {
    StreamStateException diskFull =
        e instanceof RocksDBException r ? space.diskFullOrNull("local RocksDB " + what, r) : null;
    if (diskFull != null) {
      return diskFull;
    }
    return new StreamStateException(
        "Local RocksDB " + what + " failed for store " + storeName + " in " + dir + ": " + e, e);
  }

  private static byte[] bytes(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  @Override
  public synchronized void close() {
    if (closed) {
      return;
    }
    closing = true;
    pendingWrite.join(); // uses the handles closed below; completes normally
    awaitCompactions(); // as does a running compaction
    for (String family : new ArrayList<>(filterRebuilds.keySet())) {
      cancelFilterRebuild(family); // as does a rebuild's scan, and its snapshot
    }
    closed = true;
    synchronized (lag) {
      if (lag.lagging()) {
        lag.discard(); // nothing reads this RocksDB again
      }
    }
    mirrors.dropAll();
    openDatabases.remove(this);
    List<ColumnFamilyHandle> handles = new ArrayList<>(families.values());
    families.clear();
    for (ColumnFamilyHandle h : handles) {
      h.close();
    }
    db.close();
    closeOptions();
    trimmer.request(); // its memtables, table readers and cached blocks went back to malloc
  }

  /**
   * Column family options whose memtables insert a write batch's keys from where the previous key
   * went in. A commit's batch is in key order, so each key lands just after the one before; without
   * the hint every key searches the skip list from its top (26 against 18 ms for 50,000 sorted keys
   * into a 16 MiB memtable, docs/bench/2026-12-03-issue21.md section 16). One hint for all keys (an
   * empty prefix). RocksJava has no setter for it, hence the options string.
   */
  private static ColumnFamilyOptions sortedInsertOptions() {
    Properties props = new Properties();
    props.setProperty(INSERT_HINT_OPTION, "rocksdb.FixedPrefix.0");
    ColumnFamilyOptions options = ColumnFamilyOptions.getColumnFamilyOptionsFromProps(props);
    if (options == null) {
      // Only costs speed; every RocksDB a supported Spark line ships takes it
      // (MemtableInsertHintTest).
      LOG.warn(
          "This RocksDB does not take {}: memtable inserts without a hint", INSERT_HINT_OPTION);
      return new ColumnFamilyOptions();
    }
    return options;
  }

  static final String INSERT_HINT_OPTION = "memtable_insert_with_hint_prefix_extractor";

  private void closeOptions() {
    readOptions.close();
    uncachedScanOptions.close();
    writeOptions.close();
    familyOptions.close();
    bloomFilter.close();
    dbOptions.close();
  }
}
