package io.streamstate.cli.repair;

import io.streamstate.cli.checkpoint.Checkpoint;
import io.streamstate.core.error.ConflictException;
import io.streamstate.core.error.MissingFileException;
import io.streamstate.core.storage.ContentWriter;
import io.streamstate.core.storage.Storage;
import io.streamstate.core.storage.Storages;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * Carries out a {@link RepairPlan}. Nothing is lost: a file to delete is first copied into the
 * backup directory {@code <checkpoint>/_streamstate_backup/<UTC time>/<its path>}
 * (create-if-absent, a new location), the copy read back and compared, and only then the file
 * deleted; a file deleted without a backup is one whose bytes another file holds (checked again
 * right before).
 */
public final class RepairApplier {
  /** The directory under the checkpoint's root that holds the backups, one per run. */
  public static final String BACKUP_DIR = "_streamstate_backup";

  private static final DateTimeFormatter STAMP =
      DateTimeFormatter.ofPattern("yyyyMMdd'T'HHmmss'Z'").withZone(ZoneOffset.UTC);

  /** What was done with one fix: {@code backup} is the copy's location, or null. */
  public record Done(RepairPlan.Fix fix, String backup, List<String> alsoDeleted) {}

  private final Checkpoint cp;
  private final String backupDir;

  private RepairApplier(Checkpoint cp, Instant now) {
    this.cp = cp;
    this.backupDir = backupDir(now);
  }

  /** The backup directory (relative to the checkpoint's root) a run at {@code now} writes. */
  public static String backupDir(Instant now) {
    return BACKUP_DIR + "/" + STAMP.format(now);
  }

  /** Applies every fix of {@code plan}, in order; stops at the first that fails (it throws). */
  public static List<Done> apply(Checkpoint cp, RepairPlan plan, Instant now) {
    RepairApplier a = new RepairApplier(cp, now);
    List<Done> done = new ArrayList<>();
    for (RepairPlan.Fix f : plan.fixes()) {
      done.add(a.apply(f));
    }
    return done;
  }

  private Done apply(RepairPlan.Fix fix) {
    Storage root = cp.root();
    byte[] bytes = Storages.readAll(root, fix.path());
    String backup = null;
    if (fix.action() == RepairPlan.Action.BACKUP_THEN_DELETE) {
      String copy = backupDir + "/" + fix.path();
      root.create(copy, ContentWriter.ofBytes(bytes));
      byte[] back = Storages.readAll(root, copy);
      if (!Arrays.equals(bytes, back)) {
        throw new ConflictException(
            "The backup "
                + cp.location(copy)
                + " does not read back as "
                + cp.location(fix.path())
                + " ("
                + back.length
                + " of "
                + bytes.length
                + " bytes): nothing deleted; check the store");
      }
      backup = cp.location(copy);
    } else {
      checkSameAsEntry(fix, bytes);
    }
    root.delete(fix.path());
    List<String> also = new ArrayList<>();
    if (fix.finding().target().kind() == io.streamstate.cli.verify.Finding.Kind.LAST_LOG_ENTRY) {
      // Hadoop's checksum file system keeps .N.crc next to N; left behind, it would describe the
      // next writer's N wrongly.
      int slash = fix.path().lastIndexOf('/');
      String crc =
          fix.path().substring(0, slash + 1) + "." + fix.path().substring(slash + 1) + ".crc";
      if (root.delete(crc)) {
        also.add(cp.location(crc));
      }
    }
    return new Done(fix, backup, also);
  }

  /** A hedge copy deleted without a backup must still hold exactly what its entry holds. */
  private void checkSameAsEntry(RepairPlan.Fix fix, byte[] copy) {
    String path = fix.path();
    int slash = path.lastIndexOf('/');
    String name = path.substring(slash + 1);
    String entry =
        path.substring(0, slash + 1)
            + name.substring(
                1, name.length() - io.streamstate.core.format.HedgeCopyFile.NAME_SUFFIX.length());
    byte[] payload = io.streamstate.core.format.HedgeCopyFile.decode(copy, cp.location(path));
    byte[] entryBytes;
    try {
      entryBytes = Storages.readAll(cp.root(), entry);
    } catch (MissingFileException e) {
      entryBytes = null;
    }
    if (!Arrays.equals(payload, entryBytes)) {
      throw new ConflictException(
          cp.location(path)
              + " no longer holds what "
              + cp.location(entry)
              + " holds: nothing deleted; run repair again");
    }
  }
}
