package io.streamstate.bench.wal;

import io.streamstate.bench.spark.SimulatedFileSystem;
import java.io.IOException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import org.gaul.s3proxy.S3Proxy;
import org.gaul.s3proxy.auth.AuthenticationType;
import org.gaul.s3proxy.nio2blob.TransientNio2BlobStore;

/**
 * Where a cell's logs go: a fresh directory per cell, and the Hadoop settings that reach it (given
 * to both logs: to ours as {@code spark.hadoop.*} keys, to Spark's as its Hadoop configuration).
 *
 * <ul>
 *   <li>{@code local}: the local disk, {@code file://}.
 *   <li>{@code slow-datanode}: the bench's {@link SimulatedFileSystem}, profile {@code
 *       slow-datanode-periods} (six simulated DataNodes, each slow for a while now and then; a
 *       stream's syncs wait while a DataNode of its pipeline is slow), a fresh instance per cell
 *       ({@code simfs://slow-datanode-periods.<cell>/...}) seeded alike, so both logs meet the same
 *       schedule from their start. Spark's log writes through it as any Hadoop file system (create,
 *       write, {@code hflush}, which simfs makes an {@code hsync}); ours appends to a journal with
 *       {@code hsync} and hedges late appends.
 *   <li>{@code s3}: S3A against an in-process S3Proxy (in-memory blobs, 127.0.0.1), conditional
 *       create on.
 * </ul>
 */
abstract class WalStorage implements AutoCloseable {
  private final String label;

  WalStorage(String label) {
    this.label = label;
  }

  String label() {
    return label;
  }

  /** A fresh directory for {@code cell}, as a URI string. */
  abstract String dir(String cell) throws IOException;

  /** The Hadoop settings that reach this storage. */
  abstract Map<String, String> hadoop();

  @Override
  public void close() throws Exception {}

  static WalStorage open(String label, Path work, double stallScale) throws Exception {
    return switch (label) {
      case "local" -> new Local(work.resolve("local"));
      case "slow-datanode" -> new SlowDataNode(work.resolve("simfs"), stallScale);
      case "s3" -> S3.start();
      default ->
          throw new IllegalArgumentException(
              "Unknown storage " + label + " (local, slow-datanode, s3)");
    };
  }

  private static final class Local extends WalStorage {
    private final Path root;

    Local(Path root) {
      super("local");
      this.root = root;
    }

    @Override
    String dir(String cell) throws IOException {
      return Files.createDirectories(root.resolve(cell)).toUri().toString();
    }

    @Override
    Map<String, String> hadoop() {
      return Map.of();
    }
  }

  private static final class SlowDataNode extends WalStorage {
    private final Path root;
    private final double stallScale;

    SlowDataNode(Path root, double stallScale) {
      super("slow-datanode");
      this.root = root;
      this.stallScale = stallScale;
    }

    @Override
    String dir(String cell) throws IOException {
      Path local = Files.createDirectories(root.resolve(cell));
      return "simfs://slow-datanode-periods." + cell + local.toAbsolutePath();
    }

    @Override
    Map<String, String> hadoop() {
      Map<String, String> s = new LinkedHashMap<>();
      s.put("fs.simfs.impl", SimulatedFileSystem.class.getName());
      s.put("fs.simfs.stallScale", Double.toString(stallScale));
      return s;
    }
  }

  private static final class S3 extends WalStorage {
    private static final String BUCKET = "wal";
    private final S3Proxy server;

    private S3(S3Proxy server) {
      super("s3");
      this.server = server;
    }

    static S3 start() throws Exception {
      TransientNio2BlobStore blobs = new TransientNio2BlobStore();
      blobs.createContainer(BUCKET);
      S3Proxy server =
          S3Proxy.builder()
              .blobStore(blobs)
              .endpoint(URI.create("http://127.0.0.1:0"))
              .awsAuthentication(AuthenticationType.AWS_V2_OR_V4, "bench-key", "bench-secret")
              .build();
      server.start();
      long deadline = System.currentTimeMillis() + 30_000;
      // Jetty is shaded inside S3Proxy: its state is compared as a string.
      while (!"STARTED".equals(server.getState())) {
        if (System.currentTimeMillis() > deadline) {
          server.stop();
          throw new IllegalStateException("S3Proxy did not start within 30 s");
        }
        Thread.sleep(10);
      }
      return new S3(server);
    }

    @Override
    String dir(String cell) {
      return "s3a://" + BUCKET + "/" + cell;
    }

    @Override
    Map<String, String> hadoop() {
      Map<String, String> s = new LinkedHashMap<>();
      s.put("fs.s3a.endpoint", "http://127.0.0.1:" + server.getPort());
      s.put("fs.s3a.endpoint.region", "us-east-1");
      s.put("fs.s3a.path.style.access", "true");
      s.put("fs.s3a.connection.ssl.enabled", "false");
      s.put(
          "fs.s3a.aws.credentials.provider",
          "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider");
      s.put("fs.s3a.access.key", "bench-key");
      s.put("fs.s3a.secret.key", "bench-secret");
      s.put("fs.s3a.create.conditional.enabled", "true");
      s.put("fs.s3a.fast.upload.buffer", "bytebuffer");
      return s;
    }

    @Override
    public void close() throws Exception {
      server.stop();
    }
  }
}
