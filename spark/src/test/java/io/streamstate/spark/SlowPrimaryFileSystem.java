package io.streamstate.spark;

import io.streamstate.hadoop.ExclusiveCreateLocalFileSystem;
import java.io.FilterOutputStream;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.nio.file.Path;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.permission.FsPermission;
import org.apache.hadoop.util.Progressable;

/**
 * A local-disk file system with exclusive create ({@link ExclusiveCreateLocalFileSystem}, scheme
 * {@value #SCHEME}) on which the primary copy of a hedged sink output is slow, as on a slow
 * DataNode. A primary is a {@code part-<split>-<uuid><suffix>} file whose name is that of a spill
 * file of this JVM's sink tasks ({@link HedgedFileCommitProtocol} names each spill file after its
 * output's primary name); its alternate has the same directory, split and suffix and another UUID.
 * A primary's data writes wait until its alternate has closed, or {@link #MAX_STALL_MILLIS} at
 * most, whichever create reached the file system first. Then the primary fails (as a DataNode
 * pipeline that gives up: {@link #completeLatePrimaries} false, the default) or goes on and
 * completes late ({@code true}). So with failing primaries every hedge that fires wins, by
 * construction; a create that is never hedged completes after the longest stall. Nothing depends on
 * time but that fallback: the wait is a latch.
 *
 * <p>Records which names were primaries and which alternates (local paths), so that tests can tell
 * what the sink's manifest lists. Process-wide, as Hadoop instantiates file systems by reflection.
 */
public class SlowPrimaryFileSystem extends ExclusiveCreateLocalFileSystem {
  public static final String SCHEME = "slowprimaryfs";

  /** The longest a primary waits for its alternate. */
  static final long MAX_STALL_MILLIS = 5_000;

  private static final Pattern PART =
      Pattern.compile("(part-\\d+-)[0-9a-f]{8}(?:-[0-9a-f]{4}){3}-[0-9a-f]{12}(.*)");

  /** Pairs of which one copy has been created, by directory, split and suffix. */
  private static final Map<String, Pair> WAITING = new ConcurrentHashMap<>();

  /** Whether a primary whose alternate closed goes on (true) or fails (false, the default). */
  static volatile boolean completeLatePrimaries;

  private static final Set<Path> PRIMARIES = ConcurrentHashMap.newKeySet();
  private static final Set<Path> ALTERNATES = ConcurrentHashMap.newKeySet();

  /** The local URI of {@code dir} on this file system. */
  public static String uriOf(Path dir) {
    return SCHEME + "://" + dir.toAbsolutePath();
  }

  /** Local paths of the part files created as primaries (stalled). */
  public static Set<Path> primaries() {
    return Set.copyOf(PRIMARIES);
  }

  /** Local paths of the part files created as alternates (the hedges). */
  public static Set<Path> alternates() {
    return Set.copyOf(ALTERNATES);
  }

  /** Whether a sink task of this JVM has a spill file named {@code name}: the output's primary. */
  private static boolean isSpillFileName(String name) {
    Path root = LocalDirs.sinkSpillRoot();
    try (java.util.stream.Stream<Path> attempts = java.nio.file.Files.list(root)) {
      return attempts.anyMatch(attempt -> java.nio.file.Files.exists(attempt.resolve(name)));
    } catch (java.nio.file.NoSuchFileException e) {
      return false;
    } catch (IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
  }

  private static final class Pair {
    final long createdNanos = System.nanoTime();
    final CountDownLatch alternateClosed = new CountDownLatch(1);
  }

  @Override
  public FSDataOutputStream create(
      org.apache.hadoop.fs.Path f,
      FsPermission permission,
      boolean overwrite,
      int bufferSize,
      short replication,
      long blockSize,
      Progressable progress)
      throws IOException {
    FSDataOutputStream out =
        super.create(f, permission, overwrite, bufferSize, replication, blockSize, progress);
    Matcher m = PART.matcher(f.getName());
    if (!m.matches()) {
      return out;
    }
    Path local = toLocal(f);
    String key = local.getParent() + "/" + m.group(1) + "*" + m.group(2);
    boolean primary = isSpillFileName(f.getName());
    Pair pair;
    synchronized (WAITING) {
      Pair waiting = WAITING.get(key);
      long staleNanos = TimeUnit.MILLISECONDS.toNanos(2 * MAX_STALL_MILLIS);
      if (waiting == null || System.nanoTime() - waiting.createdNanos > staleNanos) {
        pair = new Pair();
        WAITING.put(key, pair);
      } else {
        pair = waiting;
        WAITING.remove(key); // both copies are here: the next create of this key starts another
      }
    }
    (primary ? PRIMARIES : ALTERNATES).add(local);
    return new FSDataOutputStream(
        primary ? new StalledStream(out, pair, key) : new SignallingStream(out, pair), statistics);
  }

  /** The primary: its first write (or its close, if it writes nothing) waits for the alternate. */
  private static final class StalledStream extends FilterOutputStream {
    private final Pair pair;
    private final String key;
    private boolean waited;

    StalledStream(FSDataOutputStream out, Pair pair, String key) {
      super(out);
      this.pair = pair;
      this.key = key;
    }

    private void stallOnce() throws IOException {
      if (waited) {
        return;
      }
      waited = true;
      boolean hedged;
      try {
        hedged = pair.alternateClosed.await(MAX_STALL_MILLIS, TimeUnit.MILLISECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new InterruptedIOException("interrupted in a stalled write");
      }
      if (hedged && !completeLatePrimaries) {
        throw new IOException("injected: the slow pipeline of " + key + " gave up");
      }
    }

    @Override
    public void write(int b) throws IOException {
      stallOnce();
      out.write(b);
    }

    @Override
    public void write(byte[] b, int off, int len) throws IOException {
      stallOnce();
      out.write(b, off, len);
    }

    @Override
    public void close() throws IOException {
      stallOnce();
      WAITING.remove(key, pair);
      super.close();
    }
  }

  /** The alternate: once closed, its primary goes on. */
  private static final class SignallingStream extends FilterOutputStream {
    private final Pair pair;

    SignallingStream(FSDataOutputStream out, Pair pair) {
      super(out);
      this.pair = pair;
    }

    @Override
    public void write(byte[] b, int off, int len) throws IOException {
      out.write(b, off, len);
    }

    @Override
    public void close() throws IOException {
      try {
        super.close();
      } finally {
        pair.alternateClosed.countDown();
      }
    }
  }
}
