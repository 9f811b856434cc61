package io.streamstate.core.engine.local;

import io.streamstate.core.format.Changelog;
import java.util.List;

/** Changelogs for tests of the local instance. */
final class TestChangelogs {
  private TestChangelogs() {}

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
