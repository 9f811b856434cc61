package io.streamstate.spark.reliability;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * Which input files each data batch of a run of the reliability query took, per file source, read
 * from the run's checkpoint: the offset log's {@code logOffset} per source and batch, and each file
 * source's own log ({@code sources/<i>/<id>}: the files it took at each planning).
 *
 * <p>The query reads one file per source per batch ({@code maxFilesPerTrigger=1}), so a fault-free
 * run has one file per source in each batch. A fault between two sources' log entries (Spark writes
 * them while planning a batch, before the offset log) breaks that: the first source already logged
 * its next file, and after the restart it takes one more, so one batch holds two of its files. That
 * is Spark's file source, with any state store; the output then legitimately differs (what is late
 * depends on the grouping), and the run is compared to a reference run with the same grouping
 * ({@link #writeRegroupedInput}: each group's files as one input file).
 *
 * @param sources per source directory name ({@code left}, {@code right}), the file names of each
 *     data batch in order
 */
record BatchGrouping(Map<String, List<List<String>>> sources) {
  private static final Pattern LOG_OFFSET = Pattern.compile("\"logOffset\":(\\d+)");
  private static final Pattern FILE_PATH = Pattern.compile("\"path\":\"([^\"]+)\"");

  /** Reads the grouping of the run whose checkpoint's logs are {@code logs}. */
  static BatchGrouping read(SparkLogs logs) {
    Map<Long, long[]> offsets = new TreeMap<>();
    for (Map.Entry<Long, String> e : logs.entries("offsets").entrySet()) {
      offsets.put(
          e.getKey(),
          LOG_OFFSET
              .matcher(e.getValue())
              .results()
              .mapToLong(m -> Long.parseLong(m.group(1)))
              .toArray());
    }
    int sourceCount = offsets.isEmpty() ? 0 : offsets.values().iterator().next().length;
    Map<String, List<List<String>>> sources = new TreeMap<>();
    for (int s = 0; s < sourceCount; s++) {
      Map<Long, String> log = logs.entries("sources/" + s);
      String dir = null;
      List<List<String>> groups = new ArrayList<>();
      long previous = -1;
      boolean exhausted = false;
      for (Map.Entry<Long, long[]> batch : offsets.entrySet()) {
        long[] batchOffsets = batch.getValue();
        if (batchOffsets.length != sourceCount) {
          throw new IllegalStateException(
              logs.checkpoint()
                  + "/offsets/"
                  + batch.getKey()
                  + ": "
                  + batchOffsets.length
                  + " file source offsets, batch 0 has "
                  + sourceCount);
        }
        List<String> files = new ArrayList<>();
        for (long id = previous + 1; id <= batchOffsets[s]; id++) {
          String entry = log.get(id);
          if (entry == null) {
            throw new IllegalStateException(
                logs.checkpoint()
                    + "/sources/"
                    + s
                    + "/"
                    + id
                    + " is missing; offsets/"
                    + batch.getKey()
                    + " needs it");
          }
          Matcher m = FILE_PATH.matcher(entry);
          while (m.find()) {
            String path = m.group(1);
            String[] parts = path.split("/");
            String parent = parts[parts.length - 2];
            if (dir != null && !dir.equals(parent)) {
              throw new IllegalStateException("source " + s + " reads " + dir + " and " + parent);
            }
            dir = parent;
            files.add(parts[parts.length - 1]);
          }
        }
        previous = Math.max(previous, batchOffsets[s]);
        if (files.isEmpty()) {
          exhausted = true;
        } else if (exhausted) {
          // Every input file exists before the query starts: a source goes without a file only
          // once it has taken them all, which a reference run reproduces; an empty batch in the
          // middle it would not.
          throw new IllegalStateException(
              "source "
                  + s
                  + " took no file in a batch before batch "
                  + batch.getKey()
                  + " took some: a reference run cannot reproduce that grouping");
        } else {
          groups.add(files);
        }
      }
      if (dir != null) {
        sources.put(dir, groups);
      }
    }
    return new BatchGrouping(sources);
  }

  /** Whether every data batch took exactly one file of each source (as the reference run does). */
  boolean isOneFilePerBatch() {
    return sources.values().stream().flatMap(List::stream).allMatch(g -> g.size() == 1);
  }

  /**
   * Writes under {@code target} the input of {@code original} regrouped: for each source, each of
   * its groups as one file (the group's files' lines, in order), oldest first, so that a run with
   * one file per batch takes exactly this grouping. Every file of {@code original} must be in a
   * group: a run that skipped input must not get a reference that skips it too.
   */
  void writeRegroupedInput(Path original, Path target) {
    try {
      for (Map.Entry<String, List<List<String>>> source : sources.entrySet()) {
        Path from = original.resolve(source.getKey());
        Path to = target.resolve(source.getKey());
        Files.createDirectories(to);
        Set<String> all = new LinkedHashSet<>();
        try (Stream<Path> files = Files.list(from)) {
          files.map(f -> f.getFileName().toString()).sorted().forEach(all::add);
        }
        Set<String> taken = new LinkedHashSet<>();
        List<List<String>> groups = source.getValue();
        for (int g = 0; g < groups.size(); g++) {
          List<String> lines = new ArrayList<>();
          for (String name : groups.get(g)) {
            if (!taken.add(name)) {
              throw new IllegalStateException(source.getKey() + "/" + name + " taken twice");
            }
            lines.addAll(Files.readAllLines(from.resolve(name), StandardCharsets.UTF_8));
          }
          ReliabilityQuery.writeBatchFile(to, g, lines);
        }
        if (!taken.equals(all)) {
          throw new IllegalStateException(
              "the run took " + taken + " of " + source.getKey() + ", the input holds " + all);
        }
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  @Override
  public String toString() {
    return sources.toString();
  }
}
