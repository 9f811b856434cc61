package io.streamstate.spark;

import static org.assertj.core.api.Assertions.assertThat;

import io.streamstate.hadoop.FaultInjectingBlobStore;
import io.streamstate.hadoop.S3ProxyFixture;
import io.streamstate.spark.checkpoint.RenameFreeCheckpointFileManager;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.streaming.OutputMode;
import org.apache.spark.sql.streaming.StreamingQuery;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * A store whose listings lag behind writes (an S3-compatible store that is not strongly
 * consistent): every new entry of Spark's metadata logs stays out of listings for {@value #LAG_MS}
 * ms, longer than the test, while GET and HEAD see it at once ({@code FaultInjectingBlobStore}
 * behind an in-process S3Proxy).
 *
 * <p>A query with a file source, our provider and {@link RenameFreeCheckpointFileManager}, its
 * checkpoint on {@code s3a://}, runs two batches, stops, and restarts at once: every log entry is
 * still out of the listings. Spark reads its offset, commit and source logs' latest batch from
 * listings (and a log directory's existence from one); the manager finds the entries the listings
 * left out by name. Asserted: the counts after the restart equal a plain-Java count of every input
 * file, and the raw listing of the offset log did lag at the end (so the restart met the lag).
 *
 * <p>Only the logs lag here. Our provider finds its own commits by listing too (their names are
 * attempt-unique, so they cannot be asked for by name): a restart within the lag of its files fails
 * to load with an error naming the version and the directories, and a restart after the lag loads
 * (docs/reliability.md, "Listings that lag").
 */
class S3ListingLagIT {
  private static final long LAG_MS = 600_000;

  static final java.nio.file.Path work = TestSessions.newWorkDir(S3ListingLagIT.class);
  private static FaultInjectingBlobStore store;
  private static S3ProxyFixture s3;
  private static SparkSession spark;

  @BeforeAll
  static void start() throws Exception {
    s3 =
        S3ProxyFixture.start(
            inner -> {
              store = new FaultInjectingBlobStore(inner);
              return store;
            });
    store.setPlan(new FaultInjectingBlobStore.Plan(0, 0, 0, 0, 0, LAG_MS, false));
    store.lagOnly(
        key ->
            key.contains("/offsets/")
                || key.contains("/commits/")
                || key.contains("/sources/")
                || key.contains("/_spark_metadata/"));
    Map<String, String> extra = new HashMap<>();
    s3.sharedClientSettings().forEach((k, v) -> extra.put("spark.hadoop." + k, v));
    extra.put(TestSessions.PROVIDER_CLASS, TestSessions.OURS);
    extra.put(
        "spark.sql.streaming.checkpointFileManagerClass",
        RenameFreeCheckpointFileManager.class.getName());
    spark = TestSessions.start("S3ListingLagIT", work, extra);
  }

  @AfterAll
  static void stop() throws Exception {
    if (spark != null) {
      TestSessions.stopWithStores(spark);
    }
    if (s3 != null) {
      s3.close();
    }
  }

  @Test
  void aRestartWithinTheListingLagResumesFromTheNewestBatch() throws Exception {
    java.nio.file.Path input = work.resolve("input");
    Files.createDirectories(input);
    String checkpoint = S3ProxyFixture.path("lag/checkpoint").toString();
    List<List<String>> files =
        List.of(List.of("a", "a", "b"), List.of("b", "c", "a"), List.of("c", "d", "a", "a"));

    writeInput(input, 0, files.get(0));
    StreamingQuery query = start(input, checkpoint);
    query.processAllAvailable();
    writeInput(input, 1, files.get(1));
    query.processAllAvailable();
    query.stop();

    // At once, on the same checkpoint: every entry written so far is out of the listings.
    query = start(input, checkpoint);
    query.processAllAvailable();
    writeInput(input, 2, files.get(2));
    query.processAllAvailable();
    query.stop();
    if (query.exception().isDefined()) {
      throw query.exception().get();
    }

    Map<String, Long> expected = new TreeMap<>();
    files.forEach(f -> f.forEach(k -> expected.merge(k, 1L, Long::sum)));
    Map<String, Long> counts = new TreeMap<>();
    for (Row r : spark.sql("SELECT k, count FROM lag_counts").collectAsList()) {
      counts.put(r.getString(0), r.getLong(1));
    }
    assertThat(counts).isEqualTo(expected);

    // The restart did meet the lag: the offset log's raw listing still misses entries that are
    // there by name.
    Path offsets = new Path(checkpoint, "offsets");
    FileSystem fs = offsets.getFileSystem(spark.sparkContext().hadoopConfiguration());
    List<String> listed = rawListing(fs, offsets);
    assertThat(fs.exists(new Path(offsets, "2"))).as("offsets/2 by name").isTrue();
    assertThat(listed).as("the raw listing of %s", offsets).doesNotContain("2");
    assertThat(store.injected().get(FaultInjectingBlobStore.Kind.LISTING_LAG)).isPositive();
  }

  @Test
  void theManagerListsTheEntriesTheStoreLeftOut() throws Exception {
    Configuration conf = spark.sparkContext().hadoopConfiguration();
    Path offsets = S3ProxyFixture.path("lag/manager/offsets");
    Path sources = S3ProxyFixture.path("lag/manager/sources/0");
    RenameFreeCheckpointFileManager manager = new RenameFreeCheckpointFileManager(offsets, conf);
    for (String name : List.of("0", "1", "2")) {
      write(manager, new Path(offsets, name));
    }
    for (String name : List.of("0", "1.compact", "2")) {
      write(manager, new Path(sources, name));
    }
    FileSystem fs = offsets.getFileSystem(conf);

    assertThat(rawListing(fs, offsets)).as("the store's own listing").isEmpty();
    assertThat(names(manager.list(offsets))).containsExactly("0", "1", "2");
    assertThat(names(manager.list(sources))).containsExactly("0", "1.compact", "2");
    assertThat(names(manager.list(offsets, p -> !p.getName().equals("1"))))
        .as("the filter applies to what is found by name")
        .containsExactly("0", "2");
  }

  private static void write(RenameFreeCheckpointFileManager manager, Path path) throws Exception {
    try (var out = manager.createAtomic(path, false)) {
      out.write("v1\n{}".getBytes(StandardCharsets.UTF_8));
    }
  }

  /** The store's own listing of {@code dir}: a directory whose objects all lag is not found. */
  private static List<String> rawListing(FileSystem fs, Path dir) throws Exception {
    try {
      return names(fs.listStatus(dir));
    } catch (java.io.FileNotFoundException e) {
      return List.of();
    }
  }

  private static List<String> names(FileStatus[] statuses) {
    List<String> names = new ArrayList<>();
    Arrays.stream(statuses).forEach(s -> names.add(s.getPath().getName()));
    return names;
  }

  private static StreamingQuery start(java.nio.file.Path input, String checkpoint)
      throws Exception {
    return spark
        .readStream()
        .schema("k STRING")
        .json(input.toString())
        .groupBy("k")
        .count()
        .writeStream()
        .format("memory")
        .queryName("lag_counts")
        .outputMode(OutputMode.Complete())
        .option("checkpointLocation", checkpoint)
        .start();
  }

  private static void writeInput(java.nio.file.Path dir, int n, List<String> keys)
      throws Exception {
    StringBuilder lines = new StringBuilder();
    keys.forEach(k -> lines.append("{\"k\":\"").append(k).append("\"}\n"));
    java.nio.file.Path tmp = dir.resolve(".part-" + n + ".tmp");
    Files.writeString(tmp, lines);
    Files.move(tmp, dir.resolve("part-" + n + ".json"));
  }
}
