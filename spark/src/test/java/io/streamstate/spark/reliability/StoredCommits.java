package io.streamstate.spark.reliability;

import io.streamstate.core.ProcessResources;
import io.streamstate.core.engine.StoreLayout;
import io.streamstate.core.engine.segment.SegmentCatalog;
import io.streamstate.core.format.Changelog;
import io.streamstate.core.format.FileKind;
import io.streamstate.core.format.FramedFile;
import io.streamstate.core.storage.FileInfo;
import io.streamstate.core.storage.LocalStorage;
import io.streamstate.core.storage.Storage;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * Every commit of one version of one store on local disk, read and verified by the engine's own
 * readers: changelog files ({@link FramedFile}, {@link Changelog}) and segment members, of segment
 * files and segment journal records alike ({@link SegmentCatalog}). Hedge copies are left out: they
 * hold the bytes of their primary.
 */
final class StoredCommits {
  private StoredCommits() {}

  /** One commit: where it is, its ids and its changes. */
  record Commit(String location, Changelog changelog) {
    long commitId() {
      return changelog.commitId();
    }

    long parentId() {
      return changelog.parentId();
    }

    String id() {
      return StoreLayout.formatId(changelog.commitId());
    }

    /** Whether both commits make the same changes (puts and deletes, family by family). */
    boolean sameChangesAs(Commit other) {
      return render(changelog).equals(render(other.changelog));
    }

    private static List<String> render(Changelog c) {
      List<String> out = new ArrayList<>();
      c.familyOps().forEach(op -> out.add(op.kind() + " " + op.family()));
      for (Changelog.FamilyChanges f : c.changes()) {
        for (Changelog.Change ch : f.changes()) {
          out.add(
              f.family()
                  + " "
                  + Arrays.toString(ch.key())
                  + (ch.isDelete() ? " deleted" : " = " + Arrays.toString(ch.value())));
        }
      }
      return out;
    }

    @Override
    public String toString() {
      return id() + " (parent " + StoreLayout.formatId(parentId()) + ") in " + location;
    }
  }

  /**
   * The commits of {@code version} of the store at {@code storePrefix} (as in the segment index:
   * {@code "0/1/"}, {@code "0/1/left-keyWithIndexToValue/"}) under the state directory {@code
   * stateDir} ({@code <checkpoint>/state}).
   */
  static List<Commit> of(Path stateDir, String storePrefix, long version) {
    Storage storage = new LocalStorage(stateDir);
    List<Commit> found = new ArrayList<>();
    for (FileInfo f : storage.list(storePrefix + StoreLayout.CHANGELOG_DIR)) {
      StoreLayout.ChangelogName n = StoreLayout.parseChangelog(f.name());
      if (n != null && !n.hedge() && n.version() == version) {
        FramedFile.Payload payload = FramedFile.read(storage, f.name(), FileKind.CHANGELOG);
        String location = FramedFile.location(storage, f.name());
        found.add(
            new Commit(
                location,
                Changelog.decodeStored(payload.bytes(), payload.formatVersion(), location)));
      }
    }
    // A catalog of its own (a new storage object): it reads what is on disk now, nothing cached.
    SegmentCatalog catalog = SegmentCatalog.of(ProcessResources.shared(), storage);
    for (SegmentCatalog.SegmentFile f : catalog.list().getOrDefault(version, List.of())) {
      if (f.name().hedge()) {
        continue;
      }
      String name = f.name().name();
      for (var entry : catalog.index(name).entries()) {
        if (entry.storePrefix().equals(storePrefix)) {
          found.add(
              new Commit(
                  stateDir.resolve(name).toString(),
                  catalog.member(name, storePrefix, entry.commitId())));
        }
      }
    }
    return found;
  }
}
