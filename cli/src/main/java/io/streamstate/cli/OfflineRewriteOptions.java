package io.streamstate.cli;

import picocli.CommandLine.Option;

/**
 * The options of the commands that rewrite a stopped query's state in a local Spark session ({@code
 * repartition}, {@code convert}), as a picocli mixin.
 */
final class OfflineRewriteOptions {
  @Option(
      names = "--skip-uncommitted",
      description =
          "If the last batch did not commit, skip it (its input is read again by the next run)"
              + " instead of refusing; as Spark's enforceExactlyOnceSink=false. Duplicates in a"
              + " sink that is not exactly-once are possible.")
  boolean skipUncommitted;

  @Option(
      names = "--master",
      defaultValue = "local[*]",
      description =
          "The Spark master of the session that rewrites the state (default: ${DEFAULT-VALUE}).")
  String master;
}
