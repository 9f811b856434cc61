package io.streamstate.spark;

import static org.assertj.core.api.Assertions.assertThat;

import org.apache.spark.SparkConf;
import org.junit.jupiter.api.Test;

/** The RocksDB cap fits the executor's container unless the user sized it. */
class ExecutorMemoryTest {
  private static final long MIB = 1L << 20;

  private static SparkConf conf(String master) {
    return new SparkConf(false).set("spark.master", master);
  }

  @Test
  void outsideAContainerTheCapIs256MiBUnlessSet() {
    assertThat(ExecutorMemory.capBytes(-1, null)).isEqualTo(256 * MIB);
    assertThat(ExecutorMemory.capBytes(-1, conf("local[2]"))).isEqualTo(256 * MIB);
    assertThat(ExecutorMemory.capBytes(-1, conf("spark://host:7077"))).isEqualTo(256 * MIB);
    assertThat(ExecutorMemory.capBytes(1024 * MIB, conf("local[2]"))).isEqualTo(1024 * MIB);
  }

  @Test
  void onYarnAndKubernetesTheDefaultFitsSparksDefaultOverhead() {
    // Spark's default overhead: max(384 MiB, 10% of spark.executor.memory, 1g by default).
    assertThat(ExecutorMemory.containerOverhead(conf("yarn"))).hasValue(384 * MIB);
    assertThat(ExecutorMemory.capBytes(-1, conf("yarn"))).isEqualTo(64 * MIB);
    assertThat(ExecutorMemory.capBytes(-1, conf("k8s://https://api:6443"))).isEqualTo(64 * MIB);
    // 8g executors: 819 MiB of overhead, of which 320 MiB for the JVM: 256 MiB fits.
    assertThat(ExecutorMemory.capBytes(-1, conf("yarn").set("spark.executor.memory", "8g")))
        .isEqualTo(256 * MIB);
    // 4g executors: 409.6 MiB of overhead leave about 90 MiB.
    assertThat(ExecutorMemory.capBytes(-1, conf("yarn").set("spark.executor.memory", "4g")))
        .isEqualTo((long) (0.1 * (4096 * MIB)) - 320 * MIB);
    // An explicit overhead (MiB without a suffix, as Spark reads it) and factor.
    assertThat(
            ExecutorMemory.containerOverhead(
                conf("yarn").set("spark.executor.memoryOverhead", "2048")))
        .hasValue(2048 * MIB);
    assertThat(
            ExecutorMemory.containerOverhead(
                conf("yarn")
                    .set("spark.executor.memory", "10g")
                    .set("spark.executor.memoryOverheadFactor", "0.2")))
        .hasValue(2048 * MIB);
  }

  @Test
  void anExplicitCapIsKeptEvenWhereItDoesNotFit() {
    assertThat(ExecutorMemory.capBytes(1024 * MIB, conf("yarn"))).isEqualTo(1024 * MIB);
  }
}
