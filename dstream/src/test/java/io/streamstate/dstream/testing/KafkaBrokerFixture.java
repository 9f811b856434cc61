package io.streamstate.dstream.testing;

import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.stream.Collectors;
import kafka.server.KafkaConfig;
import kafka.server.KafkaRaftServer;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.metadata.storage.Formatter;
import org.apache.kafka.server.common.MetadataVersion;

/**
 * A real Kafka 3.9 broker in this JVM, in KRaft mode (one node that is both broker and controller),
 * on 127.0.0.1 and free ports, with its log directory in a temporary directory deleted by {@link
 * #close()}. The log directory is formatted with Kafka's {@link Formatter} (what {@code
 * kafka-storage.sh format} runs), then {@link KafkaRaftServer} starts.
 *
 * <pre>{@code
 * try (KafkaBrokerFixture kafka = KafkaBrokerFixture.start()) {
 *   kafka.createTopic("events", 4);
 *   try (KafkaProducer<String, String> p = kafka.newProducer()) { ... }
 * }
 * }</pre>
 */
public final class KafkaBrokerFixture implements AutoCloseable {
  private final Path dir;
  private final KafkaRaftServer server;
  private final String bootstrapServers;

  private KafkaBrokerFixture(Path dir, KafkaRaftServer server, String bootstrapServers) {
    this.dir = dir;
    this.server = server;
    this.bootstrapServers = bootstrapServers;
  }

  /** Formats a log directory, starts the broker and waits until it answers an admin request. */
  public static KafkaBrokerFixture start() {
    Path dir = null;
    KafkaRaftServer server = null;
    try {
      dir = Files.createTempDirectory("kafka-kraft");
      String logDir = dir.resolve("log").toString();
      int brokerPort = freePort();
      int controllerPort = freePort();
      Map<String, Object> props = new HashMap<>();
      props.put("process.roles", "broker,controller");
      props.put("node.id", "1");
      props.put("controller.quorum.voters", "1@127.0.0.1:" + controllerPort);
      props.put(
          "listeners",
          "PLAINTEXT://127.0.0.1:" + brokerPort + ",CONTROLLER://127.0.0.1:" + controllerPort);
      props.put("advertised.listeners", "PLAINTEXT://127.0.0.1:" + brokerPort);
      props.put("controller.listener.names", "CONTROLLER");
      props.put("inter.broker.listener.name", "PLAINTEXT");
      props.put("listener.security.protocol.map", "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT");
      props.put("log.dirs", logDir);
      props.put("num.partitions", "1");
      props.put("offsets.topic.replication.factor", "1");
      props.put("offsets.topic.num.partitions", "1");
      props.put("transaction.state.log.replication.factor", "1");
      props.put("transaction.state.log.min.isr", "1");
      props.put("group.initial.rebalance.delay.ms", "0");
      props.put("auto.create.topics.enable", "false");
      props.put("log.flush.interval.messages", String.valueOf(Long.MAX_VALUE));
      new Formatter()
          .setPrintStream(new PrintStream(OutputStream.nullOutputStream()))
          .setNodeId(1)
          .setClusterId(Uuid.randomUuid().toString())
          .setDirectories(List.of(logDir))
          .setMetadataLogDirectory(logDir)
          .setControllerListenerName("CONTROLLER")
          .setReleaseVersion(MetadataVersion.LATEST_PRODUCTION)
          .run();
      server = new KafkaRaftServer(new KafkaConfig(props), Time.SYSTEM);
      server.startup();
      KafkaBrokerFixture fixture = new KafkaBrokerFixture(dir, server, "127.0.0.1:" + brokerPort);
      fixture.awaitReady();
      return fixture;
    } catch (Exception e) {
      if (server != null) {
        server.shutdown();
        server.awaitShutdown();
      }
      if (dir != null) {
        EmbeddedPostgresFixture.deleteQuietly(dir);
      }
      if (e instanceof IOException) {
        throw new UncheckedIOException((IOException) e);
      }
      throw e instanceof RuntimeException
          ? (RuntimeException) e
          : new IllegalStateException("Cannot start the Kafka broker", e);
    }
  }

  /** {@code host:port} of the broker's listener, for {@code bootstrap.servers}. */
  /**
   * The consumer settings of a direct stream over this broker's string records, as a driver in
   * another JVM builds them: no auto commit (offsets are the application's), earliest when none.
   */
  public static Map<String, Object> directStreamParams(String bootstrap, String group) {
    Map<String, Object> params = new HashMap<>();
    params.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    params.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class);
    params.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class);
    params.put(ConsumerConfig.GROUP_ID_CONFIG, group);
    params.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
    params.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
    return params;
  }

  public String bootstrapServers() {
    return bootstrapServers;
  }

  /** A new admin client; the caller closes it. */
  public Admin newAdmin() {
    Properties p = new Properties();
    p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers);
    return Admin.create(p);
  }

  /** Creates a topic with replication factor 1 and waits until it is created. */
  public void createTopic(String topic, int partitions) {
    try (Admin admin = newAdmin()) {
      admin.createTopics(List.of(new NewTopic(topic, partitions, (short) 1))).all().get();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("Interrupted while creating topic " + topic, e);
    } catch (ExecutionException e) {
      throw new IllegalStateException("Cannot create topic " + topic, e.getCause());
    }
  }

  /** The end (next) offset of each partition of topic. */
  public Map<TopicPartition, Long> endOffsets(String topic, int partitions) {
    try (Admin admin = newAdmin()) {
      Map<TopicPartition, OffsetSpec> request = new HashMap<>();
      for (int p = 0; p < partitions; p++) {
        request.put(new TopicPartition(topic, p), OffsetSpec.latest());
      }
      return admin.listOffsets(request).all().get().entrySet().stream()
          .collect(Collectors.toMap(Map.Entry::getKey, e -> e.getValue().offset()));
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("Interrupted while listing offsets of " + topic, e);
    } catch (ExecutionException e) {
      throw new IllegalStateException("Cannot list the offsets of " + topic, e.getCause());
    }
  }

  /** A producer of string keys and values with {@code acks=all} and idempotence; caller closes. */
  public KafkaProducer<String, String> newProducer() {
    Properties p = new Properties();
    p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers);
    p.put(ProducerConfig.ACKS_CONFIG, "all");
    p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
    p.put(ProducerConfig.LINGER_MS_CONFIG, "5");
    p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
    p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
    return new KafkaProducer<>(p);
  }

  /** Stops the broker and deletes its log directory. */
  @Override
  public void close() {
    try {
      server.shutdown();
      server.awaitShutdown();
    } finally {
      EmbeddedPostgresFixture.deleteQuietly(dir);
    }
  }

  private void awaitReady() throws InterruptedException {
    Exception last = null;
    for (int attempt = 0; attempt < 300; attempt++) {
      try (Admin admin = newAdmin()) {
        admin.describeCluster().nodes().get();
        return;
      } catch (ExecutionException e) {
        last = e;
      }
      Thread.sleep(100);
    }
    throw new IllegalStateException("The Kafka broker did not answer on " + bootstrapServers, last);
  }

  private static int freePort() throws IOException {
    try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      return socket.getLocalPort();
    }
  }
}
