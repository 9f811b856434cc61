package io.streamstate.cli;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Comparator;
import java.util.stream.Stream;
import org.apache.hadoop.fs.FileSystem;

/** Damages files of a checkpoint, as storage faults and crashes would. */
final class Damage {
  private Damage() {}

  /** Flips one byte in the middle of a local file. */
  static void flipByte(Path file) throws IOException {
    byte[] bytes = Files.readAllBytes(file);
    bytes[bytes.length / 2] ^= 0x5a;
    Files.write(file, bytes);
  }

  /** Cuts a local file to half its length, as a crash while writing it would. */
  static void truncate(Path file) throws IOException {
    byte[] bytes = Files.readAllBytes(file);
    Files.write(file, Arrays.copyOf(bytes, bytes.length / 2));
  }

  /** Flips one byte in the middle of a file of a Hadoop file system (rewritten whole). */
  static void flipByte(FileSystem fs, org.apache.hadoop.fs.Path file) throws IOException {
    byte[] bytes;
    try (InputStream in = fs.open(file)) {
      bytes = in.readAllBytes();
    }
    bytes[bytes.length / 2] ^= 0x5a;
    try (OutputStream out = fs.create(file, true)) {
      out.write(bytes);
    }
  }

  /** Copies a local directory tree (a checkpoint to damage without touching the original). */
  static Path copy(Path from, Path to) throws IOException {
    try (Stream<Path> files = Files.walk(from)) {
      for (Path p : files.sorted(Comparator.naturalOrder()).toList()) {
        Path target = to.resolve(from.relativize(p).toString());
        if (Files.isDirectory(p)) {
          Files.createDirectories(target);
        } else {
          Files.copy(p, target);
        }
      }
    }
    return to;
  }

  /** The first regular file under {@code dir} whose name ends with {@code suffix}, sorted. */
  static Path find(Path dir, String suffix) throws IOException {
    try (Stream<Path> files = Files.walk(dir)) {
      return files
          .filter(Files::isRegularFile)
          .filter(p -> p.getFileName().toString().endsWith(suffix))
          .sorted()
          .findFirst()
          .orElseThrow(() -> new AssertionError("no *" + suffix + " under " + dir));
    }
  }
}
