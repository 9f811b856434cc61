package io.streamstate.cli.migrate;

import io.streamstate.cli.checkpoint.Checkpoint;
import io.streamstate.core.error.ConflictException;
import io.streamstate.core.error.FileAlreadyExistsException;
import io.streamstate.core.error.RetryableException;
import io.streamstate.core.storage.ContentWriter;
import io.streamstate.core.storage.Storage;
import io.streamstate.core.storage.Storages;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.URI;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;

/**
 * Copies a checkpoint to another store, file by file, each verified by reading it back; resumable
 * after a kill. The protocol (docs/cli.md, "migrate"):
 *
 * <ol>
 *   <li>m1: the destination is empty, then {@link MigrationMarker} naming the source is created
 *       there (create-if-absent); or it holds a marker naming this source (a rerun: resume).
 *       Anything else is refused: a destination that is not empty is not ours to write.
 *   <li>m2: each file of the {@link MigrationPlan}, in its order: absent at the destination, it is
 *       created (create-if-absent) from the source's bytes, then read back, its length and SHA-256
 *       compared with the source's; present with the source's length and digest, it is skipped (a
 *       run before copied it); present with other bytes, it was torn by a kill of a run before (the
 *       marker proves that run wrote it): it is deleted and copied again.
 *   <li>m3: the destination's listing must equal the plan (names and lengths), and the source's
 *       listing the one the plan was made from (a source that changed meanwhile has a writer).
 *   <li>m4: the marker is deleted: the destination is a checkpoint a query may start from.
 * </ol>
 *
 * <p>Nothing at the source is written. At the destination only new files are created, and only
 * files a migration of this source wrote are replaced.
 */
public final class Migration {
  /** What a run did. */
  public record Result(
      String source,
      String destination,
      int files,
      long bytes,
      int copied,
      int skipped,
      int replaced,
      boolean resumed,
      List<String> notes) {}

  /** A test's kill: stops after this many files copied, leaving the next one torn. */
  static final class Interrupted extends RuntimeException {
    Interrupted(String message) {
      super(message);
    }
  }

  private final Checkpoint source;
  private final Storage destination;
  private final URI destinationUri;
  private final int interruptAfterFiles;

  /**
   * @param interruptAfterFiles negative for none; else the run stops (throws) after that many files
   *     copied, leaving the next one at the destination with half its bytes, as a kill would
   */
  public Migration(
      Checkpoint source, Storage destination, URI destinationUri, int interruptAfterFiles) {
    this.source = source;
    this.destination = destination;
    this.destinationUri = destinationUri;
    this.interruptAfterFiles = interruptAfterFiles;
  }

  /**
   * Runs the migration.
   *
   * @param progress made with the number of files and bytes to copy
   * @throws ConflictException the destination is not empty and not a migration of this source, a
   *     live query holds the source's log journal, or the source changed while it was copied
   */
  public Result run(ProgressFactory progress) {
    String sourceName = source.describe();
    // The source is read (and refused if a live query holds it) before anything is written.
    try (MigrationPlan plan = MigrationPlan.of(source, destinationUri)) {
      // m1: the destination is ours (empty, or marked by a migration of this source).
      boolean resumed = claimDestination(sourceName);
      MigrationProgress bar = progress.start(plan.items().size(), plan.bytes());
      Map<String, Long> present = MigrationPlan.listing(destination);
      int copied = 0;
      int skipped = 0;
      int replaced = 0;
      // m2: each file, created, skipped when already there whole, or replaced when torn.
      for (MigrationPlan.Item item : plan.items()) {
        if (present.containsKey(item.name())) {
          if (same(item)) {
            skipped++;
          } else {
            destination.delete(item.name());
            copy(item);
            replaced++;
          }
        } else {
          if (copied == interruptAfterFiles) {
            tear(item);
            throw new Interrupted(
                "stopped by the test hook after " + copied + " files, " + item.name() + " torn");
          }
          copy(item);
          copied++;
        }
        bar.fileDone(item.length());
      }
      // m3: the destination holds exactly the plan's files; the source did not change meanwhile.
      checkListings(plan);
      bar.finish();
      // m4: complete.
      destination.delete(MigrationMarker.NAME);
      return new Result(
          sourceName,
          describe(destination),
          plan.items().size(),
          plan.bytes(),
          copied,
          skipped,
          replaced,
          resumed,
          plan.notes());
    }
  }

  /** Makes the migration's progress display once the plan's size is known. */
  @FunctionalInterface
  public interface ProgressFactory {
    MigrationProgress start(int files, long bytes);
  }

  /**
   * m1: creates the marker in an empty destination, or accepts one naming this source.
   *
   * @return whether this run resumes an earlier one
   */
  private boolean claimDestination(String sourceName) {
    String where = describe(destination);
    Optional<String> marked = MigrationMarker.read(destination);
    if (marked.isPresent()) {
      if (!marked.get().equals(sourceName)) {
        throw new ConflictException(
            "refused: "
                + where
                + " holds the marker of a migration from "
                + (marked.get().isEmpty() ? "an unknown source" : marked.get())
                + ", not from "
                + sourceName
                + ": not ours to resume");
      }
      return true;
    }
    if (!destination.list("").isEmpty()) {
      throw new ConflictException(
          "refused: "
              + where
              + " is not empty (and holds no marker of an unfinished migration from "
              + sourceName
              + "): migrate writes only into an empty destination");
    }
    try {
      MigrationMarker.create(destination, sourceName);
    } catch (FileAlreadyExistsException e) {
      return claimDestination(sourceName); // another run created it meanwhile: ours only if same
    }
    return false;
  }

  /** Creates the item's file at the destination, then reads it back and compares. */
  private void copy(MigrationPlan.Item item) {
    Digest written = new Digest();
    try {
      destination.create(
          item.name(),
          out -> {
            try (InputStream in = item.from().open(item.fromName())) {
              written.copy(in, out);
            }
          });
    } catch (FileAlreadyExistsException e) {
      throw new ConflictException(
          "refused: "
              + location(item.name())
              + " appeared while the migration wrote it (another writer at the destination?)",
          e);
    }
    if (written.length != item.length()) {
      throw new ConflictException(
          "the source file "
              + item.from().describe()
              + "/"
              + item.fromName()
              + " is "
              + written.length
              + " bytes, not the "
              + item.length()
              + " it was listed with: it is being written (a live query?, or on HDFS one that"
              + " died before closing it); stop the query, then rerun");
    }
    Digest back = Digest.of(destination, item.name());
    if (back.length != written.length || !Arrays.equals(back.digest(), written.digest())) {
      throw new RetryableException(
          "read back, "
              + location(item.name())
              + " is not what was written ("
              + back.length
              + " bytes, SHA-256 "
              + back.hex()
              + "; written "
              + written.length
              + " bytes, SHA-256 "
              + written.hex()
              + "): rerun the migration to replace it");
    }
  }

  /** Whether the destination's file holds the source's bytes. */
  private boolean same(MigrationPlan.Item item) {
    Digest there = Digest.of(destination, item.name());
    if (there.length != item.length()) {
      return false;
    }
    Digest here = Digest.of(item.from(), item.fromName());
    return Arrays.equals(there.digest(), here.digest());
  }

  /** The test hook's kill: half the file's bytes published at its name. */
  private void tear(MigrationPlan.Item item) {
    byte[] bytes = Storages.readAll(item.from(), item.fromName());
    destination.create(item.name(), ContentWriter.ofBytes(Arrays.copyOf(bytes, bytes.length / 2)));
  }

  /** m3. */
  private void checkListings(MigrationPlan plan) {
    Map<String, Long> expected = new TreeMap<>();
    plan.items().forEach(i -> expected.put(i.name(), i.length()));
    Map<String, Long> there = new TreeMap<>(MigrationPlan.listing(destination));
    there.remove(MigrationMarker.NAME);
    List<String> differences = differences(expected, there);
    if (!differences.isEmpty()) {
      throw new ConflictException(
          "the destination "
              + describe(destination)
              + " does not list what was copied: "
              + String.join("; ", differences.subList(0, Math.min(5, differences.size())))
              + (differences.size() > 5 ? "; ..." : "")
              + " (another writer at the destination?); the marker is kept");
    }
    Map<String, Long> now = new TreeMap<>(MigrationPlan.listing(source.root()));
    List<String> changed = differences(new TreeMap<>(plan.sourceListing()), now);
    if (!changed.isEmpty()) {
      throw new ConflictException(
          "the source "
              + source.describe()
              + " changed while it was copied: "
              + String.join("; ", changed.subList(0, Math.min(5, changed.size())))
              + (changed.size() > 5 ? "; ..." : "")
              + " (a live query?): stop it, then rerun; the marker is kept");
    }
  }

  private static List<String> differences(Map<String, Long> expected, Map<String, Long> actual) {
    List<String> d = new ArrayList<>();
    expected.forEach(
        (name, length) -> {
          Long l = actual.get(name);
          if (l == null) {
            d.add(name + " is missing");
          } else if (!l.equals(length)) {
            d.add(name + " is " + l + " bytes, not " + length);
          }
        });
    actual.keySet().stream()
        .filter(n -> !expected.containsKey(n))
        .forEach(n -> d.add(n + " is new"));
    return d;
  }

  private String location(String name) {
    return describe(destination) + "/" + name;
  }

  private static String describe(Storage s) {
    String d = s.describe();
    return d.endsWith("/") ? d.substring(0, d.length() - 1) : d;
  }

  /** Length and SHA-256 of bytes as they stream by. */
  private static final class Digest {
    private final MessageDigest sha;
    private long length;
    private byte[] value;

    Digest() {
      try {
        sha = MessageDigest.getInstance("SHA-256");
      } catch (NoSuchAlgorithmException e) {
        throw new IllegalStateException(e);
      }
    }

    static Digest of(Storage storage, String name) {
      Digest d = new Digest();
      try (InputStream in = storage.open(name)) {
        d.copy(in, OutputStream.nullOutputStream());
      } catch (IOException e) {
        throw new RetryableException("Cannot read " + describe(storage) + "/" + name + ": " + e, e);
      } catch (UncheckedIOException e) {
        throw new RetryableException(
            "Cannot read " + describe(storage) + "/" + name + ": " + e.getCause(), e);
      }
      return d;
    }

    void copy(InputStream in, OutputStream out) throws IOException {
      byte[] buffer = new byte[1 << 16];
      for (int n; (n = in.read(buffer)) > 0; ) {
        sha.update(buffer, 0, n);
        out.write(buffer, 0, n);
        length += n;
      }
    }

    byte[] digest() {
      if (value == null) {
        value = sha.digest();
      }
      return value;
    }

    String hex() {
      return HexFormat.of().formatHex(digest()).substring(0, 16) + "...";
    }
  }
}
