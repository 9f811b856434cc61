package io.streamstate.spark.reliability;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;
import org.apache.spark.sql.SparkSession;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Damage to one checkpoint file between two runs of the reliability query: a flipped bit, a
 * truncation or a deletion, of a file chosen with a seed among one kind (our changelogs, snapshot
 * manifests and SSTs; Spark's offset and commit logs). The first run processes two batches and
 * stops; the file is damaged; the second run processes the rest. Each case says which of the two
 * acceptable outcomes it must end in:
 *
 * <ul>
 *   <li>{@link Outcome#EXACT}: the output equals the reference (a damaged snapshot or SST is
 *       skipped for an older snapshot plus changelogs; a lost commit log entry makes Spark run the
 *       batch again; a changelog that a valid snapshot at or above its version covers is not
 *       needed);
 *   <li>{@link Outcome#ERROR_NAMING_FILE}: the query stops with an error naming the damaged file (a
 *       changelog nothing else can rebuild, or a torn entry of Spark's offset or commit log, which
 *       our checkpoint file manager refuses to hand to Spark's parser);
 *   <li>{@link Outcome#ERROR_NAMING_DIRECTORY_AND_VERSION}: a needed changelog is gone; its name
 *       holds a random commit id that nothing else records, so the error names the changelog
 *       directory and the version it has no valid changelog of;
 *   <li>{@link Outcome#ERROR_WITHOUT_FILE_NAME}: not expected any more; it was Spark's JSON parser
 *       error for a torn offset or commit log entry, which does not name the file.
 * </ul>
 *
 * Never a silent wrong answer. The expected outcome of a changelog case follows from the files
 * present after the first run (is there a snapshot of that store at or above the damaged version?),
 * and the test prints which it expected.
 */
class CorruptionIT {
  private static final int BATCHES = 3;

  static final Path work = Sessions.newWorkDir(CorruptionIT.class);
  private static final Path allInput = work.resolve("input-all");
  private static final Path input = work.resolve("input");
  private static final Path base = work.resolve("base");
  private static SparkSession spark;
  private static List<String> reference;

  /** What is damaged, how, and (for our files) where the exact answer comes from. */
  enum Case {
    CHANGELOG_LATEST_BIT_FLIP(Kind.CHANGELOG, Damage.BIT_FLIP, Pick.LATEST),
    CHANGELOG_LATEST_TRUNCATED(Kind.CHANGELOG, Damage.TRUNCATE, Pick.LATEST),
    CHANGELOG_LATEST_MISSING(Kind.CHANGELOG, Damage.DELETE, Pick.LATEST),
    CHANGELOG_FIRST_BIT_FLIP(Kind.CHANGELOG, Damage.BIT_FLIP, Pick.OLDEST),
    CHANGELOG_FIRST_MISSING(Kind.CHANGELOG, Damage.DELETE, Pick.OLDEST),
    SNAPSHOT_BIT_FLIP(Kind.SNAPSHOT, Damage.BIT_FLIP, Pick.LATEST),
    SNAPSHOT_TRUNCATED(Kind.SNAPSHOT, Damage.TRUNCATE, Pick.LATEST),
    SNAPSHOT_MISSING(Kind.SNAPSHOT, Damage.DELETE, Pick.LATEST),
    SST_BIT_FLIP(Kind.SST, Damage.BIT_FLIP, Pick.RANDOM),
    SST_TRUNCATED(Kind.SST, Damage.TRUNCATE, Pick.RANDOM),
    SST_MISSING(Kind.SST, Damage.DELETE, Pick.RANDOM),
    SPARK_OFFSETS_TRUNCATED(Kind.OFFSETS, Damage.TRUNCATE, Pick.LATEST),
    SPARK_COMMITS_TRUNCATED(Kind.COMMITS, Damage.TRUNCATE, Pick.LATEST),
    SPARK_COMMITS_MISSING(Kind.COMMITS, Damage.DELETE, Pick.LATEST);

    final Kind kind;
    final Damage damage;
    final Pick pick;

    Case(Kind kind, Damage damage, Pick pick) {
      this.kind = kind;
      this.damage = damage;
      this.pick = pick;
    }
  }

  enum Outcome {
    EXACT,
    ERROR_NAMING_FILE,
    ERROR_NAMING_DIRECTORY_AND_VERSION,
    ERROR_WITHOUT_FILE_NAME
  }

  enum Kind {
    CHANGELOG,
    SNAPSHOT,
    SST,
    OFFSETS,
    COMMITS
  }

  enum Damage {
    BIT_FLIP,
    TRUNCATE,
    DELETE
  }

  enum Pick {
    LATEST,
    OLDEST,
    RANDOM
  }

  @BeforeAll
  static void runReferenceAndFirstPart() throws Exception {
    // One changelog per commit (group commit off): the cases damage one store's changelog at a
    // time. A damaged segment is covered at the engine level (GroupCommitTest) and by
    // BadConfigurationIT's unknown format version.
    Map<String, String> conf = ReliabilityQuery.sessionConf(work);
    conf.put(io.streamstate.spark.StreamStateConf.GROUP_COMMIT_ENABLED, "false");
    // Its SST cases damage SST files: without inlining every snapshot has them.
    conf.put(io.streamstate.spark.StreamStateConf.SNAPSHOT_INLINE_SST_MAX_BYTES, "0");
    spark = ReliabilityQuery.start("CorruptionIT", "local[2]", conf);
    ReliabilityQuery.writeInput(allInput, 31, BATCHES);
    Path ref = work.resolve("reference");
    ReliabilityQuery.runToEnd(
        spark,
        ReliabilityQuery.HDFS,
        allInput,
        ref.resolve("checkpoint").toUri().toString(),
        ref.resolve("out"),
        ReliabilityQuery.NO_FAULTS,
        0);
    reference = ReliabilityQuery.readOutput(ref.resolve("out"));

    // First part: batches 0 and 1 on our provider, until some stores have snapshots.
    copyInputFile("left", 0);
    copyInputFile("right", 0);
    copyInputFile("left", 1);
    copyInputFile("right", 1);
    Optional<Exception> failure =
        ReliabilityQuery.runOnce(
            spark,
            ReliabilityQuery.OURS,
            input,
            base.resolve("checkpoint").toUri().toString(),
            base.resolve("out"));
    assertThat(failure).isEmpty();
    await()
        .atMost(Duration.ofMinutes(1))
        .until(() -> !files(base.resolve("checkpoint"), Kind.SST).isEmpty());
    awaitQuiet(base.resolve("checkpoint"));
    copyInputFile("left", 2);
    copyInputFile("right", 2);
  }

  @AfterAll
  static void stopSpark() {
    spark.stop();
  }

  /**
   * Waits until nothing under {@code dir} changes any more: the stopped query's stores are unloaded
   * by Spark's maintenance (which may snapshot them first), so that a copy is complete and what the
   * test inspects is what a restart finds. ({@code StateStore.stop()} would do it at once, but it
   * can block for minutes: it holds the providers' lock while waiting for maintenance threads that
   * wait for that lock.)
   */
  static void awaitQuiet(Path dir) {
    String[] last = {""};
    AtomicInteger stableRounds = new AtomicInteger();
    await()
        .atMost(Duration.ofMinutes(2))
        .pollInterval(Duration.ofMillis(500))
        .until(
            () -> {
              String now = listing(dir);
              if (now.equals(last[0])) {
                return stableRounds.incrementAndGet() >= 4;
              }
              last[0] = now;
              stableRounds.set(0);
              return false;
            });
  }

  private static String listing(Path dir) throws IOException {
    try (Stream<Path> all = Files.walk(dir)) {
      StringBuilder text = new StringBuilder();
      for (Path p : all.sorted().toList()) {
        text.append(p).append(' ').append(Files.isRegularFile(p) ? Files.size(p) : -1).append('\n');
      }
      return text.toString();
    }
  }

  private static void copyInputFile(String side, int batch) throws IOException {
    Path from = allInput.resolve(side).resolve(String.format("part-%05d.json", batch));
    Path to = input.resolve(side).resolve(from.getFileName());
    Files.createDirectories(to.getParent());
    Files.copy(from, to, StandardCopyOption.COPY_ATTRIBUTES);
  }

  @ParameterizedTest
  @EnumSource(Case.class)
  void damagedFileEndsInExactRecoveryOrAnErrorNamingIt(Case c) throws Exception {
    Path dir = work.resolve(c.name().toLowerCase());
    Path checkpoint = dir.resolve("checkpoint");
    copyTree(base.resolve("checkpoint"), checkpoint);
    copyTree(base.resolve("out"), dir.resolve("out"));
    Random random = new Random(c.ordinal() * 7919L + 1);

    Path victim = pick(checkpoint, c, random);
    String relative = checkpoint.relativize(victim).toString();
    Outcome expected = expectedOutcome(c, victim);
    damage(victim, c.damage, random);
    System.out.printf(
        "corruption case %s: %s %s; expected: %s%s%n",
        c,
        c.damage.name().toLowerCase(),
        relative,
        expected.name().toLowerCase(),
        c.kind == Kind.CHANGELOG && twinOf(victim).isPresent() ? " (a hedged copy remains)" : "");

    Optional<Exception> failure =
        ReliabilityQuery.runOnce(
            spark, ReliabilityQuery.OURS, input, checkpoint.toUri().toString(), dir.resolve("out"));

    if (expected != Outcome.EXACT) {
      assertThat(failure).as("%s: the query must stop", c).isPresent();
      String text = ReliabilityQuery.fullText(failure.get());
      switch (expected) {
        case ERROR_NAMING_FILE ->
            assertThat(text).as("%s: the error names %s", c, relative).contains(relative);
        case ERROR_NAMING_DIRECTORY_AND_VERSION -> {
          String directory = checkpoint.relativize(victim.getParent()).toString();
          assertThat(text)
              .as("%s: the error names %s and the version", c, directory)
              .contains(directory + "/")
              .contains("no valid changelog of version " + versionOf(victim));
        }
        default -> {
          // Spark's parser error, without the file's name (see the class comment).
          assertThat(text).contains("Unexpected end-of-input");
          // Nothing ran: the output is still the first run's.
          assertThat(ReliabilityQuery.readOutput(dir.resolve("out")))
              .containsExactlyElementsOf(ReliabilityQuery.readOutput(base.resolve("out")));
        }
      }
    } else {
      assertThat(failure.map(ReliabilityQuery::fullText))
          .as("%s: recovers without an error", c)
          .isEmpty();
      assertThat(ReliabilityQuery.readOutput(dir.resolve("out")))
          .as("%s: output equals the reference", c)
          .containsExactlyElementsOf(reference);
    }
  }

  /**
   * The outcome the case must end in. A truncated newest offset entry (its batch committed) stops
   * the query, naming the file; a truncated newest commit entry is set aside by our checkpoint file
   * manager and its batch runs again (docs/protocol.md, "A Spark log entry torn by a crash"), and a
   * lost one is recovered exactly too; so are damaged snapshots and SSTs (older snapshots and every
   * changelog are retained). For a changelog of version {@code v} of a store whose restart loads
   * version {@code L} (its newest changelog; docs/protocol.md, l2-l5):
   *
   * <ul>
   *   <li>a hedged copy of the same commit remains: exact (the copy is read instead);
   *   <li>{@code v == L}: exact if a snapshot of {@code L} exists (taken when no changelog of
   *       {@code L} verifies); else an error naming the damaged file, or, if it was deleted, the
   *       directory and the version (its name holds a commit id nothing else records);
   *   <li>{@code v < L}: exact if a snapshot at a version in {@code [v, L]} exists (the walk back
   *       from {@code L}'s commit stops at the first snapshot of a commit on it, {@code L}'s own
   *       included); else an error naming the file (the walk knows its name).
   * </ul>
   */
  private static Outcome expectedOutcome(Case c, Path victim) {
    switch (c.kind) {
      case OFFSETS:
        // The newest offset entry is of a committed batch: torn, it is damage, not a crash's.
        return c.damage == Damage.DELETE ? Outcome.EXACT : Outcome.ERROR_NAMING_FILE;
      case COMMITS:
        // A torn newest commit entry is set aside at the restart and its batch runs again.
        return Outcome.EXACT;
      case SNAPSHOT:
      case SST:
        return Outcome.EXACT;
      case CHANGELOG:
      default:
        if (twinOf(victim).isPresent()) {
          return Outcome.EXACT;
        }
        long version = versionOf(victim);
        Path store = victim.getParent().getParent();
        long load =
            files(store, Kind.CHANGELOG).stream()
                .mapToLong(CorruptionIT::versionOf)
                .max()
                .orElseThrow();
        List<Long> snapshots =
            files(store, Kind.SNAPSHOT).stream().map(CorruptionIT::versionOf).toList();
        if (version == load) {
          if (snapshots.contains(load)) {
            return Outcome.EXACT;
          }
          return c.damage == Damage.DELETE
              ? Outcome.ERROR_NAMING_DIRECTORY_AND_VERSION
              : Outcome.ERROR_NAMING_FILE;
        }
        boolean covered = snapshots.stream().anyMatch(sv -> sv >= version && sv <= load);
        return covered ? Outcome.EXACT : Outcome.ERROR_NAMING_FILE;
    }
  }

  /**
   * The other copy of the same commit, if a hedged write left two: {@code <version>-<id>.changelog}
   * and {@code <version>-<id>-h.changelog} hold the same bytes, and a load accepts either.
   */
  static Optional<Path> twinOf(Path changelog) {
    String name = changelog.getFileName().toString();
    String commit = name.replace("-h.changelog", "").replace(".changelog", "");
    return files(changelog.getParent().getParent(), Kind.CHANGELOG).stream()
        .filter(p -> !p.equals(changelog))
        .filter(
            p -> {
              String other = p.getFileName().toString();
              return other.equals(commit + "-h.changelog") || other.equals(commit + ".changelog");
            })
        .findFirst();
  }

  private static Path pick(Path checkpoint, Case c, Random random) {
    List<Path> candidates = files(checkpoint, c.kind);
    assertThat(candidates).as("%s files in the checkpoint", c.kind).isNotEmpty();
    if (c.kind == Kind.OFFSETS || c.kind == Kind.COMMITS) {
      return candidates.stream().max(Comparator.comparingLong(CorruptionIT::versionOf)).get();
    }
    // One store, chosen with the seed among those that have files of this kind.
    List<Path> stores = candidates.stream().map(p -> p.getParent().getParent()).distinct().toList();
    Path store = stores.get(random.nextInt(stores.size()));
    List<Path> ofStore =
        candidates.stream()
            .filter(p -> p.getParent().getParent().equals(store))
            .sorted(Comparator.comparing(Path::toString))
            .toList();
    return switch (c.pick) {
      case LATEST -> ofStore.get(ofStore.size() - 1);
      case OLDEST -> ofStore.get(0);
      case RANDOM -> ofStore.get(random.nextInt(ofStore.size()));
    };
  }

  /** Files of one kind under {@code root}, sorted by path. */
  static List<Path> files(Path root, Kind kind) {
    try (Stream<Path> all = Files.walk(root)) {
      return all.filter(Files::isRegularFile)
          .filter(
              p -> {
                String parent = p.getParent().getFileName().toString();
                String name = p.getFileName().toString();
                if (name.startsWith(".") || name.endsWith(".crc")) {
                  return false;
                }
                return switch (kind) {
                  case CHANGELOG -> parent.equals("changelog");
                  case SNAPSHOT -> parent.equals("snapshot");
                  case SST -> parent.equals("sst");
                  case OFFSETS -> parent.equals("offsets") && name.matches("\\d+");
                  case COMMITS -> parent.equals("commits") && name.matches("\\d+");
                };
              })
          .sorted(Comparator.comparing(Path::toString))
          .toList();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** The number at the start of a file name ({@code 00000000000000000003.changelog}, {@code 3}). */
  static long versionOf(Path file) {
    String name = file.getFileName().toString();
    int end = 0;
    while (end < name.length() && Character.isDigit(name.charAt(end))) {
      end++;
    }
    return Long.parseLong(name.substring(0, end));
  }

  static void damage(Path file, Damage damage, Random random) throws IOException {
    switch (damage) {
      case BIT_FLIP -> {
        byte[] bytes = Files.readAllBytes(file);
        int at = random.nextInt(bytes.length);
        bytes[at] ^= (byte) (1 << random.nextInt(8));
        Files.write(file, bytes);
      }
      case TRUNCATE -> {
        byte[] bytes = Files.readAllBytes(file);
        Files.write(file, java.util.Arrays.copyOf(bytes, random.nextInt(bytes.length)));
      }
      case DELETE -> Files.delete(file);
    }
  }

  static void copyTree(Path from, Path to) throws IOException {
    if (!Files.exists(from)) {
      return;
    }
    try (Stream<Path> all = Files.walk(from)) {
      for (Path p : all.toList()) {
        Path target = to.resolve(from.relativize(p).toString());
        if (Files.isDirectory(p)) {
          Files.createDirectories(target);
        } else {
          Files.copy(p, target, StandardCopyOption.COPY_ATTRIBUTES);
        }
      }
    }
  }
}
