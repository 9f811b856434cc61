package io.streamstate.dstream.jdbc;

/**
 * Exactly-once output to a database: a batch's results and what identifies the batch (its Kafka
 * offset ranges, or its {@code foreachBatch} id) are written in one JDBC transaction, so a batch is
 * either wholly written or not at all, and a replayed batch is recognised and skipped.
 *
 * <pre>{@code
 * DirectStreamOffsets offsets = ExactlyOnceJdbc.forDirectStream(connections, "clicks-per-user");
 * JavaInputDStream<ConsumerRecord<String, String>> stream = KafkaUtils.createDirectStream(ssc,
 *     LocationStrategies.PreferConsistent(),
 *     ConsumerStrategies.Subscribe(topics, kafkaParams, offsets.storedOffsets(topics)));
 * stream.foreachRDD(rdd -> {
 *   OffsetRange[] ranges = ((HasOffsetRanges) rdd.rdd()).offsetRanges();
 *   Map<String, Long> counts = rdd.mapToPair(r -> new Tuple2<>(r.key(), 1L))
 *       .reduceByKey(Long::sum).collectAsMap();
 *   offsets.writeBatch(ranges, c -> upsertCounts(c, counts));
 * });
 * }</pre>
 *
 * The factories create the tables if absent, so call them on the driver before the stream starts.
 * Tables are {@value #DEFAULT_OFFSETS_TABLE} and {@value #DEFAULT_BATCHES_TABLE} unless named.
 */
public final class ExactlyOnceJdbc {
  /** The default name of the offsets table of {@link #forDirectStream}. */
  public static final String DEFAULT_OFFSETS_TABLE = "streamstate_kafka_offsets";

  /** The default name of the batches table of {@link #forForeachBatch}. */
  public static final String DEFAULT_BATCHES_TABLE = "streamstate_sink_batches";

  private ExactlyOnceJdbc() {}

  /**
   * Offsets-with-results for the Kafka direct stream of application {@code app}, in {@value
   * #DEFAULT_OFFSETS_TABLE}, created if absent.
   *
   * @param app names the stream's offsets; keep it across restarts, one per consuming stream
   */
  public static DirectStreamOffsets forDirectStream(JdbcConnectionFactory connections, String app) {
    return forDirectStream(connections, app, DEFAULT_OFFSETS_TABLE);
  }

  /** As {@link #forDirectStream(JdbcConnectionFactory, String)}, in the named offsets table. */
  public static DirectStreamOffsets forDirectStream(
      JdbcConnectionFactory connections, String app, String offsetsTable) {
    DirectStreamOffsets offsets = new DirectStreamOffsets(connections, app, offsetsTable);
    offsets.createTableIfAbsent();
    return offsets;
  }

  /**
   * Batch-id-with-results for {@code foreachBatch} of sink {@code sink}, in {@value
   * #DEFAULT_BATCHES_TABLE}, created if absent.
   *
   * @param sink names the query's output; keep it across restarts of the same checkpoint
   */
  public static ForeachBatchOutput forForeachBatch(JdbcConnectionFactory connections, String sink) {
    return forForeachBatch(connections, sink, DEFAULT_BATCHES_TABLE);
  }

  /** As {@link #forForeachBatch(JdbcConnectionFactory, String)}, in the named batches table. */
  public static ForeachBatchOutput forForeachBatch(
      JdbcConnectionFactory connections, String sink, String batchesTable) {
    ForeachBatchOutput output = new ForeachBatchOutput(connections, sink, batchesTable);
    output.createTableIfAbsent();
    return output;
  }
}
