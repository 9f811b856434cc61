package io.streamstate.bench.dstream;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import java.util.stream.Stream;

/**
 * Bytes written under a directory between two walks (java.nio): the size of every file that is new
 * since the previous walk, plus the growth of every file that grew (appended journals). Files
 * deleted in between subtract nothing; a file created and deleted between two walks is missed, and
 * so is a file rewritten to the same size (neither implementation does that with its data files).
 */
final class DirectoryWrites {
  private final Path root;
  private Map<Path, Long> sizes = new HashMap<>();

  DirectoryWrites(Path root) {
    this.root = root;
  }

  /** Bytes written since the previous call (the first call counts everything present). */
  long sinceLastWalk() {
    Map<Path, Long> now = walk();
    long written = 0;
    for (Map.Entry<Path, Long> e : now.entrySet()) {
      long before = sizes.getOrDefault(e.getKey(), 0L);
      if (e.getValue() > before) {
        written += e.getValue() - before;
      }
    }
    sizes = now;
    return written;
  }

  /** Bytes currently under the root. */
  long totalBytes() {
    return walk().values().stream().mapToLong(Long::longValue).sum();
  }

  private Map<Path, Long> walk() {
    Map<Path, Long> out = new HashMap<>();
    if (!Files.exists(root)) {
      return out;
    }
    try (Stream<Path> files = Files.walk(root)) {
      files.forEach(
          p -> {
            try {
              if (Files.isRegularFile(p)) {
                out.put(p, Files.size(p));
              }
            } catch (NoSuchFileException e) {
              // deleted while we walked (retention, Spark's checkpoint cleanup)
            } catch (IOException e) {
              throw new UncheckedIOException(e);
            }
          });
    } catch (IOException e) {
      throw new UncheckedIOException("Cannot walk " + root, e);
    } catch (UncheckedIOException e) {
      if (!(e.getCause() instanceof NoSuchFileException)) {
        throw e;
      }
      return walk(); // a directory vanished under the walk: walk again
    }
    return out;
  }
}
