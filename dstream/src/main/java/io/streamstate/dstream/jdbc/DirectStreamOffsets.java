package io.streamstate.dstream.jdbc;

import java.io.Serializable;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import org.apache.kafka.common.TopicPartition;
import org.apache.spark.TaskContext;
import org.apache.spark.streaming.kafka010.OffsetRange;

/**
 * Exactly-once output for the Kafka direct stream ({@code KafkaUtils.createDirectStream}): a
 * batch's results and its offset ranges are written in one JDBC transaction, and the stream is
 * (re)started from the offsets stored there.
 *
 * <p>Offsets live in one row per (application, topic, partition) of the offsets table: {@code
 * until_offset} is the first offset not yet written. A batch is decided per partition, under a row
 * lock ({@code SELECT ... FOR UPDATE}):
 *
 * <ol>
 *   <li>no row, or the stored offset equals the range's {@code fromOffset}: new, written;
 *   <li>the stored offset equals the range's {@code untilOffset} (and the range is not empty):
 *       already committed, so the batch is a replay and is skipped ({@link
 *       BatchOutcome#SKIPPED_REPLAY}) without calling the results writer;
 *   <li>anything else, or some partitions new and others already committed: {@link
 *       OffsetMismatchException}, naming the stored and the batch's offsets; nothing is written.
 * </ol>
 *
 * <p>Then the results writer runs and each row is inserted or moved with {@code UPDATE ... WHERE
 * until_offset = fromOffset}, and the transaction commits. Two drivers writing the same batch (a
 * zombie and its replacement) serialize on the row locks: the second sees the first's commit and
 * skips. For a partition's first batch, where there is no row to lock, the primary key decides: the
 * second insert fails, the transaction rolls back, and the batch is decided again from the
 * committed rows. So it is when a writer reads some rows absent and others committed (the other
 * writer committed between its reads): the mix is decided again in a fresh transaction, and is a
 * mismatch only if it is still there.
 *
 * <p>Serializable: the instance can be captured by a Spark task ({@link #writePartition}). Create
 * it with {@link ExactlyOnceJdbc#forDirectStream}, on the driver.
 */
public final class DirectStreamOffsets implements Serializable {
  private static final long serialVersionUID = 1L;

  private final JdbcConnectionFactory connections;
  private final String app;
  private final String table;

  DirectStreamOffsets(JdbcConnectionFactory connections, String app, String table) {
    this.connections = Objects.requireNonNull(connections, "connections");
    this.app = Objects.requireNonNull(app, "app");
    this.table = Transactions.checkTableName(table);
  }

  /** Creates the offsets table if absent (the statement is in {@link #createTableSql}). */
  void createTableIfAbsent() {
    Transactions.execute(connections, createTableSql(table), "create the offsets table " + table);
  }

  /** The DDL of the offsets table. */
  static String createTableSql(String table) {
    return "CREATE TABLE IF NOT EXISTS "
        + table
        + " (app VARCHAR(255) NOT NULL, topic VARCHAR(255) NOT NULL, kafka_partition INTEGER NOT NULL,"
        + " until_offset BIGINT NOT NULL, PRIMARY KEY (app, topic, kafka_partition))";
  }

  /** The application name this instance reads and writes offsets for. */
  public String app() {
    return app;
  }

  /** The offsets table's name. */
  public String table() {
    return table;
  }

  /**
   * The stored offsets of these topics' partitions: where the stream continues. Pass them to {@code
   * ConsumerStrategies.Subscribe(topics, kafkaParams, storedOffsets)} (or {@code Assign}). A
   * partition without a stored offset is absent: the consumer starts it from {@code
   * auto.offset.reset} (use {@code earliest} to lose nothing written before the first batch).
   */
  public Map<TopicPartition, Long> storedOffsets(Collection<String> topics) {
    Map<TopicPartition, Long> offsets = new LinkedHashMap<>();
    String sql =
        "SELECT topic, kafka_partition, until_offset FROM "
            + table
            + " WHERE app = ? AND topic = ? ORDER BY kafka_partition";
    try (Connection c = connections.open();
        PreparedStatement select = c.prepareStatement(sql)) {
      for (String topic : topics) {
        select.setString(1, app);
        select.setString(2, topic);
        try (ResultSet rows = select.executeQuery()) {
          while (rows.next()) {
            offsets.put(new TopicPartition(rows.getString(1), rows.getInt(2)), rows.getLong(3));
          }
        }
      }
    } catch (SQLException e) {
      throw new ExactlyOnceOutputException(
          "Cannot read the stored offsets of app " + app + " from " + table + ": " + e.getMessage(),
          e);
    }
    return offsets;
  }

  /** {@link #storedOffsets(Collection)} of the given topics. */
  public Map<TopicPartition, Long> storedOffsets(String... topics) {
    return storedOffsets(Arrays.asList(topics));
  }

  /**
   * Driver-side pattern: writes a batch's results (aggregated or collected to the driver) and all
   * of its offset ranges in one transaction. Call it in {@code foreachRDD} with {@code
   * ((HasOffsetRanges) rdd.rdd()).offsetRanges()} of the stream created by {@code
   * createDirectStream} (before any transformation: the ranges belong to that RDD).
   *
   * @return {@link BatchOutcome#COMMITTED}, or {@link BatchOutcome#SKIPPED_REPLAY} when these
   *     ranges had been committed before
   * @throws OffsetMismatchException when the stored offsets neither precede nor equal the ranges
   * @throws ExactlyOnceOutputException when the transaction failed (rolled back; retrying is safe)
   */
  public BatchOutcome writeBatch(OffsetRange[] ranges, ResultsWriter results) {
    Objects.requireNonNull(results, "results");
    List<OffsetRange> sorted = new ArrayList<>(Arrays.asList(ranges));
    // One lock order for every writer, so two drivers locking the same rows cannot deadlock.
    sorted.sort(Comparator.comparing(OffsetRange::topic).thenComparingInt(OffsetRange::partition));
    String what = "the batch " + describe(sorted) + " of app " + app;
    return Transactions.run(
        connections,
        what,
        c -> write(c, sorted, results),
        c ->
            decide(c, sorted, "after a concurrent writer").alreadyCommitted()
                ? BatchOutcome.SKIPPED_REPLAY
                : null);
  }

  /**
   * Per-partition pattern: in a task over one Kafka partition's records (no shuffle before it),
   * writes that partition's results and its own offset range in one transaction. The fromOffset
   * check is per partition: each partition commits on its own, so a batch may be committed for some
   * partitions and not others when a driver dies; a restart resumes each partition from its stored
   * offset.
   *
   * @param range this task's range, e.g. {@code ranges[TaskContext.get().partitionId()]}
   * @see #writeTaskPartition(OffsetRange[], ResultsWriter)
   */
  public BatchOutcome writePartition(OffsetRange range, ResultsWriter results) {
    return writeBatch(new OffsetRange[] {range}, results);
  }

  /**
   * {@link #writePartition} of the range of the running task's partition: {@code
   * ranges[TaskContext.get().partitionId()]}, valid in {@code foreachPartition} of the direct
   * stream's RDD (or of an RDD derived from it without a shuffle, which keeps its partitions).
   *
   * @throws IllegalStateException outside a Spark task, or when the task's partition has no range
   */
  public BatchOutcome writeTaskPartition(OffsetRange[] ranges, ResultsWriter results) {
    TaskContext task = TaskContext.get();
    if (task == null) {
      throw new IllegalStateException(
          "writeTaskPartition runs in a Spark task (foreachPartition); on the driver use writeBatch");
    }
    int partition = task.partitionId();
    if (partition >= ranges.length) {
      throw new IllegalStateException(
          "Task partition "
              + partition
              + " has no offset range ("
              + ranges.length
              + " ranges): was the RDD shuffled or repartitioned after the direct stream?");
    }
    return writePartition(ranges[partition], results);
  }

  private BatchOutcome write(Connection c, List<OffsetRange> ranges, ResultsWriter results)
      throws SQLException {
    Decision decision = decide(c, ranges, "");
    if (decision.alreadyCommitted()) {
      return BatchOutcome.SKIPPED_REPLAY;
    }
    results.write(c);
    String insert =
        "INSERT INTO " + table + " (app, topic, kafka_partition, until_offset) VALUES (?, ?, ?, ?)";
    String update =
        "UPDATE "
            + table
            + " SET until_offset = ? WHERE app = ? AND topic = ? AND kafka_partition = ?"
            + " AND until_offset = ?";
    try (PreparedStatement ins = c.prepareStatement(insert);
        PreparedStatement upd = c.prepareStatement(update)) {
      for (int i = 0; i < ranges.size(); i++) {
        OffsetRange r = ranges.get(i);
        Long stored = decision.stored.get(i);
        if (stored == null) {
          ins.setString(1, app);
          ins.setString(2, r.topic());
          ins.setInt(3, r.partition());
          ins.setLong(4, r.untilOffset());
          ins.executeUpdate();
        } else if (r.fromOffset() != r.untilOffset()) {
          upd.setLong(1, r.untilOffset());
          upd.setString(2, app);
          upd.setString(3, r.topic());
          upd.setInt(4, r.partition());
          upd.setLong(5, r.fromOffset());
          if (upd.executeUpdate() != 1) {
            // Cannot happen while the row is locked; a database without FOR UPDATE would get here.
            throw new ExactlyOnceOutputException(
                "Cannot commit the batch of app "
                    + app
                    + ": the stored offset of "
                    + r.topicPartition()
                    + " changed under the row lock (does the database honour SELECT ... FOR UPDATE?)");
          }
        }
      }
    }
    return BatchOutcome.COMMITTED;
  }

  /** Locks and reads each range's row, then classifies the batch (see the class comment). */
  private Decision decide(Connection c, List<OffsetRange> ranges, String when) throws SQLException {
    String select =
        "SELECT until_offset FROM "
            + table
            + " WHERE app = ? AND topic = ? AND kafka_partition = ? FOR UPDATE";
    List<Long> stored = new ArrayList<>(ranges.size());
    List<String> mismatches = new ArrayList<>();
    List<String> committed = new ArrayList<>();
    List<String> fresh = new ArrayList<>();
    int absent = 0;
    try (PreparedStatement s = c.prepareStatement(select)) {
      for (OffsetRange r : ranges) {
        s.setString(1, app);
        s.setString(2, r.topic());
        s.setInt(3, r.partition());
        Long value = null;
        try (ResultSet rows = s.executeQuery()) {
          if (rows.next()) {
            value = rows.getLong(1);
          }
        }
        stored.add(value);
        absent += value == null ? 1 : 0;
        String name = r.topic() + "-" + r.partition();
        if (value == null || (value == r.fromOffset() && r.fromOffset() != r.untilOffset())) {
          fresh.add(name);
        } else if (value == r.fromOffset()) {
          // An empty range whose partition is where it was: neither new nor a replay.
          continue;
        } else if (value == r.untilOffset()) {
          committed.add(name);
        } else {
          mismatches.add(
              name
                  + ": stored until_offset "
                  + value
                  + ", batch fromOffset "
                  + r.fromOffset()
                  + " (untilOffset "
                  + r.untilOffset()
                  + ")");
        }
      }
    }
    if (!mismatches.isEmpty()) {
      throw new OffsetMismatchException(
          "Offsets of app "
              + app
              + " in "
              + table
              + " do not match the batch"
              + (when.isEmpty() ? "" : " " + when)
              + ": "
              + String.join("; ", mismatches)
              + ". Was the stream started from other offsets than storedOffsets(...), or is"
              + " another driver of the same app ahead of this one?");
    }
    if (!committed.isEmpty() && absent > 0 && when.isEmpty()) {
      // A first row has nothing to lock: another writer of this batch may have committed its
      // rows between two of these reads. Decide again in a fresh transaction, which sees them all.
      throw new Transactions.ConcurrentWriterSeen(
          "the batch of app "
              + app
              + " is committed in "
              + table
              + " for "
              + committed
              + " but had no row for "
              + fresh
              + " when read, moments before");
    }
    if (!committed.isEmpty() && !fresh.isEmpty()) {
      throw new OffsetMismatchException(
          "The batch of app "
              + app
              + " is committed in "
              + table
              + " for "
              + committed
              + " but not for "
              + fresh
              + ": a batch written with writeBatch must have the same ranges as when it was"
              + " first committed");
    }
    return new Decision(stored, !committed.isEmpty());
  }

  private static String describe(List<OffsetRange> ranges) {
    StringBuilder b = new StringBuilder("[");
    for (OffsetRange r : ranges) {
      if (b.length() > 1) {
        b.append(", ");
      }
      b.append(r.topic())
          .append('-')
          .append(r.partition())
          .append(' ')
          .append(r.fromOffset())
          .append("..")
          .append(r.untilOffset());
    }
    return b.append(']').toString();
  }

  private static final class Decision {
    final List<Long> stored;
    private final boolean committed;

    Decision(List<Long> stored, boolean committed) {
      this.stored = stored;
      this.committed = committed;
    }

    boolean alreadyCommitted() {
      return committed;
    }
  }
}
