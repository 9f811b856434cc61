package io.streamstate.spark.shared.checkpoint;

import java.util.regex.Pattern;

/**
 * The files Spark's own {@code RocksDBStateStoreProvider} writes through the checkpoint file
 * manager, by name, and how the manager treats them (Spark 4.2.0, {@code
 * org/apache/spark/sql/execution/streaming/state/}):
 *
 * <ul>
 *   <li>a version's changelog, {@code <version>[_<checkpointId>].changelog}: {@code
 *       StateStoreChangelogWriter} opens it with {@code createAtomic(file, overwriteIfPossible =
 *       true)} ({@code StateStoreChangelog.scala} line 113) and closes it in {@code commit()}, on
 *       the batch's path when changelog checkpointing is on;
 *   <li>a snapshot's zip, {@code <version>[_<checkpointId>].zip} ({@code metadata}, {@code
 *       OPTIONS-*}, {@code MANIFEST-*}, {@code CURRENT}): {@code RocksDBFileManager.zipToDfsFile},
 *       {@code createAtomic(dfsZipFile, overwriteIfPossible = true)} ({@code
 *       RocksDBFileManager.scala} line 1018), in maintenance, or on the batch's path when a
 *       snapshot is forced (changelog checkpointing off, or a new column family);
 *   <li>not through the manager: the SST and archived log files, {@code fs.copyFromLocalFile} on
 *       the provider's own {@code FileSystem} ({@code RocksDBFileManager.scala} line 858; HDFS:
 *       {@code FileUtil.copy}, a {@code getFileInfo} then {@code create(overwrite=true)}, no
 *       rename; S3A: one upload, no rename). The manager never sees them.
 * </ul>
 *
 * <p>Both kinds through the manager are written once at their final name (no rename). Spark asks
 * for an overwrite, and gets one: a task retry, or a batch run again after a restart, rewrites the
 * same version's changelog, and on a checkpoint without checkpoint ids that second writer must win.
 * A create-if-absent (S3's conditional PUT) would fail that retry, so on S3 these are plain PUTs,
 * published whole at close. On stores that take a name at create (HDFS), they are buffered up to
 * {@link #MAX_HEDGED_BYTES} and published hedged as Spark's log entries are ({@link
 * HedgedLogWrites}), with a writer of their own ({@link
 * io.streamstate.spark.shared.Hedgers.Kind#SPARK_STATE_FILES}); larger ones spill into the file's
 * own stream and are written unhedged.
 */
public final class RocksDbUploads {
  private RocksDbUploads() {}

  /**
   * Files larger than this are not buffered: a changelog of a large batch would otherwise sit in
   * the executor's heap, once per concurrent task.
   */
  public static final int MAX_HEDGED_BYTES = 8 << 20;

  private static final Pattern NAME = Pattern.compile("\\d+(_[0-9A-Za-z-]+)?\\.(changelog|zip)");

  /** Whether {@code name} is a changelog's or a snapshot zip's of Spark's RocksDB provider. */
  public static boolean isUploadName(String name) {
    return NAME.matcher(name).matches();
  }
}
