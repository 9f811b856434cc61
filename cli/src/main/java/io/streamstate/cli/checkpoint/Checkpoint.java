package io.streamstate.cli.checkpoint;

import io.streamstate.cli.json.Json;
import io.streamstate.core.ProcessResources;
import io.streamstate.core.engine.segment.SegmentCatalog;
import io.streamstate.core.error.MissingFileException;
import io.streamstate.core.error.RetryableException;
import io.streamstate.core.format.FramedFile;
import io.streamstate.core.storage.Storage;
import io.streamstate.core.storage.Storages;
import io.streamstate.hadoop.HadoopStorage;
import io.streamstate.hadoop.HadoopStorages;
import java.io.IOException;
import java.net.URI;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Paths;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;

/**
 * A Spark streaming checkpoint opened for reading: its location, the {@link Storage} of its root
 * and of the directories in it (each through {@link HadoopStorages}, with the user's Hadoop
 * configuration), and what it holds, read on first use: the query id ({@code metadata}), the offset
 * and commit logs ({@link SparkLog}) and the state directory ({@link StateDirectory}).
 *
 * <pre>
 * &lt;checkpoint&gt;/metadata                  {"id": query id}
 * &lt;checkpoint&gt;/offsets/, commits/        Spark's logs (files, our log journal, hedge copies)
 * &lt;checkpoint&gt;/state/&lt;op&gt;/&lt;part&gt;/[&lt;store&gt;/]  the stores; state/ is our storage root (_segments/)
 * </pre>
 */
public final class Checkpoint implements AutoCloseable {
  private final URI uri;
  private final Configuration conf;
  private final ProcessResources resources;
  private final Storage root;
  private final Map<String, Storage> storages = new ConcurrentHashMap<>();
  private SparkLog offsets;
  private SparkLog commits;
  private StateDirectory state;
  private Segments segments;

  private Checkpoint(URI uri, Configuration conf, ProcessResources resources, Storage root) {
    this.uri = uri;
    this.conf = conf;
    this.resources = resources;
    this.root = root;
  }

  /**
   * Opens the checkpoint at {@code location}: a URI ({@code file:}, {@code hdfs:}, {@code s3a:},
   * ...) or a path (relative paths are local, from the working directory).
   *
   * @throws NotACheckpointException the location does not exist, or is not a Spark streaming
   *     checkpoint
   * @throws io.streamstate.core.error.UnsupportedException no file system for its scheme, or a
   *     store without create-if-absent
   * @throws RetryableException the store could not be reached or read
   */
  public static Checkpoint open(String location, Configuration conf, ProcessResources resources) {
    URI uri = toUri(location);
    Storage root = HadoopStorages.open(uri, conf, resources);
    Checkpoint checkpoint = new Checkpoint(uri, conf, resources, root);
    checkpoint.checkIsCheckpoint();
    return checkpoint;
  }

  /** The location as a URI without a trailing slash; relative paths made absolute. */
  public static URI toUri(String location) {
    String trimmed = location.trim();
    while (trimmed.length() > 1 && trimmed.endsWith("/") && !trimmed.endsWith(":/")) {
      trimmed = trimmed.substring(0, trimmed.length() - 1);
    }
    if (trimmed.isEmpty()) {
      throw new IllegalArgumentException("the checkpoint location is empty");
    }
    try {
      URI uri = new URI(trimmed);
      if (uri.getScheme() == null && !trimmed.startsWith("/")) {
        return Paths.get(trimmed).toAbsolutePath().normalize().toUri(); // relative: local disk
      }
      return uri; // a URI, or an absolute path on the default file system (fs.defaultFS)
    } catch (URISyntaxException e) {
      if (trimmed.contains("://")) {
        throw new IllegalArgumentException(
            "'" + location + "' is not a valid URI: " + e.getMessage());
      }
      return Paths.get(trimmed).toAbsolutePath().normalize().toUri();
    }
  }

  private void checkIsCheckpoint() {
    boolean hasMetadata;
    try {
      root.open("metadata").close();
      hasMetadata = true;
    } catch (MissingFileException e) {
      hasMetadata = false;
    } catch (IOException e) {
      throw new RetryableException("Cannot read " + location("metadata") + ": " + e, e);
    }
    if (hasMetadata || !storageAt("offsets").list("").isEmpty()) {
      return;
    }
    if (!exists()) {
      throw new NotACheckpointException(describe() + " does not exist");
    }
    String marked =
        io.streamstate.cli.migrate.MigrationMarker.read(root)
            .map(
                source ->
                    " ("
                        + io.streamstate.cli.migrate.MigrationMarker.incomplete(describe(), source)
                        + ")")
            .orElse("");
    throw new NotACheckpointException(
        describe()
            + " is not a Spark streaming checkpoint: it has no metadata file and no offsets/ log"
            + marked);
  }

  /** Whether the location exists at all (asked only to word the error for a non-checkpoint). */
  private boolean exists() {
    if (root instanceof io.streamstate.core.storage.LocalStorage local) {
      return java.nio.file.Files.exists(local.root());
    }
    if (root instanceof HadoopStorage h) {
      try {
        return h.fileSystem().exists(h.root());
      } catch (IOException e) {
        throw new RetryableException("Cannot look up " + describe() + ": " + e, e);
      }
    }
    try {
      FileSystem fs = FileSystem.get(uri, conf);
      return fs.exists(new Path(uri));
    } catch (IOException e) {
      throw new RetryableException("Cannot look up " + describe() + ": " + e, e);
    }
  }

  /** The checkpoint's location, as its storage names it (without a trailing slash). */
  public String describe() {
    String d = root.describe();
    return d.endsWith("/") ? d.substring(0, d.length() - 1) : d;
  }

  /** A file or directory of the checkpoint, for messages. */
  public String location(String relative) {
    return FramedFile.location(root, relative);
  }

  public URI uri() {
    return uri;
  }

  public Configuration conf() {
    return conf;
  }

  public ProcessResources resources() {
    return resources;
  }

  /** The storage of the checkpoint's root. */
  public Storage root() {
    return root;
  }

  /** A storage rooted at the directory {@code relative} of the checkpoint (one per directory). */
  public Storage storageAt(String relative) {
    return storages.computeIfAbsent(relative, r -> HadoopStorages.open(child(r), conf, resources));
  }

  /** The URI of the directory {@code relative} of the checkpoint. */
  public URI child(String relative) {
    String base = uri.toString();
    return URI.create((base.endsWith("/") ? base : base + "/") + relative);
  }

  /**
   * The query id the {@code metadata} file holds.
   *
   * @throws MissingFileException there is no {@code metadata} file
   * @throws Json.JsonException it is not the JSON Spark writes
   */
  public String queryId() {
    byte[] bytes = Storages.readAll(root, "metadata");
    Object id = Json.parseObject(new String(bytes, StandardCharsets.UTF_8).trim()).get("id");
    if (!(id instanceof String s)) {
      throw new Json.JsonException(location("metadata") + " holds no query id");
    }
    return s;
  }

  /** Spark's offset log ({@code offsets/}), read on first use. */
  public synchronized SparkLog offsets() {
    if (offsets == null) {
      offsets = SparkLog.read(this, SparkLog.OFFSETS);
    }
    return offsets;
  }

  /** Spark's commit log ({@code commits/}), read on first use. */
  public synchronized SparkLog commits() {
    if (commits == null) {
      commits = SparkLog.read(this, SparkLog.COMMITS);
    }
    return commits;
  }

  /** The storage root of the stores, {@code state/}: our provider's root ({@code _segments/}). */
  public Storage stateStorage() {
    return storageAt("state");
  }

  /** What {@code state/} holds, listed on first use. */
  public synchronized StateDirectory state() {
    if (state == null) {
      state = StateDirectory.list(stateStorage());
    }
    return state;
  }

  /** Our group commits under {@code state/_segments/}, read on first use (core's catalog). */
  public synchronized Segments segments() {
    if (segments == null) {
      segments =
          Segments.read(
              stateStorage(), SegmentCatalog.of(resources, stateStorage()), state().segmentFiles());
    }
    return segments;
  }

  @Override
  public void close() {
    storages.values().forEach(Storage::close);
    root.close();
  }
}
