package io.streamstate.hadoop;

import static org.awaitility.Awaitility.await;

import java.io.IOException;
import java.net.URI;
import java.time.Duration;
import java.util.function.UnaryOperator;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.gaul.s3proxy.S3Proxy;
import org.gaul.s3proxy.auth.AuthenticationType;
import org.gaul.s3proxy.blobstore.BlobStore;
import org.gaul.s3proxy.nio2blob.TransientNio2BlobStore;

/**
 * An in-process S3Proxy (in-memory blob store) on 127.0.0.1 with one bucket, and the S3A
 * configuration to reach it with conditional create ({@code If-None-Match: *}) on: one per test
 * class.
 */
public final class S3ProxyFixture implements AutoCloseable {
  public static final String BUCKET = "ckpt";
  private static final String ACCESS_KEY = "test-key";
  private static final String SECRET_KEY = "test-secret";

  private final S3Proxy server;
  private final Configuration conf;
  private final FileSystem fs;

  private S3ProxyFixture(S3Proxy server, Configuration conf, FileSystem fs) {
    this.server = server;
    this.conf = conf;
    this.fs = fs;
  }

  public static S3ProxyFixture start() throws Exception {
    return start(store -> store);
  }

  /**
   * A server whose in-memory store is seen through {@code wrap} (a fault-injecting store: {@link
   * FaultInjectingBlobStore}); the bucket is created before, on the store itself.
   */
  public static S3ProxyFixture start(UnaryOperator<BlobStore> wrap) throws Exception {
    TransientNio2BlobStore blobStore = new TransientNio2BlobStore();
    blobStore.createContainer(BUCKET);
    S3Proxy server =
        S3Proxy.builder()
            .blobStore(wrap.apply(blobStore))
            .endpoint(URI.create("http://127.0.0.1:0"))
            .awsAuthentication(AuthenticationType.AWS_V2_OR_V4, ACCESS_KEY, SECRET_KEY)
            .build();
    server.start();
    try {
      // Jetty is shaded inside S3Proxy: its state is compared as a string.
      await().atMost(Duration.ofSeconds(30)).until(() -> "STARTED".equals(server.getState()));
      Configuration conf = new Configuration();
      conf.set("fs.s3a.endpoint", "http://127.0.0.1:" + server.getPort());
      conf.set("fs.s3a.endpoint.region", "us-east-1");
      conf.set("fs.s3a.path.style.access", "true");
      conf.set("fs.s3a.connection.ssl.enabled", "false");
      conf.set(
          "fs.s3a.aws.credentials.provider",
          "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider");
      conf.set("fs.s3a.access.key", ACCESS_KEY);
      conf.set("fs.s3a.secret.key", SECRET_KEY);
      conf.set("fs.s3a.create.conditional.enabled", "true");
      conf.set("fs.s3a.fast.upload.buffer", "bytebuffer");
      // Every FileSystem.get is a client of its own, closed by whoever asked for it.
      conf.set("fs.s3a.impl.disable.cache", "true");
      return new S3ProxyFixture(server, conf, FileSystem.newInstance(bucketUri(), conf));
    } catch (Exception | Error e) {
      server.stop();
      throw e;
    }
  }

  /**
   * The {@code fs.s3a.*} settings that reach the server, except the disabled client cache: for a
   * process (Spark) that gets its clients from Hadoop's shared cache and never closes them.
   */
  public java.util.Map<String, String> sharedClientSettings() {
    java.util.Map<String, String> settings = new java.util.TreeMap<>();
    for (java.util.Map.Entry<String, String> e : conf.getPropsWithPrefix("fs.s3a.").entrySet()) {
      if (!e.getKey().equals("impl.disable.cache")) {
        settings.put("fs.s3a." + e.getKey(), e.getValue());
      }
    }
    return settings;
  }

  /** The S3A configuration reaching the server; callers copy it before changing it. */
  public Configuration conf() {
    return conf;
  }

  /** A client shared by the tests of a class; closed with the server. */
  public FileSystem fileSystem() {
    return fs;
  }

  /** A client of its own (own connection pool and threads), as a second executor would have. */
  public FileSystem newClient() throws IOException {
    return newClient(conf);
  }

  /** A client of its own with settings of its own. The caller closes it. */
  public FileSystem newClient(Configuration settings) throws IOException {
    return FileSystem.newInstance(bucketUri(), settings);
  }

  /** {@code key} in the bucket, as an {@code s3a://} path. */
  public static Path path(String key) {
    return new Path("s3a://" + BUCKET + "/" + key);
  }

  private static URI bucketUri() {
    return URI.create("s3a://" + BUCKET + "/");
  }

  @Override
  public void close() throws Exception {
    try {
      fs.close();
      // Clients in Hadoop's shared cache (Spark's, the command's: sharedClientSettings) point at
      // this server's port: dropped, so that a later server in this JVM is not looked for here.
      Configuration shared = new Configuration(conf);
      shared.setBoolean("fs.s3a.impl.disable.cache", false);
      FileSystem.get(bucketUri(), shared).close();
    } finally {
      server.stop();
    }
  }
}
