package io.streamstate.dstream.wal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.streamstate.core.ProcessResources;
import io.streamstate.core.error.CorruptFileException;
import io.streamstate.core.hedge.HedgePolicy;
import io.streamstate.core.storage.AppendableFile;
import io.streamstate.core.storage.ContentWriter;
import io.streamstate.core.storage.FileInfo;
import io.streamstate.core.storage.LocalStorage;
import io.streamstate.core.storage.Storage;
import io.streamstate.core.storage.SupportsAppend;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.spark.SparkConf;
import org.apache.spark.streaming.util.BatchedWriteAheadLog;
import org.apache.spark.streaming.util.WriteAheadLog;
import org.apache.spark.streaming.util.WriteAheadLogRecordHandle;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Spark's write-ahead log contract (the cases of Spark's {@code WriteAheadLogSuite}, reimplemented
 * against ours), on local disk (journals) and on a store without append (segments, as on S3), plus
 * what ours adds: group commit of concurrent writers, hedged late appends, corruption named.
 */
class StreamStateWriteAheadLogTest {
  private static final long ROLL_MS = 1000;

  @TempDir Path dir;
  private final ProcessResources resources = new ProcessResources("wal-test");
  private final List<WriteAheadLog> opened = new ArrayList<>();

  @AfterEach
  void closeAll() {
    opened.forEach(WriteAheadLog::close);
    resources.close();
  }

  private Storage local() {
    return new LocalStorage(dir);
  }

  private StreamStateWriteAheadLog log(Storage storage) {
    return log(storage, HedgePolicy.builder().disable().build());
  }

  private StreamStateWriteAheadLog log(Storage storage, HedgePolicy hedge) {
    StreamStateWriteAheadLog log =
        StreamStateWriteAheadLog.onStorage(
            storage, WalSettings.of(dir.toUri(), ROLL_MS, hedge, Map.of()), "driver", resources);
    opened.add(log);
    return log;
  }

  private static List<String> data(int n, int seed) {
    Random random = new Random(seed);
    List<String> out = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      out.add(seed + ":" + i + ":" + Long.toHexString(random.nextLong()));
    }
    return out;
  }

  private static ByteBuffer bytes(String s) {
    return ByteBuffer.wrap(s.getBytes(StandardCharsets.UTF_8));
  }

  private static String string(ByteBuffer b) {
    byte[] a = new byte[b.remaining()];
    b.get(a);
    return new String(a, StandardCharsets.UTF_8);
  }

  /** Writes each record at a time 100 ms after the last, from {@code startTime}: rolls every 10. */
  private static List<WriteAheadLogRecordHandle> write(
      WriteAheadLog log, List<String> records, long startTime) {
    List<WriteAheadLogRecordHandle> handles = new ArrayList<>();
    long time = startTime;
    for (String r : records) {
      handles.add(log.write(bytes(r), time));
      time += 100;
    }
    return handles;
  }

  private static List<String> readAll(WriteAheadLog log) {
    List<String> out = new ArrayList<>();
    Iterator<ByteBuffer> it = log.readAll();
    while (it.hasNext()) {
      out.add(string(it.next()));
    }
    return out;
  }

  private List<String> walFiles(Storage storage) {
    List<String> names = new ArrayList<>();
    for (FileInfo f : storage.list("driver/")) {
      names.add(f.name());
    }
    return names;
  }

  @Test
  void writesRollAndEachHandleReadsItsRecord() {
    Storage storage = local();
    WriteAheadLog log = log(storage);
    List<String> records = data(50, 1);
    List<WriteAheadLogRecordHandle> handles = write(log, records, 0);
    assertThat(walFiles(storage)).hasSizeGreaterThan(1).allMatch(n -> n.contains("/j-"));
    Collections.shuffle(handles, new Random(3));
    for (WriteAheadLogRecordHandle h : handles) {
      String read = string(log.read(h));
      assertThat(records).contains(read);
    }
    // Read back by another instance, as an executor reads a block.
    WriteAheadLog other = log(local());
    for (int i = 0; i < records.size(); i += 7) {
      assertThat(string(other.read(write(log, List.of("x" + i), 10_000 + i).get(0))))
          .isEqualTo("x" + i);
    }
  }

  @Test
  void readAllAfterWriteGivesEveryRecordInOrderAcrossWriters() {
    List<String> first = data(40, 1);
    WriteAheadLog a = log(local());
    write(a, first, 0);
    a.close();
    List<String> second = data(30, 2);
    WriteAheadLog b = log(local()); // a restarted driver: a new writer
    assertThat(readAll(b)).isEqualTo(first);
    write(b, second, 100_000);
    b.close();
    assertThat(readAll(log(local()))).isEqualTo(concat(first, second));
  }

  @Test
  void cleanDeletesOnlyFilesWhoseRecordsAreAllOlder() {
    for (boolean wait : new boolean[] {true, false}) {
      Path sub = dir.resolve("clean-" + wait);
      Storage storage = new LocalStorage(sub);
      WriteAheadLog log =
          StreamStateWriteAheadLog.onStorage(
              storage,
              WalSettings.of(
                  sub.toUri(), ROLL_MS, HedgePolicy.builder().disable().build(), Map.of()),
              "driver",
              resources);
      opened.add(log);
      List<String> records = data(100, 5); // times 0 .. 9900
      write(log, records, 0);
      int before = walFiles(storage).size();
      long thresh = 5_000;
      log.clean(thresh, wait);
      if (!wait) {
        org.awaitility.Awaitility.await()
            .atMost(Duration.ofSeconds(10))
            .until(() -> walFiles(storage).size() < before);
      }
      assertThat(walFiles(storage)).hasSizeLessThan(before);
      List<String> left = readAll(log);
      // Every record at or after the threshold is kept; each file deleted held only older ones.
      assertThat(left).containsAll(records.subList(50, 100));
      assertThat(records).containsSubsequence(left);
      assertThat(left).hasSizeLessThan(records.size());
      // The writer goes on after a clean.
      log.write(bytes("after"), 20_000);
      assertThat(readAll(log)).endsWith("after");
    }
  }

  @Test
  void cleanAlsoDeletesOlderWritersFiles() {
    Storage storage = local();
    WriteAheadLog old = log(storage);
    write(old, data(20, 1), 0);
    old.close();
    WriteAheadLog current = log(local());
    write(current, data(20, 2), 50_000);
    current.clean(40_000, true);
    assertThat(readAll(current)).isEqualTo(data(20, 2));
  }

  @Test
  void truncatedFilesOfAnEarlierRunDoNotStopReadingTheNext() throws Exception {
    WriteAheadLog a = log(local());
    write(a, data(30, 1), 0);
    a.close();
    List<String> firstFiles = walFiles(local());
    WriteAheadLog b = log(local());
    write(b, data(30, 2), 100_000);
    b.close();
    for (String f : firstFiles) {
      try (var ch = Files.newByteChannel(dir.resolve(f), StandardOpenOption.WRITE)) {
        ch.truncate(1);
      }
    }
    assertThat(readAll(log(local()))).isEqualTo(data(30, 2));
  }

  @Test
  void noFileOrDirectoryUnlessWritten() {
    Path root = dir.resolve("never");
    WriteAheadLog log =
        StreamStateWriteAheadLog.onStorage(
            new LocalStorage(root),
            WalSettings.of(
                root.toUri(), ROLL_MS, HedgePolicy.builder().disable().build(), Map.of()),
            "driver",
            resources);
    opened.add(log);
    assertThat(readAll(log)).isEmpty();
    log.clean(1_000_000, true);
    assertThat(Files.exists(root.resolve("driver"))).isFalse();
  }

  @Test
  void aRecordCorruptInTheMiddleIsAnErrorNamingTheFile() throws Exception {
    WriteAheadLog log = log(local());
    List<WriteAheadLogRecordHandle> handles = write(log, data(5, 1), 0);
    log.close();
    WalRecordHandle second = (WalRecordHandle) handles.get(1);
    Path file = dir.resolve(second.file());
    byte[] bytes = Files.readAllBytes(file);
    bytes[(int) second.offset() + 30] ^= 1; // a payload byte of the second record
    Files.write(file, bytes);
    WriteAheadLog reader = log(local());
    assertThatThrownBy(() -> readAll(reader))
        .isInstanceOf(CorruptFileException.class)
        .hasMessageContaining(second.file())
        .hasMessageContaining("offset " + second.offset());
    assertThatThrownBy(() -> reader.read(second))
        .isInstanceOf(CorruptFileException.class)
        .hasMessageContaining(second.file());
  }

  @Test
  void aTornLastRecordIsNotRead() throws Exception {
    WriteAheadLog log = log(local());
    List<WriteAheadLogRecordHandle> handles = write(log, data(5, 1), 0);
    log.close();
    WalRecordHandle last = (WalRecordHandle) handles.get(4);
    Path file = dir.resolve(last.file());
    try (var ch = Files.newByteChannel(file, StandardOpenOption.WRITE)) {
      ch.truncate(last.offset() + 30);
    }
    assertThat(readAll(log(local()))).isEqualTo(data(5, 1).subList(0, 4));
  }

  @Test
  void concurrentWritersShareSyncsAndLoseNothing() throws Exception {
    CountingStorage storage = new CountingStorage(local());
    WriteAheadLog log = log(storage);
    int threads = 8;
    int each = 200;
    ExecutorService pool = Executors.newFixedThreadPool(threads);
    List<Future<List<WriteAheadLogRecordHandle>>> futures = new ArrayList<>();
    for (int t = 0; t < threads; t++) {
      int thread = t;
      futures.add(
          pool.submit(
              () -> {
                List<WriteAheadLogRecordHandle> hs = new ArrayList<>();
                for (int i = 0; i < each; i++) {
                  hs.add(log.write(bytes(thread + "-" + i), 0));
                }
                return hs;
              }));
    }
    List<String> readBack = new ArrayList<>();
    for (Future<List<WriteAheadLogRecordHandle>> f : futures) {
      for (WriteAheadLogRecordHandle h : f.get(60, TimeUnit.SECONDS)) {
        readBack.add(string(log.read(h)));
      }
    }
    pool.shutdown();
    assertThat(readBack).hasSize(threads * each).doesNotHaveDuplicates();
    List<String> all = readAll(log(local()));
    assertThat(all).containsExactlyInAnyOrderElementsOf(readBack);
    // Each writer's records in its own order.
    for (int t = 0; t < threads; t++) {
      String prefix = t + "-";
      List<String> mine = all.stream().filter(s -> s.startsWith(prefix)).toList();
      for (int i = 0; i < each; i++) {
        assertThat(mine.get(i)).isEqualTo(prefix + i);
      }
    }
    System.out.printf(
        "group commit: %d records in %d appends%n", threads * each, storage.appends.get());
    assertThat(storage.appends.get()).isLessThan(threads * each);
  }

  @Test
  void aLateAppendIsHedgedByASegmentAndReadOnce() throws Exception {
    CountDownLatch release = new CountDownLatch(1);
    StallingStorage storage = new StallingStorage(local(), release);
    WriteAheadLog log =
        log(
            storage,
            HedgePolicy.builder()
                .floor(Duration.ofMillis(1000))
                .initialDeadline(Duration.ofMillis(1000))
                .budgetFraction(1)
                .build());
    log.write(bytes("one"), 0); // the journal's first append (after its header)
    storage.stallNext = true;
    WalRecordHandle two = (WalRecordHandle) log.write(bytes("two"), 100); // stalls: hedged
    assertThat(two.file()).contains("/s-");
    WalRecordHandle three = (WalRecordHandle) log.write(bytes("three"), 200);
    assertThat(three.file()).contains("/j-"); // a new journal
    release.countDown(); // the late append completes: "two" is in the old journal too
    org.awaitility.Awaitility.await()
        .atMost(Duration.ofSeconds(10))
        .until(() -> storage.stalledDone);
    assertThat(string(log.read(two))).isEqualTo("two");
    assertThat(readAll(log(local()))).containsExactly("one", "two", "three");
  }

  @Test
  void withoutAppendEachGroupIsOneSegment() {
    Storage noAppend = new NoAppendStorage(local());
    WriteAheadLog log = log(noAppend);
    List<String> records = data(25, 7);
    List<WriteAheadLogRecordHandle> handles = write(log, records, 0);
    assertThat(walFiles(noAppend)).hasSize(25).allMatch(n -> n.contains("/s-"));
    for (int i = 0; i < records.size(); i++) {
      assertThat(string(log.read(handles.get(i)))).isEqualTo(records.get(i));
    }
    assertThat(readAll(log(new NoAppendStorage(local())))).isEqualTo(records);
    log.clean(1_250, true); // records at 0..1200 in segments of stop time+1
    assertThat(readAll(log)).isEqualTo(records.subList(13, 25));
  }

  @Test
  void sparksBatchingWrapperRoundTrips() {
    SparkConf conf = new SparkConf();
    WriteAheadLog batched = new BatchedWriteAheadLog(log(local()), conf);
    List<String> records = data(100, 9);
    long time = 0;
    for (String r : records) {
      batched.write(bytes(r), time++);
    }
    batched.close();
    WriteAheadLog reader = new BatchedWriteAheadLog(log(local()), conf);
    assertThat(readAll(reader)).isEqualTo(records);
  }

  @Test
  void aMissingDirectorySettingIsNamed() {
    assertThatThrownBy(() -> new StreamStateDriverWriteAheadLog(new SparkConf()))
        .hasMessageContaining(WalSettings.DIR);
  }

  private static List<String> concat(List<String> a, List<String> b) {
    List<String> out = new ArrayList<>(a);
    out.addAll(b);
    return out;
  }

  /** A storage that forwards everything; subclasses change one thing. */
  private static class ForwardingStorage implements Storage, SupportsAppend {
    final Storage inner;

    ForwardingStorage(Storage inner) {
      this.inner = inner;
    }

    @Override
    public void create(String name, ContentWriter content) {
      inner.create(name, content);
    }

    @Override
    public InputStream open(String name) {
      return inner.open(name);
    }

    @Override
    public boolean delete(String name) {
      return inner.delete(name);
    }

    @Override
    public List<FileInfo> list(String prefix) {
      return inner.list(prefix);
    }

    @Override
    public String describe() {
      return inner.describe();
    }

    @Override
    public boolean appendSupported() {
      return true;
    }

    @Override
    public AppendableFile createAppendable(String name) {
      return ((SupportsAppend) inner).createAppendable(name);
    }

    @Override
    public void fence(String name) {
      ((SupportsAppend) inner).fence(name);
    }
  }

  /** Local disk that cannot append, as an object store. */
  private static final class NoAppendStorage extends ForwardingStorage {
    NoAppendStorage(Storage inner) {
      super(inner);
    }

    @Override
    public boolean appendSupported() {
      return false;
    }

    @Override
    public AppendableFile createAppendable(String name) {
      throw new UnsupportedOperationException();
    }
  }

  /** Counts appends (each one sync). */
  private static final class CountingStorage extends ForwardingStorage {
    final AtomicInteger appends = new AtomicInteger();

    CountingStorage(Storage inner) {
      super(inner);
    }

    @Override
    public AppendableFile createAppendable(String name) {
      AppendableFile file = super.createAppendable(name);
      return new ForwardingFile(file) {
        @Override
        public long append(byte[] bytes) {
          appends.incrementAndGet();
          return super.append(bytes);
        }
      };
    }
  }

  /** Holds the next append after {@code stallNext} is set until {@code release} opens. */
  private static final class StallingStorage extends ForwardingStorage {
    final CountDownLatch release;
    volatile boolean stallNext;
    volatile boolean stalledDone;

    StallingStorage(Storage inner, CountDownLatch release) {
      super(inner);
      this.release = release;
    }

    @Override
    public AppendableFile createAppendable(String name) {
      AppendableFile file = super.createAppendable(name);
      return new ForwardingFile(file) {
        @Override
        public long append(byte[] bytes) {
          if (stallNext) {
            stallNext = false;
            try {
              release.await();
            } catch (InterruptedException e) {
              Thread.currentThread().interrupt();
            }
            long at = super.append(bytes);
            stalledDone = true;
            return at;
          }
          return super.append(bytes);
        }
      };
    }
  }

  private static class ForwardingFile implements AppendableFile {
    private final AppendableFile inner;

    ForwardingFile(AppendableFile inner) {
      this.inner = inner;
    }

    @Override
    public String name() {
      return inner.name();
    }

    @Override
    public long append(byte[] bytes) {
      return inner.append(bytes);
    }

    @Override
    public long length() {
      return inner.length();
    }

    @Override
    public boolean isOpen() {
      return inner.isOpen();
    }

    @Override
    public void close() {
      inner.close();
    }
  }
}
