package io.streamstate.spark;

import static org.awaitility.Awaitility.await;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.nio.file.Path;
import java.sql.Timestamp;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Encoder;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.execution.streaming.runtime.MemoryStream;
import org.apache.spark.sql.execution.streaming.sources.MemorySink;
import org.apache.spark.sql.streaming.OutputMode;
import org.apache.spark.sql.streaming.StreamingQuery;
import org.apache.spark.sql.streaming.StreamingQueryProgress;
import org.apache.spark.sql.streaming.Trigger;
import org.apache.spark.util.ManualClock;
import scala.Option;
import scala.Tuple3;

/**
 * Runs a streaming query deterministically: a {@link ManualClock} drives a processing-time trigger,
 * so each {@link Steps#tick()} runs exactly one trigger (one batch, with data or without), with a
 * batch timestamp that depends on the ticks alone. Input comes from {@link MemoryStream}s of events
 * {@code (key, ts, value)}; output goes to a memory sink. Nothing depends on wall-clock time, so
 * two runs with the same steps produce the same output whichever state store provider they use.
 */
final class ClockedRun {
  static final long TICK_MS = 1000;
  private static final Duration STEP_TIMEOUT = Duration.ofSeconds(120);

  /** An input event: key, event time in seconds since the epoch, value. */
  static Tuple3<String, Timestamp, Integer> ev(String key, long seconds, int value) {
    return new Tuple3<>(key, new Timestamp(seconds * 1000), value);
  }

  static Encoder<Tuple3<String, Timestamp, Integer>> eventEncoder() {
    return Encoders.tuple(Encoders.STRING(), Encoders.TIMESTAMP(), Encoders.INT());
  }

  /** What a run does, in order. */
  static final class Steps {
    private final List<Object> steps = new ArrayList<>();

    /** Queues events on input {@code input} (they enter the next tick's batch). */
    @SafeVarargs
    final Steps data(int input, Tuple3<String, Timestamp, Integer>... events) {
      steps.add(new Data(input, List.of(events)));
      return this;
    }

    /** Runs one trigger. */
    Steps tick() {
      steps.add(Tick.INSTANCE);
      return this;
    }

    Steps ticks(int n) {
      for (int i = 0; i < n; i++) {
        tick();
      }
      return this;
    }

    /** Stops the query and starts it again on the same checkpoint (the clock keeps its time). */
    Steps restart() {
      return restart(() -> {});
    }

    /** Like {@link #restart()}, running {@code betweenRuns} while the query is stopped. */
    Steps restart(Runnable betweenRuns) {
      steps.add(new Restart(betweenRuns));
      return this;
    }

    /** Waits (while the query idles between triggers) until the condition holds. */
    Steps await(String what, QueryCondition condition) {
      steps.add(new Await(what, condition));
      return this;
    }
  }

  /** A condition on the running query. */
  interface QueryCondition {
    boolean test(StreamingQuery query) throws Exception;
  }

  private record Data(int input, List<Tuple3<String, Timestamp, Integer>> events) {}

  private enum Tick {
    INSTANCE
  }

  private record Restart(Runnable betweenRuns) {}

  private record Await(String what, QueryCondition condition) {}

  /**
   * What a run produced: the sink's rows, the progress reports of the last query run (the one after
   * the last restart), and those of all its query runs in order.
   */
  record Result(
      List<String> rows,
      List<StreamingQueryProgress> lastRunProgress,
      List<StreamingQueryProgress> allProgress) {
    /** numRowsTotal of all state operators in the last progress that has state operators. */
    long lastNumRowsTotal() {
      for (int i = lastRunProgress.size() - 1; i >= 0; i--) {
        StreamingQueryProgress p = lastRunProgress.get(i);
        if (p.stateOperators().length > 0) {
          long total = 0;
          for (var op : p.stateOperators()) {
            total += op.numRowsTotal();
          }
          return total;
        }
      }
      throw new AssertionError("no progress with state operators");
    }
  }

  private final SparkSession spark;
  private final int inputs;
  private final Function<List<Dataset<Row>>, Dataset<Row>> query;
  private final OutputMode mode;

  /**
   * @param inputs number of input streams, each with columns {@code key, ts, value}
   * @param query builds the query from the input streams
   */
  ClockedRun(
      SparkSession spark,
      int inputs,
      Function<List<Dataset<Row>>, Dataset<Row>> query,
      OutputMode mode) {
    this.spark = spark;
    this.inputs = inputs;
    this.query = query;
    this.mode = mode;
  }

  /**
   * Runs the steps with the given provider and a fresh checkpoint; returns every row the sink
   * received (complete mode: the last batch's), as strings, sorted.
   */
  Result run(String providerClass, Path checkpoint, Steps steps) throws Exception {
    return run(providerClass, checkpoint, steps, Map.of());
  }

  Result run(String providerClass, Path checkpoint, Steps steps, Map<String, String> sessionConf)
      throws Exception {
    return run(providerClass, checkpoint.toUri().toString(), steps, sessionConf);
  }

  /**
   * Like the others, with the checkpoint given as a URI ({@code hdfs://...}, {@code s3a://...}).
   */
  Result run(
      String providerClass, String checkpointUri, Steps steps, Map<String, String> sessionConf)
      throws Exception {
    Map<String, String> previous = new LinkedHashMap<>();
    spark.conf().set(TestSessions.PROVIDER_CLASS, providerClass);
    Map<String, String> confs = new LinkedHashMap<>(sessionConf);
    if (TestSessions.OURS.equals(providerClass)) {
      TestSessions.forcedOursConf().forEach(confs::putIfAbsent);
    }
    for (Map.Entry<String, String> e : confs.entrySet()) {
      previous.put(e.getKey(), spark.conf().get(e.getKey(), null));
      spark.conf().set(e.getKey(), e.getValue());
    }
    try {
      List<MemoryStream<Tuple3<String, Timestamp, Integer>>> streams = new ArrayList<>();
      List<Dataset<Row>> frames = new ArrayList<>();
      for (int i = 0; i < inputs; i++) {
        MemoryStream<Tuple3<String, Timestamp, Integer>> stream =
            SparkLineTestApi.memoryStream(eventEncoder(), spark);
        streams.add(stream);
        frames.add(stream.toDS().toDF("key", "ts", "value"));
      }
      Dataset<Row> df = query.apply(frames);
      MemorySink sink = new MemorySink();
      WaitAwareClock clock = new WaitAwareClock(0);
      StreamingQuery running = start(df, sink, checkpointUri, clock);
      List<StreamingQueryProgress> allProgress = new ArrayList<>();
      try {
        awaitIdle(running, clock);
        for (Object step : steps.steps) {
          if (step instanceof Data d) {
            streams.get(d.input()).addData(ScalaInterop.seq(d.events()));
          } else if (step == Tick.INSTANCE) {
            clock.advance(TICK_MS);
            awaitIdle(running, clock);
          } else if (step instanceof Restart r) {
            running.stop();
            allProgress.addAll(List.of(running.recentProgress()));
            r.betweenRuns().run();
            clock = new WaitAwareClock(clock.getTimeMillis());
            running = start(df, sink, checkpointUri, clock);
            awaitIdle(running, clock);
          } else if (step instanceof Await a) {
            StreamingQuery current = running;
            await(a.what())
                .atMost(STEP_TIMEOUT)
                .pollInterval(Duration.ofMillis(50))
                .until(() -> a.condition().test(current));
          }
        }
      } finally {
        running.stop();
      }
      if (running.exception().isDefined()) {
        throw running.exception().get();
      }
      List<Row> out =
          mode == OutputMode.Complete()
              ? ScalaInterop.javaList(sink.latestBatchData())
              : ScalaInterop.javaList(sink.allData());
      List<String> rows = new ArrayList<>();
      for (Row r : out) {
        rows.add(r.toString());
      }
      rows.sort(null);
      allProgress.addAll(List.of(running.recentProgress()));
      return new Result(rows, List.of(running.recentProgress()), allProgress);
    } finally {
      for (Map.Entry<String, String> e : previous.entrySet()) {
        if (e.getValue() == null) {
          spark.conf().unset(e.getKey());
        } else {
          spark.conf().set(e.getKey(), e.getValue());
        }
      }
    }
  }

  /**
   * Starts the query with the manual clock through Spark's internal {@code startQuery}, by
   * reflection: 4.2 added a parameter ({@code userSpecifiedSinkName}, second) to the 12 of 4.1, and
   * this test source is compiled against every line.
   */
  private StreamingQuery start(
      Dataset<Row> df, MemorySink sink, String checkpointUri, WaitAwareClock clock)
      throws Exception {
    Object manager = spark.streams();
    Method startQuery = null;
    for (Method m : manager.getClass().getMethods()) {
      if (m.getName().equals("startQuery")) {
        startQuery = m;
      }
    }
    if (startQuery == null) {
      throw new IllegalStateException("no startQuery in " + manager.getClass());
    }
    List<Object> args = new ArrayList<>();
    args.add(Option.empty()); // userSpecifiedName
    if (startQuery.getParameterCount() == 13) {
      args.add(Option.empty()); // userSpecifiedSinkName (4.2)
    }
    args.addAll(
        List.of(
            Option.apply(checkpointUri),
            df,
            scala.collection.immutable.Map$.MODULE$.empty(),
            sink,
            mode,
            false,
            true,
            Trigger.ProcessingTime(TICK_MS),
            clock,
            Option.empty(),
            Option.empty()));
    try {
      return (StreamingQuery) startQuery.invoke(manager, args.toArray());
    } catch (InvocationTargetException e) {
      throw e.getCause() instanceof Exception cause ? cause : e;
    }
  }

  /** Waits until the query finished the trigger of the clock's current time and waits for more. */
  private static void awaitIdle(StreamingQuery query, WaitAwareClock clock) {
    await()
        .atMost(STEP_TIMEOUT)
        .pollInterval(Duration.ofMillis(10))
        .until(
            () -> {
              if (query.exception().isDefined()) {
                throw query.exception().get();
              }
              if (!query.isActive()) {
                throw new IllegalStateException("query stopped unexpectedly");
              }
              return clock.isWaitingAt(clock.getTimeMillis());
            });
  }

  /** A manual clock that tells when the stream waits on it, and since which time. */
  static final class WaitAwareClock extends ManualClock {
    private long waitingSince = -1;

    WaitAwareClock(long startMs) {
      super(startMs);
    }

    @Override
    public long waitTillTime(long targetTime) {
      synchronized (this) {
        waitingSince = getTimeMillis();
      }
      try {
        return super.waitTillTime(targetTime);
      } finally {
        synchronized (this) {
          waitingSince = -1;
        }
      }
    }

    synchronized boolean isWaitingAt(long time) {
      return waitingSince == time;
    }
  }
}
