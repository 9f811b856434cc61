package io.streamstate.core.engine.local;

import io.streamstate.core.ProcessResources;
import io.streamstate.core.format.Changelog;
import java.nio.file.Path;
import java.util.List;

/** What tests of the local instance open and apply. */
final class LocalDbFixtures {
  private LocalDbFixtures() {}

  /** A store's instance in {@code tmp}/db, its space unmanaged. */
  static LocalDb open(Path tmp, ProcessResources resources, RocksDbMemoryBudget budget) {
    return LocalDb.open(
        "s",
        tmp.resolve("db"),
        budget,
        OpenDatabases.of(resources),
        LocalSpace.unmanaged("s", tmp));
  }

  /**
   * Version {@code version}'s changes to the default column family, its commit id the version and
   * its parent's the version before.
   */
  static Changelog ofDefaultFamily(long version, List<Changelog.Change> changes) {
    return new Changelog(
        version,
        version,
        version - 1,
        List.of(),
        List.of(new Changelog.FamilyChanges(LocalDb.DEFAULT_FAMILY, changes)));
  }
}
