package io.streamstate.spark;

import com.codahale.metrics.Counter;
import com.codahale.metrics.Gauge;
import com.codahale.metrics.Metric;
import com.codahale.metrics.MetricRegistry;
import io.streamstate.core.ProcessResources;
import io.streamstate.core.engine.ProcessMetrics;
import io.streamstate.core.hedge.HedgeMetrics;
import io.streamstate.spark.shared.HedgeCounters;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.LongSupplier;
import java.util.function.Supplier;
import org.apache.spark.SparkContext;
import org.apache.spark.api.plugin.DriverPlugin;
import org.apache.spark.api.plugin.ExecutorPlugin;
import org.apache.spark.api.plugin.PluginContext;
import org.apache.spark.api.plugin.SparkPlugin;

/**
 * Puts the process's streamstate figures into Spark's metrics system, so that its sinks (JMX,
 * Prometheus, Graphite, ...) show them: enable with {@code
 * spark.plugins=io.streamstate.spark.StreamStateMetricsPlugin}. Sinks name each metric {@code
 * <appId>.<executorId>.plugin.io.streamstate.spark.StreamStateMetricsPlugin.<name>}.
 *
 * <p>The executor side registers the engine's {@link ProcessMetrics} (every store of the executor)
 * and the file sink's hedges; the driver side the hedges of Spark's logs written through {@code
 * RenameFreeCheckpointFileManager}. Every metric is read from the process's objects when a sink
 * polls, never copied: nothing runs on the commit path but the engine's own counting. In local mode
 * the driver and the executor are one JVM and one metrics system: both sides' metrics appear under
 * {@code <appId>.driver.plugin...} (their names differ, so neither hides the other).
 *
 * <p>Metric names and meanings: spark/README.md, "Metrics in Spark's metrics system".
 */
public final class StreamStateMetricsPlugin implements SparkPlugin {
  static {
    // SET -v lists our keys in a driver that loads the plugin, before any query (SqlConfEntries).
    SqlConfEntries.register();
  }

  @Override
  public DriverPlugin driverPlugin() {
    return new DriverPlugin() {
      @Override
      public Map<String, String> init(SparkContext sc, PluginContext ctx) {
        register(ctx.metricRegistry(), driverMetrics());
        return Collections.emptyMap();
      }
    };
  }

  @Override
  public ExecutorPlugin executorPlugin() {
    return new ExecutorPlugin() {
      @Override
      public void init(PluginContext ctx, Map<String, String> extraConf) {
        register(ctx.metricRegistry(), executorMetrics());
      }
    };
  }

  /** The executor side's metrics by name: the engine's, then the file sink's hedges. */
  static Map<String, Metric> executorMetrics() {
    Map<String, Metric> m = new LinkedHashMap<>();
    for (ProcessMetrics.Metric metric : ProcessMetrics.Metric.values()) {
      // The process's owner is looked up at each read: a test may start a new "process".
      LongSupplier read = () -> ProcessMetrics.of(ProcessResources.shared()).read(metric);
      m.put(
          metric.metricName(),
          metric.kind() == ProcessMetrics.Kind.COUNTER ? new ReadCounter(read) : gauge(read));
    }
    hedgeCounters(m, "sinkOutput", HedgeCounters::sinkOutputs);
    return m;
  }

  /** The driver side's metrics by name: hedges of the checkpoint file manager's writes. */
  static Map<String, Metric> driverMetrics() {
    Map<String, Metric> m = new LinkedHashMap<>();
    hedgeCounters(m, "sparkLog", HedgeCounters::sparkLogs);
    hedgeCounters(m, "sparkStateFile", HedgeCounters::sparkStateFiles);
    return m;
  }

  /** {@code <prefix>Writes}, {@code <prefix>HedgesFired} and {@code <prefix>HedgesWon}. */
  private static void hedgeCounters(
      Map<String, Metric> m, String prefix, Supplier<HedgeMetrics.Snapshot> totals) {
    m.put(prefix + "Writes", new ReadCounter(() -> totals.get().writes()));
    m.put(prefix + "HedgesFired", new ReadCounter(() -> totals.get().hedgesFired()));
    m.put(prefix + "HedgesWon", new ReadCounter(() -> totals.get().hedgesWon()));
  }

  private static void register(MetricRegistry registry, Map<String, Metric> metrics) {
    metrics.forEach(registry::register);
  }

  private static Gauge<Long> gauge(LongSupplier read) {
    return read::getAsLong;
  }

  /**
   * A counter whose count is read from its owner when a sink polls (sinks show counters as counts:
   * JMX attribute {@code Count}, Prometheus {@code ..._Count}); nothing may change it here.
   */
  static final class ReadCounter extends Counter {
    private final LongSupplier read;

    ReadCounter(LongSupplier read) {
      this.read = read;
    }

    @Override
    public long getCount() {
      return read.getAsLong();
    }

    @Override
    public void inc(long n) {
      throw new UnsupportedOperationException("counted by streamstate, read-only here");
    }

    @Override
    public void dec(long n) {
      throw new UnsupportedOperationException("counted by streamstate, read-only here");
    }
  }
}
