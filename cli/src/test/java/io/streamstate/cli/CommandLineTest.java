package io.streamstate.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Usage and bad input: one clear line and a non-zero exit, never a stack trace. */
class CommandLineTest {
  @TempDir Path tmp;

  @Test
  void withoutACommandItPrintsUsageAndExitsTwo() {
    Cli.Run run = Cli.run();

    assertThat(run.exit()).isEqualTo(ExitCodes.USAGE);
    assertThat(run.err()).contains("Usage: streamstate").contains("inspect").contains("verify");
  }

  @Test
  void helpAndVersionExitZero() {
    assertThat(Cli.run("--help").exit()).isZero();
    assertThat(Cli.run("inspect", "--help").out()).contains("--json").contains("CHECKPOINT");
    assertThat(Cli.run("--version").out()).startsWith("streamstate ");
  }

  @Test
  void anUnknownOptionOrAMissingCheckpointIsAUsageError() {
    Cli.Run unknown = Cli.run("verify", "--shallow", tmp.toString());
    Cli.Run missing = Cli.run("inspect");
    Cli.Run noOperator = Cli.run("dump", tmp.toString(), "--partition", "0");

    assertThat(unknown.exit()).isEqualTo(ExitCodes.USAGE);
    assertThat(unknown.err()).contains("Unknown option: '--shallow'");
    assertThat(noOperator.exit()).isEqualTo(ExitCodes.USAGE);
    assertThat(noOperator.err()).contains("Missing required option: '--operator=N'");
    assertThat(missing.exit()).isEqualTo(ExitCodes.USAGE);
    assertThat(missing.err()).contains("Missing required parameter: 'CHECKPOINT'");
  }

  @Test
  void aPathThatDoesNotExistIsNamed() {
    Path nowhere = tmp.resolve("nowhere");

    Cli.Run run = Cli.run("inspect", nowhere.toString());

    assertThat(run.exit()).isEqualTo(ExitCodes.USAGE);
    assertThat(run.err().strip())
        .isEqualTo("streamstate inspect: " + nowhere.toUri() + " does not exist")
        .doesNotContain("\n");
  }

  @Test
  void repairTakesDurationsAndNamesBadOnesAndMissingCheckpoints() {
    assertThat(RepairCommand.parseDuration("500ms")).isEqualTo(500);
    assertThat(RepairCommand.parseDuration("30s")).isEqualTo(30_000);
    assertThat(RepairCommand.parseDuration("10m")).isEqualTo(600_000);
    assertThat(RepairCommand.parseDuration("2h")).isEqualTo(7_200_000);
    assertThat(RepairCommand.parseDuration("0")).isZero();
    Path nowhere = tmp.resolve("nowhere");

    Cli.Run bad = Cli.run("repair", tmp.toString(), "--min-idle", "10 minutes");
    Cli.Run missing = Cli.run("repair", nowhere.toString(), "--apply");

    assertThat(bad.exit()).isEqualTo(ExitCodes.USAGE);
    assertThat(bad.err().strip())
        .isEqualTo(
            "streamstate repair: --min-idle '10 minutes' is not a duration (for example 500ms,"
                + " 30s, 10m, 2h)");
    assertThat(missing.exit()).isEqualTo(ExitCodes.USAGE);
    assertThat(missing.err().strip())
        .isEqualTo("streamstate repair: " + nowhere.toUri() + " does not exist");
  }

  @Test
  void aDirectoryThatIsNotACheckpointIsNamed() throws IOException {
    Files.writeString(tmp.resolve("part-0000.parquet"), "not a checkpoint");

    Cli.Run run = Cli.run("verify", tmp.toString());

    assertThat(run.exit()).isEqualTo(ExitCodes.USAGE);
    assertThat(run.err())
        .contains("is not a Spark streaming checkpoint: it has no metadata file and no offsets/");
  }

  @Test
  void aSchemeNoFileSystemServesIsAUsageError() {
    Cli.Run run = Cli.run("inspect", "nosuchfs://cluster/checkpoints/q1");

    assertThat(run.exit()).isEqualTo(ExitCodes.USAGE);
    assertThat(run.err()).contains("No Hadoop file system for nosuchfs://cluster/checkpoints/q1");
  }

  @Test
  void aCorruptMetadataFileIsReportedNotThrown() throws IOException {
    Files.writeString(tmp.resolve("metadata"), "{\"id\": ");

    Cli.Run inspect = Cli.run("inspect", tmp.toString());
    Cli.Run verify = Cli.run("verify", tmp.toString());

    assertThat(inspect.exit()).isZero();
    assertThat(inspect.out()).contains("problem: query id:");
    assertThat(verify.exit()).isEqualTo(ExitCodes.DAMAGED);
    assertThat(verify.out()).contains("does not hold Spark's query id");
  }

  @Test
  void logEntriesOfAnUnknownSparkVersionAreNamedNotMisread() throws IOException {
    Files.writeString(tmp.resolve("metadata"), "{\"id\":\"3f1c0c1e-0000-4000-8000-000000000000\"}");
    Files.createDirectories(tmp.resolve("offsets"));
    Files.createDirectories(tmp.resolve("commits"));
    Files.writeString(tmp.resolve("offsets/0"), "v9\n{\"batchWatermarkMs\":0,\"conf\":{}}\n");
    Files.writeString(tmp.resolve("commits/0"), "v9\n{\"nextBatchWatermarkMs\":0}");

    Cli.Run verify = Cli.run("verify", tmp.toString());

    assertThat(verify.exit()).as(verify.toString()).isEqualTo(ExitCodes.DAMAGED);
    assertThat(verify.out()).contains("offsets/0").contains("'v9'").contains("a newer Spark");
  }

  @Test
  void migrateWithoutADestinationOrIntoItsSourceIsAUsageError() throws IOException {
    Files.writeString(tmp.resolve("metadata"), "{\"id\":\"q\"}");

    Cli.Run missing = Cli.run("migrate", tmp.toString());
    Cli.Run inside = Cli.run("migrate", tmp.toString(), tmp.resolve("copy").toString());

    assertThat(missing.exit()).isEqualTo(ExitCodes.USAGE);
    assertThat(missing.err()).contains("Missing required parameter: 'DST'");
    assertThat(inside.exit()).isEqualTo(ExitCodes.USAGE);
    assertThat(inside.err().strip())
        .startsWith("streamstate migrate: the destination ")
        .contains("inside it")
        .doesNotContain("\n");
    assertThat(tmp.resolve("copy")).doesNotExist();
  }

  @Test
  void aCheckpointHoldingAMigrationMarkerIsNotCalledClean() throws IOException {
    Files.writeString(tmp.resolve("metadata"), "{\"id\":\"q\"}");
    Files.writeString(
        tmp.resolve(io.streamstate.cli.migrate.MigrationMarker.NAME),
        "streamstate migrate\nsource=hdfs://nn/checkpoints/q\n");

    Cli.Run inspect = Cli.run("inspect", tmp.toString());
    Cli.Run verify = Cli.run("verify", tmp.toString());

    assertThat(inspect.out())
        .contains("is the destination of a migration that has not finished")
        .contains("hdfs://nn/checkpoints/q");
    assertThat(verify.exit()).isEqualTo(ExitCodes.DAMAGED);
    assertThat(verify.out()).contains("INCOMPLETE: ").contains("run streamstate migrate again");
  }
}
