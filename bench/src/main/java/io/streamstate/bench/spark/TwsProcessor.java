package io.streamstate.bench.spark;

import java.sql.Timestamp;
import java.util.List;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.streaming.ExpiredTimerInfo;
import org.apache.spark.sql.streaming.ListState;
import org.apache.spark.sql.streaming.MapState;
import org.apache.spark.sql.streaming.OutputMode;
import org.apache.spark.sql.streaming.StatefulProcessor;
import org.apache.spark.sql.streaming.TTLConfig;
import org.apache.spark.sql.streaming.TimeMode;
import org.apache.spark.sql.streaming.TimerValues;
import org.apache.spark.sql.streaming.ValueState;

/**
 * The {@code tws} workload's processor: per key a count (value state), its last few amounts (list
 * state, at most {@link #KEEP}), a count per parity (map state), and one event-time timer a minute
 * after the key's newest event, which reports the key and clears its state. One output row per key
 * and batch.
 */
final class TwsProcessor extends StatefulProcessor<Long, Row, String> {
  static final int KEEP = 4;

  private transient ValueState<Long> count;
  private transient ListState<Long> recent;
  private transient MapState<String, Long> parities;

  @Override
  public void init(OutputMode outputMode, TimeMode timeMode) {
    count = getHandle().getValueState("count", Encoders.LONG(), TTLConfig.NONE());
    recent = getHandle().getListState("recent", Encoders.LONG(), TTLConfig.NONE());
    parities =
        getHandle().getMapState("parities", Encoders.STRING(), Encoders.LONG(), TTLConfig.NONE());
  }

  @Override
  public scala.collection.Iterator<String> handleInputRows(
      Long key, scala.collection.Iterator<Row> rows, TimerValues timerValues) {
    long n = count.exists() ? count.get() : 0;
    long newest = Long.MIN_VALUE;
    java.util.ArrayList<Long> kept = new java.util.ArrayList<>();
    recent.get().foreach(kept::add);
    while (rows.hasNext()) {
      Row r = rows.next();
      long amount = r.getLong(1);
      n++;
      kept.add(amount);
      String parity = amount % 2 == 0 ? "even" : "odd";
      parities.updateValue(
          parity, (parities.containsKey(parity) ? parities.getValue(parity) : 0) + 1);
      newest = Math.max(newest, r.<Timestamp>getAs(2).getTime());
    }
    count.update(n);
    List<Long> last = kept.subList(Math.max(0, kept.size() - KEEP), kept.size());
    recent.put(last.toArray(new Long[0]));
    scala.collection.Iterator<Object> timers = getHandle().listTimers();
    while (timers.hasNext()) {
      getHandle().deleteTimer((Long) timers.next());
    }
    getHandle().registerTimer(newest + 60_000);
    return scala.jdk.javaapi.CollectionConverters.asScala(List.of(key + ":" + n).iterator());
  }

  @Override
  public scala.collection.Iterator<String> handleExpiredTimer(
      Long key, TimerValues timerValues, ExpiredTimerInfo expiredTimerInfo) {
    String line = key + " expired " + (count.exists() ? count.get() : 0);
    count.clear();
    recent.clear();
    parities.clear();
    return scala.jdk.javaapi.CollectionConverters.asScala(List.of(line).iterator());
  }
}
