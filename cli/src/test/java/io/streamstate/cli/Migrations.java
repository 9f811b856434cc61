package io.streamstate.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.LocatedFileStatus;
import org.apache.hadoop.fs.RemoteIterator;

/** {@code migrate} runs for the ITs: with the test hook's kill, and the listings they compare. */
final class Migrations {
  private Migrations() {}

  /** {@code migrate} whose run stops after {@code files} files copied, the next one left torn. */
  static Cli.Run migrateKilledAfter(int files, Map<String, String> conf, String from, String to) {
    List<String> args = new ArrayList<>(List.of("migrate", from, to));
    conf.forEach((k, v) -> args.add("--conf=" + k + "=" + v));
    return Cli.run(
        cl ->
            ((MigrateCommand) cl.getSubcommands().get("migrate").getCommand()).interruptAfterFiles =
                files,
        args.toArray(new String[0]));
  }

  /** Every file under {@code root} of {@code fs} with its length. */
  static Map<String, Long> listing(FileSystem fs, org.apache.hadoop.fs.Path root)
      throws IOException {
    Map<String, Long> files = new TreeMap<>();
    String prefix = root.toUri().getPath() + "/";
    RemoteIterator<LocatedFileStatus> it = fs.listFiles(root, true);
    while (it.hasNext()) {
      LocatedFileStatus f = it.next();
      files.put(f.getPath().toUri().getPath().substring(prefix.length()), f.getLen());
    }
    return files;
  }

  /** Every file under {@code root} on local disk with its bytes. */
  static Map<String, byte[]> files(Path root) throws IOException {
    Map<String, byte[]> files = new TreeMap<>();
    try (Stream<Path> walk = Files.walk(root)) {
      for (Path p : (Iterable<Path>) walk.filter(Files::isRegularFile)::iterator) {
        try (InputStream in = Files.newInputStream(p)) {
          files.put(root.relativize(p).toString(), in.readAllBytes());
        }
      }
    }
    return files;
  }

  static void assertSameFiles(Path copy, Map<String, byte[]> original) throws IOException {
    Map<String, byte[]> copied = files(copy);
    assertThat(copied).containsOnlyKeys(original.keySet());
    original.forEach((name, bytes) -> assertThat(copied.get(name)).as(name).isEqualTo(bytes));
  }
}
