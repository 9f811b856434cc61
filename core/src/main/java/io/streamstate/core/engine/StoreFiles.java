package io.streamstate.core.engine;

import io.streamstate.core.error.CorruptFileException;
import io.streamstate.core.error.MissingFileException;
import io.streamstate.core.format.Changelog;
import io.streamstate.core.format.FileKind;
import io.streamstate.core.format.FramedFile;
import io.streamstate.core.format.SnapshotManifest;
import io.streamstate.core.storage.FileInfo;
import io.streamstate.core.storage.Storage;
import java.util.ArrayList;
import java.util.List;

/**
 * A store's durable files as loads, retention and the segment sweep see them: listings parsed by
 * name ({@link StoreLayout}), and reads that check a file holds what its name says. One copy of
 * each, so that every reader takes the same files for the same things.
 *
 * @apiNote Internal: public for the engine's packages, and for the streamstate CLI ({@code cli}
 *     module), which verifies each file with the same reads; not an API.
 */
public final class StoreFiles {
  /** A listed changelog (primary or hedge copy). */
  public record ListedChangelog(StoreLayout.ChangelogName name, long lastModifiedMillis) {}

  private StoreFiles() {}

  /** Lists the store's changelogs (one list call). */
  public static List<ListedChangelog> changelogs(Storage storage, StoreLayout layout) {
    List<ListedChangelog> found = new ArrayList<>();
    for (FileInfo f : storage.list(layout.changelogDir())) {
      StoreLayout.ChangelogName n = StoreLayout.parseChangelog(f.name());
      if (n != null) {
        found.add(new ListedChangelog(n, f.lastModifiedMillis()));
      }
    }
    return found;
  }

  /** Lists the store's snapshot manifests, primary and hedge names (one list call). */
  public static List<StoreLayout.SnapshotName> snapshots(Storage storage, StoreLayout layout) {
    List<StoreLayout.SnapshotName> found = new ArrayList<>();
    for (FileInfo f : storage.list(layout.snapshotDir())) {
      StoreLayout.SnapshotName n = StoreLayout.parseSnapshot(f.name());
      if (n != null) {
        found.add(n);
      }
    }
    return found;
  }

  /**
   * Reads and checks one changelog (I5): it verifies, and holds the version and commit id its name
   * says.
   *
   * @throws CorruptFileException it does not verify, or holds another version or commit
   * @throws MissingFileException it is gone
   */
  public static Changelog readChangelog(Storage storage, StoreLayout.ChangelogName name) {
    return readStoredChangelog(storage, name).decode();
  }

  /**
   * Reads and checks one changelog as {@link #readChangelog} does, decoding its header only: the
   * whole file verifies and the header holds what its name says; its changes stay encoded until
   * {@link Changelog.Stored#decode}, which fails naming the file if they do not decode.
   *
   * @throws CorruptFileException it does not verify, or holds another version or commit
   * @throws MissingFileException it is gone
   */
  public static Changelog.Stored readStoredChangelog(
      Storage storage, StoreLayout.ChangelogName name) {
    String location = FramedFile.location(storage, name.name());
    FramedFile.Payload payload = FramedFile.read(storage, name.name(), FileKind.CHANGELOG);
    Changelog.Stored stored =
        Changelog.readStored(payload.bytes(), payload.formatVersion(), location);
    checkHoldsWhatItsNameSays(
        location, name.version(), name.commitId(), stored.version(), stored.commitId());
    return stored;
  }

  /**
   * Reads and checks one snapshot manifest (I5): it verifies, and holds the version and commit id
   * its name says. The one test of whether a snapshot is usable, for loads and retention alike.
   *
   * @throws CorruptFileException it does not verify, or holds another version or commit
   * @throws MissingFileException it is gone
   */
  public static SnapshotManifest readManifest(Storage storage, StoreLayout.SnapshotName name) {
    String location = FramedFile.location(storage, name.name());
    SnapshotManifest manifest =
        SnapshotManifest.decode(
            FramedFile.readPayload(storage, name.name(), FileKind.SNAPSHOT_MANIFEST), location);
    checkHoldsWhatItsNameSays(
        location, name.version(), name.commitId(), manifest.version(), manifest.commitId());
    return manifest;
  }

  /** A file whose content names another version or commit than its name is corrupt. */
  private static void checkHoldsWhatItsNameSays(
      String location, long version, long commitId, long heldVersion, long heldCommitId) {
    if (heldVersion != version || heldCommitId != commitId) {
      throw new CorruptFileException(
          location
              + " is corrupt: it holds version "
              + heldVersion
              + " commit "
              + StoreLayout.formatId(heldCommitId)
              + ", not what its name says");
    }
  }
}
