package io.streamstate.spark;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.apache.hadoop.metrics2.AbstractMetric;
import org.apache.hadoop.metrics2.MetricType;
import org.apache.hadoop.metrics2.MetricsRecord;
import org.apache.hadoop.metrics2.MetricsSource;
import org.apache.hadoop.metrics2.impl.MetricsCollectorImpl;
import org.apache.hadoop.metrics2.lib.DefaultMetricsSystem;
import software.amazon.awssdk.core.interceptor.Context;
import software.amazon.awssdk.core.interceptor.ExecutionAttributes;
import software.amazon.awssdk.core.interceptor.ExecutionInterceptor;

/**
 * Counts the storage requests a process makes, by kind, as the store sees them: every request,
 * whichever client made it ({@code FileSystem}, {@code FileContext}, driver or executor).
 *
 * <ul>
 *   <li>HDFS: the NameNode's per-method RPC counts ({@code RpcDetailedActivityForPort<port>}, the
 *       {@code <method>NumOps} counters). Client-side {@code FileSystem} statistics would miss
 *       Spark's default checkpoint file manager, which goes through {@code FileContext} (the {@code
 *       Hdfs} AbstractFileSystem, not {@code DistributedFileSystem}).
 *   <li>S3: an AWS SDK execution interceptor that S3A loads into every client it makes ({@value
 *       #S3A_INTERCEPTORS_KEY}), counting requests by SDK operation. S3A's per-instance
 *       IOStatistics would miss the clients {@code FileContext} creates for itself.
 * </ul>
 *
 * <p>Use: take a {@link #snapshot} before and after a number of batches, {@link #perBatch} the
 * difference, {@link #table} to print ours against a reference. Kept test-side, where the benchmark
 * module can reuse it.
 */
public final class RequestCounts {
  /** The S3A setting that loads {@link S3RequestCounter} into every S3A client. */
  public static final String S3A_INTERCEPTORS_KEY = "fs.s3a.audit.execution.interceptors";

  /** The kinds requests are grouped in, in table order. */
  public static final List<String> KINDS =
      List.of("create", "rename", "copy", "list", "get/open", "head", "delete", "mkdirs", "other");

  /** Raw counters by operation name. */
  public interface Source {
    Map<String, Long> snapshot();

    /** The kind of an operation name of this source. */
    String kindOf(String operation);
  }

  private RequestCounts() {}

  // ---- HDFS ----

  /** Requests to {@code cluster}'s NameNode, by RPC method. */
  public static Source hdfs(MiniDFSCluster cluster) {
    String sourceName = "RpcDetailedActivityForPort" + cluster.getNameNodePort();
    return new Source() {
      @Override
      public Map<String, Long> snapshot() {
        MetricsSource source = DefaultMetricsSystem.instance().getSource(sourceName);
        if (source == null) {
          throw new IllegalStateException("No metrics source " + sourceName);
        }
        MetricsCollectorImpl collector = new MetricsCollectorImpl();
        source.getMetrics(collector, true);
        Map<String, Long> counts = new TreeMap<>();
        for (MetricsRecord record : collector.getRecords()) {
          for (AbstractMetric metric : record.metrics()) {
            String name = metric.name();
            // "overall<Method>NumOps" repeats every count (totals across callers): skipped.
            if (metric.type() == MetricType.COUNTER
                && name.endsWith("NumOps")
                && !name.startsWith("Overall")
                && !name.startsWith("overall")) {
              String method = name.substring(0, name.length() - "NumOps".length());
              counts.merge(
                  method.substring(0, 1).toLowerCase(Locale.ROOT) + method.substring(1),
                  metric.value().longValue(),
                  Long::sum);
            }
          }
        }
        return counts;
      }

      @Override
      public String kindOf(String method) {
        return switch (method) {
          case "create", "append" -> "create";
          case "rename", "rename2" -> "rename";
          case "getListing", "getBatchedListing" -> "list";
          case "getBlockLocations" -> "get/open";
          case "getFileInfo", "getLocatedFileInfo" -> "head";
          case "delete" -> "delete";
          case "mkdirs" -> "mkdirs";
          // complete, addBlock, fsync, renewLease, getServerDefaults, msync, ...: part of a
          // create or of keeping a client alive. DataNode protocol methods are not requests.
          default -> isDataNodeMethod(method) ? null : "other";
        };
      }
    };
  }

  private static boolean isDataNodeMethod(String method) {
    return switch (method) {
      case "sendHeartbeat",
          "blockReceivedAndDeleted",
          "blockReport",
          "cacheReport",
          "registerDatanode",
          "versionRequest",
          "sendLifeline",
          "errorReport",
          "commitBlockSynchronization",
          "reportBadBlocks" ->
          true;
      default -> false;
    };
  }

  // ---- S3 ----

  /** Requests of every S3A client of this JVM that loaded {@link S3RequestCounter}. */
  public static Source s3() {
    return new Source() {
      @Override
      public Map<String, Long> snapshot() {
        Map<String, Long> counts = new TreeMap<>();
        S3RequestCounter.COUNTS.forEach((k, v) -> counts.put(k, v.get()));
        return counts;
      }

      @Override
      public String kindOf(String operation) {
        return switch (operation) {
          case "PutObject", "CreateMultipartUpload", "UploadPart", "CompleteMultipartUpload" ->
              "create";
          case "CopyObject", "UploadPartCopy" -> "copy";
          case "ListObjectsV2", "ListObjects", "ListMultipartUploads" -> "list";
          case "GetObject" -> "get/open";
          case "HeadObject", "HeadBucket" -> "head";
          case "DeleteObject", "DeleteObjects", "AbortMultipartUpload" -> "delete";
          default -> "other";
        };
      }
    };
  }

  /**
   * Counts S3 requests by SDK operation ({@code PutObject}, {@code HeadObject}, ...), once per
   * request (SDK retries not counted again). S3A loads it through {@value #S3A_INTERCEPTORS_KEY};
   * the counts are JVM-wide.
   */
  public static final class S3RequestCounter implements ExecutionInterceptor {
    static final Map<String, AtomicLong> COUNTS = new ConcurrentHashMap<>();

    @Override
    public void beforeExecution(Context.BeforeExecution context, ExecutionAttributes attributes) {
      String name = context.request().getClass().getSimpleName();
      if (name.endsWith("Request")) {
        name = name.substring(0, name.length() - "Request".length());
      }
      COUNTS.computeIfAbsent(name, k -> new AtomicLong()).incrementAndGet();
    }
  }

  // ---- arithmetic and printing ----

  /** The counters of {@code source} now. */
  public static Map<String, Long> snapshot(Source source) {
    return source.snapshot();
  }

  /** {@code (after - before) / batches}, grouped by kind, every kind present (zero if none). */
  public static Map<String, Double> perBatch(
      Source source, Map<String, Long> before, Map<String, Long> after, int batches) {
    Map<String, Double> byKind = new LinkedHashMap<>();
    for (String kind : KINDS) {
      byKind.put(kind, 0.0);
    }
    for (Map.Entry<String, Long> e : after.entrySet()) {
      long delta = e.getValue() - before.getOrDefault(e.getKey(), 0L);
      String kind = source.kindOf(e.getKey());
      if (delta != 0 && kind != null) {
        byKind.merge(kind, (double) delta / batches, Double::sum);
      }
    }
    return byKind;
  }

  /** {@code after - before} by raw operation name, nonzero entries only. */
  public static Map<String, Long> delta(Map<String, Long> before, Map<String, Long> after) {
    Map<String, Long> d = new TreeMap<>();
    after.forEach(
        (k, v) -> {
          long x = v - before.getOrDefault(k, 0L);
          if (x != 0) {
            d.put(k, x);
          }
        });
    return d;
  }

  /** A table: kind, then one column per setup, requests per batch. */
  public static String table(String title, Map<String, Map<String, Double>> columns) {
    List<String> names = new ArrayList<>(columns.keySet());
    StringBuilder sb = new StringBuilder();
    sb.append(title).append('\n');
    sb.append(String.format(Locale.ROOT, "%-10s", "kind"));
    for (String n : names) {
      sb.append(String.format(Locale.ROOT, " %14s", n));
    }
    sb.append('\n');
    for (String kind : KINDS) {
      sb.append(String.format(Locale.ROOT, "%-10s", kind));
      for (String n : names) {
        sb.append(String.format(Locale.ROOT, " %14.2f", columns.get(n).getOrDefault(kind, 0.0)));
      }
      sb.append('\n');
    }
    sb.append(String.format(Locale.ROOT, "%-10s", "total"));
    for (String n : names) {
      double total = columns.get(n).values().stream().mapToDouble(Double::doubleValue).sum();
      sb.append(String.format(Locale.ROOT, " %14.2f", total));
    }
    sb.append('\n');
    return sb.toString();
  }
}
