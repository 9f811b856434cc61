package io.streamstate.hadoop;

import io.streamstate.core.ProcessResources;
import io.streamstate.core.config.ConfigValues;
import io.streamstate.core.error.RetryableException;
import io.streamstate.core.error.UnsupportedException;
import io.streamstate.core.storage.LocalStorage;
import io.streamstate.core.storage.Storage;
import java.io.IOException;
import java.net.URI;
import java.net.URISyntaxException;
import java.nio.file.Paths;
import java.util.Objects;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.UnsupportedFileSystemException;

/**
 * The one way the Spark adapter and the tools turn a checkpoint location into a {@link Storage}.
 *
 * <h2>Settings (read from the Hadoop {@link Configuration} passed in)</h2>
 *
 * <table>
 *   <caption>Settings</caption>
 *   <tr><th>key</th><th>default</th><th>meaning</th></tr>
 *   <tr><td>{@value #SPARK_ALLOW_SINGLE_WRITER}</td><td>false</td>
 *       <td>accept a store without create-if-absent in single-writer mode (Spark copies SQL
 *       settings into the Hadoop configuration it hands to state stores)</td></tr>
 *   <tr><td>{@value #ALLOW_SINGLE_WRITER}</td><td>false</td>
 *       <td>the same, for use outside Spark (tools, tests)</td></tr>
 * </table>
 *
 * <p>The store's own {@code fs.*} settings apply as usual, for example {@code
 * fs.s3a.create.conditional.enabled} (S3A, default true on Hadoop 3.4.2+).
 */
public final class HadoopStorages {
  /** Spark SQL setting that accepts single-writer storage; default false. */
  public static final String SPARK_ALLOW_SINGLE_WRITER =
      "spark.sql.streaming.stateStore.streamstate.allowSingleWriterStorage";

  /** Hadoop setting that accepts single-writer storage; default false. */
  public static final String ALLOW_SINGLE_WRITER = "streamstate.storage.allowSingleWriter";

  private HadoopStorages() {}

  /**
   * A storage rooted at {@code root}, sharing this process's resources ({@link
   * ProcessResources#shared()}: the slow-DataNode tracking of its cluster).
   *
   * <ul>
   *   <li>{@code file:} URIs, and scheme-less absolute paths when the default file system ({@code
   *       fs.defaultFS}) is local: the core's {@link LocalStorage} ({@code java.nio}; Hadoop's
   *       local file system would fork a process per permission change and has no atomic create).
   *   <li>Anything else: a {@link HadoopStorage} on {@code FileSystem.get(root, conf)}, if the
   *       store gives create-if-absent, or if {@link #allowsSingleWriter} says so.
   * </ul>
   *
   * @throws UnsupportedException the store gives no create-if-absent and single-writer mode was not
   *     accepted (the message names the setting), or no file system serves the scheme
   * @throws RetryableException the file system could not be reached
   * @throws IllegalArgumentException {@code root} is a relative path
   */
  public static Storage open(URI root, Configuration conf) {
    return open(root, conf, ProcessResources.shared());
  }

  /**
   * As {@link #open(URI, Configuration)}, a {@link HadoopStorage} sharing the pools and registries
   * of {@code resources} (its cluster's slow-DataNode tracking) instead of this process's.
   */
  public static Storage open(URI root, Configuration conf, ProcessResources resources) {
    Objects.requireNonNull(root, "root");
    Objects.requireNonNull(conf, "conf");
    URI location = qualify(root, conf);
    if ("file".equalsIgnoreCase(location.getScheme())) {
      return new LocalStorage(Paths.get(location.getPath()));
    }
    return openOnFileSystem(location, conf, resources);
  }

  /**
   * A {@link HadoopStorage} rooted at {@code root} on any file system, local disk included (where
   * {@link #open} gives the core's {@link LocalStorage}; here creates and appends on local disk
   * still go through it, inside the {@link HadoopStorage}), after the same capability check: for
   * callers that need a {@link HadoopStorage} whatever the store, as the Spark checkpoint file
   * manager opens a log directory for its log journal (spark-shared's {@code LogJournal}), which
   * the streamstate CLI's {@code export-logs} writes out.
   *
   * @throws UnsupportedException as {@link #open}
   * @throws RetryableException the file system could not be reached
   */
  public static HadoopStorage openHadoop(URI root, Configuration conf, ProcessResources resources) {
    Objects.requireNonNull(root, "root");
    Objects.requireNonNull(conf, "conf");
    return openOnFileSystem(qualify(root, conf), conf, resources);
  }

  /**
   * A {@link HadoopStorage} on {@code FileSystem.get(location, conf)}, after the capability check.
   */
  private static HadoopStorage openOnFileSystem(
      URI location, Configuration conf, ProcessResources resources) {
    FileSystem fs;
    try {
      fs = FileSystem.get(location, conf);
    } catch (UnsupportedFileSystemException e) {
      throw new UnsupportedException(
          "No Hadoop file system for " + location + " (" + e.getMessage() + ")", e);
    } catch (IOException e) {
      throw new RetryableException("Cannot open the file system of " + location + ": " + e, e);
    }
    Path path = new Path(location);
    return allowsSingleWriter(conf)
        ? HadoopStorage.openAllowingSingleWriter(fs, path, resources)
        : HadoopStorage.open(fs, path, resources);
  }

  /**
   * Whether {@code conf} accepts single-writer storage ({@value #SPARK_ALLOW_SINGLE_WRITER} or
   * {@value #ALLOW_SINGLE_WRITER}).
   *
   * @throws IllegalArgumentException a value other than {@code true} or {@code false}, naming the
   *     key
   */
  public static boolean allowsSingleWriter(Configuration conf) {
    return readBoolean(conf, SPARK_ALLOW_SINGLE_WRITER) || readBoolean(conf, ALLOW_SINGLE_WRITER);
  }

  /** Strictly: Hadoop's {@code getBoolean} would read a typo ("ture") as the default. */
  private static boolean readBoolean(Configuration conf, String key) {
    String value = conf.get(key);
    return value != null && !value.isBlank() && ConfigValues.parseBoolean(key, value);
  }

  /** Gives a scheme-less path the scheme and authority of the default file system. */
  private static URI qualify(URI root, Configuration conf) {
    if (root.getScheme() != null) {
      return root;
    }
    String path = root.getPath();
    if (path == null || !path.startsWith("/")) {
      throw new IllegalArgumentException(
          "Storage root must be an absolute path or a URI with a scheme: " + root);
    }
    URI defaultFs = FileSystem.getDefaultUri(conf);
    try {
      return new URI(defaultFs.getScheme(), defaultFs.getAuthority(), path, null, null);
    } catch (URISyntaxException e) {
      throw new IllegalArgumentException("Cannot qualify " + root + " with " + defaultFs, e);
    }
  }
}
