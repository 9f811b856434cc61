package io.streamstate.cli.migrate;

import io.streamstate.core.error.MissingFileException;
import io.streamstate.core.storage.ContentWriter;
import io.streamstate.core.storage.Storage;
import io.streamstate.core.storage.Storages;
import java.nio.charset.StandardCharsets;
import java.util.Optional;

/**
 * The file {@value #NAME} at the root of a checkpoint that {@code streamstate migrate} is writing:
 * created (create-if-absent) before the first file is copied, deleted after the destination's
 * listing matched the source's. While it exists the destination is incomplete, and it proves that
 * what the destination holds was written by a migration of the source it names: only then may a
 * rerun replace a file there (one a kill left torn).
 */
public final class MigrationMarker {
  /** The marker's name at the destination's root. */
  public static final String NAME = "_streamstate_migration";

  private static final String HEADER = "streamstate migrate\n";
  private static final String SOURCE = "source=";

  private MigrationMarker() {}

  /** Creates the marker naming {@code source} (create-if-absent). */
  static void create(Storage destination, String source) {
    byte[] bytes = (HEADER + SOURCE + source + "\n").getBytes(StandardCharsets.UTF_8);
    destination.create(NAME, ContentWriter.ofBytes(bytes));
  }

  /**
   * What {@code inspect} and {@code verify} say of a checkpoint holding the marker: {@code where}
   * is the checkpoint, {@code source} what the marker names.
   */
  public static String incomplete(String where, String source) {
    return where
        + " is the destination of a migration that has not finished (its "
        + NAME
        + " names the source "
        + (source.isEmpty() ? "?" : source)
        + "): files may be missing; run streamstate migrate again to complete it";
  }

  /**
   * The source a marker at {@code root} names; empty without a marker. A marker without a source
   * line (not ours, or torn) names the empty string, which no source matches.
   */
  public static Optional<String> read(Storage root) {
    byte[] bytes;
    try {
      bytes = Storages.readAll(root, NAME);
    } catch (MissingFileException e) {
      return Optional.empty();
    }
    for (String line : new String(bytes, StandardCharsets.UTF_8).split("\n")) {
      if (line.startsWith(SOURCE)) {
        return Optional.of(line.substring(SOURCE.length()));
      }
    }
    return Optional.of("");
  }
}
