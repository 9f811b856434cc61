package io.streamstate.spark.reliability;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.apache.spark.SparkConf;
import org.apache.spark.deploy.master.Master$;
import org.apache.spark.deploy.worker.Worker$;
import org.apache.spark.rpc.RpcEnv;
import scala.Option;

/**
 * A standalone cluster in this JVM whose Workers are hosts of their own: a Master on 127.0.0.1 and
 * one Worker (1 core) per loopback address given, each launching its executor JVM from {@code
 * SPARK_HOME} ({@link SparkHome}) with that address as host, to which the executor binds. Linux
 * routes all of 127.0.0.0/8 to the loopback interface. Spark's {@code local-cluster} master puts
 * every Worker on one host name, and the scheduler never runs two attempts of a task on one host,
 * so speculative attempts need this.
 */
final class LoopbackCluster implements AutoCloseable {
  private final RpcEnv master;
  private final List<RpcEnv> workers = new ArrayList<>();

  private LoopbackCluster(RpcEnv master) {
    this.master = master;
  }

  /**
   * Starts the Master and one Worker of {@code memoryMb} per host; work directories under {@code
   * dir}.
   */
  static LoopbackCluster start(Path dir, int memoryMb, String... workerHosts) throws Exception {
    SparkConf conf = new SparkConf(false);
    LoopbackCluster cluster =
        new LoopbackCluster(Master$.MODULE$.startRpcEnvAndEndpoint("127.0.0.1", 0, 0, conf)._1());
    try {
      for (int i = 0; i < workerHosts.length; i++) {
        Path workDir = Files.createDirectories(dir.resolve("worker-" + (i + 1)));
        cluster.workers.add(
            Worker$.MODULE$.startRpcEnvAndEndpoint(
                workerHosts[i],
                0,
                0,
                1,
                memoryMb,
                new String[] {cluster.masterUrl()},
                workDir.toString(),
                Option.apply(i + 1),
                conf,
                Option.empty()));
      }
    } catch (Exception | Error e) {
      cluster.close();
      throw e;
    }
    return cluster;
  }

  String masterUrl() {
    return "spark://" + master.address().hostPort();
  }

  /** Stops the Workers (which kill their executors), then the Master. */
  @Override
  public void close() {
    workers.forEach(RpcEnv::shutdown);
    workers.forEach(RpcEnv::awaitTermination);
    master.shutdown();
    master.awaitTermination();
  }
}
