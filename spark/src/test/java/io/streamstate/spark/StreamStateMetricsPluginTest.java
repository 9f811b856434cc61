package io.streamstate.spark;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.codahale.metrics.Counter;
import com.codahale.metrics.Gauge;
import com.codahale.metrics.Metric;
import io.streamstate.core.ProcessResources;
import io.streamstate.core.engine.ProcessMetrics;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * {@link StreamStateMetricsPlugin}'s metrics without Spark: each engine metric registered with its
 * kind, read from the process when asked, and documented in spark/README.md ({@code
 * MetricsPluginIT} reads them from Spark's sinks).
 */
class StreamStateMetricsPluginTest {

  @Test
  void engineCountersAreCountersAndItsGaugesGauges() {
    Map<String, Metric> metrics = StreamStateMetricsPlugin.executorMetrics();
    for (ProcessMetrics.Metric m : ProcessMetrics.Metric.values()) {
      assertThat(metrics.get(m.metricName()))
          .as(m.metricName())
          .isInstanceOf(m.kind() == ProcessMetrics.Kind.COUNTER ? Counter.class : Gauge.class);
    }
  }

  @Test
  void countersReadTheProcessWhenAskedAndCannotBeChangedThroughTheRegistry() {
    Counter commits = (Counter) StreamStateMetricsPlugin.executorMetrics().get("commits");
    long before = commits.getCount();
    ProcessMetrics.of(ProcessResources.shared()).add(ProcessMetrics.Metric.COMMITS, 5);
    assertThat(commits.getCount()).isEqualTo(before + 5);
    assertThatThrownBy(commits::inc).isInstanceOf(UnsupportedOperationException.class);
  }

  @Test
  void everyMetricOfBothSidesIsDocumentedInTheReadme() throws Exception {
    String readme = Files.readString(Path.of("README.md")); // the spark module's
    int start = readme.indexOf("## Metrics in Spark's metrics system");
    assertThat(start).as("the section in spark/README.md").isNotNegative();
    int end = readme.indexOf("\n## ", start + 4);
    String section = readme.substring(start, end);
    Map<String, Metric> all = new LinkedHashMap<>(StreamStateMetricsPlugin.executorMetrics());
    all.putAll(StreamStateMetricsPlugin.driverMetrics());
    for (String name : all.keySet()) {
      assertThat(section).as("spark/README.md documents %s", name).contains("`" + name + "`");
    }
  }
}
