package io.streamstate.spark.repartition;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.spark.TaskContext;
import org.apache.spark.broadcast.Broadcast;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation$;
import org.apache.spark.sql.execution.datasources.v2.state.StateDataSource;
import org.apache.spark.sql.execution.datasources.v2.state.StateSourceOptions;
import org.apache.spark.sql.execution.datasources.v2.state.StateSourceOptions$;
import org.apache.spark.sql.execution.datasources.v2.state.StateStoreReaderInfo;
import org.apache.spark.sql.execution.datasources.v2.state.StateTable;
import org.apache.spark.sql.execution.datasources.v2.state.metadata.StateMetadataPartitionReader;
import org.apache.spark.sql.execution.datasources.v2.state.utils.SchemaUtil;
import org.apache.spark.sql.execution.streaming.checkpointing.OffsetSeqBase;
import org.apache.spark.sql.execution.streaming.operators.stateful.transformwithstate.TransformWithStateVariableInfo;
import org.apache.spark.sql.execution.streaming.runtime.StreamingQueryCheckpointMetadata;
import org.apache.spark.sql.execution.streaming.state.KeyStateEncoderSpec;
import org.apache.spark.sql.execution.streaming.state.NoPrefixKeyStateEncoderSpec;
import org.apache.spark.sql.execution.streaming.state.OfflineStateRepartitionRunner;
import org.apache.spark.sql.execution.streaming.state.OperatorStateMetadata;
import org.apache.spark.sql.execution.streaming.state.StatePartitionAllColumnFamiliesWriter;
import org.apache.spark.sql.execution.streaming.state.StatePartitionWriterColumnFamilyInfo;
import org.apache.spark.sql.execution.streaming.state.StateRewriter;
import org.apache.spark.sql.execution.streaming.state.StateSchemaProvider;
import org.apache.spark.sql.execution.streaming.state.StateStoreCheckpointInfo;
import org.apache.spark.sql.execution.streaming.state.StateStoreConf;
import org.apache.spark.sql.execution.streaming.state.StateStoreMetadata;
import org.apache.spark.sql.internal.SQLConf;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;
import org.apache.spark.util.SerializableConfiguration;
import scala.Option;
import scala.Tuple2;
import scala.jdk.javaapi.CollectionConverters;

/**
 * The steps of Spark 4.2's {@code StateRewriter} that rewrite every store of a checkpoint's
 * operators from one batch's state into a new batch's stores, as Spark runs them, except for the
 * one that refuses every provider but its RocksDB one (see {@link OfflineRepartition}). The batch's
 * offset entry decides what the new stores are: Spark's rewriter opens them with the session confs
 * pinned in that entry (its provider class, its partition count), so {@link OfflineRepartition} and
 * {@link OfflineConvert} differ only in the entry they write before calling {@link #rewrite}.
 */
final class OfflineRewrite {
  /** Spark's state data source option that reads every column family's raw rows. */
  private static final String READ_ALL_COLUMN_FAMILIES = "_readAllColumnFamilies";

  private OfflineRewrite() {}

  /**
   * Spark's offline repartitioning runner opened on a checkpoint, for its steps (private methods,
   * called by name): its readers and writers of the checkpoint's logs, and what it resolved.
   */
  record Runner(
      OfflineStateRepartitionRunner steps,
      Configuration hadoopConf,
      String location,
      StreamingQueryCheckpointMetadata checkpoint) {
    static Runner open(
        SparkSession spark,
        String checkpointLocation,
        int numPartitions,
        boolean enforceExactlyOnce) {
      OfflineStateRepartitionRunner runner =
          new OfflineStateRepartitionRunner(
              spark, checkpointLocation, numPartitions, enforceExactlyOnce);
      return new Runner(
          runner,
          call(runner, "hadoopConf"),
          call(runner, "resolvedCpLocation"),
          call(runner, "checkpointMetadata"));
    }

    /** Runs the runner's step {@code name}. */
    <T> T step(String name, Object... args) {
      return call(steps, name, args);
    }
  }

  /**
   * Rewrites the state of batch {@code readBatch} into the stores of {@code newBatch}, whose offset
   * entry is written, in {@code numPartitions} partitions, then writes the operators' metadata and
   * the batch's commit entry (with the new stores' checkpoint ids under format v2), with the steps
   * of Spark's {@code runner}.
   */
  static void rewriteAndCommit(
      SparkSession spark, Runner runner, long readBatch, long newBatch, int numPartitions) {
    Configuration hadoopConf = runner.hadoopConf();
    String location = runner.location();
    StateRewriter rewriter =
        new StateRewriter(
            spark,
            readBatch,
            newBatch,
            location,
            hadoopConf,
            Option.empty(),
            Option.empty(),
            Option.apply(runner.checkpoint()));
    Option<scala.collection.immutable.Map<Object, String[][]>> checkpointIds =
        rewrite(
            (org.apache.spark.sql.classic.SparkSession) spark,
            rewriter,
            location,
            hadoopConf,
            readBatch,
            newBatch,
            numPartitions);
    runner.step("updateNumPartitionsInOperatorMetadata", newBatch, readBatch);
    runner.step("commitBatch", newBatch, readBatch, checkpointIds);
  }

  /** The state store provider class pinned in {@code batch}'s offset entry, or null. */
  static String pinnedProvider(StreamingQueryCheckpointMetadata checkpoint, long batch) {
    Option<OffsetSeqBase> entry = checkpoint.offsetLog().get(batch);
    if (entry.isDefined() && entry.get().metadataOpt().isDefined()) {
      Option<String> provider =
          entry.get().metadataOpt().get().conf().get(SQLConf.STATE_STORE_PROVIDER_CLASS().key());
      return provider.isDefined() ? provider.get() : null;
    }
    return null;
  }

  /** {@code StateRewriter.runInternal}, with {@link #rewriteStore} for its {@code rewriteStore}. */
  private static Option<scala.collection.immutable.Map<Object, String[][]>> rewrite(
      org.apache.spark.sql.classic.SparkSession spark,
      StateRewriter rewriter,
      String location,
      Configuration hadoopConf,
      long readBatch,
      long writeBatch,
      int numPartitions) {
    call(rewriter, "verifyCheckpointFormatVersion");
    List<OperatorStateMetadata> operators =
        List.of(
            new StateMetadataPartitionReader(
                    location, new SerializableConfiguration(hadoopConf), readBatch)
                .allOperatorStateMetadata());
    if (operators.isEmpty()) {
      throw new IllegalArgumentException(
          "The checkpoint at "
              + location
              + " has no operator metadata at batch "
              + readBatch
              + ": a stateless query, or one that ran on a Spark without operator metadata");
    }
    Tuple2<StateStoreConf, SQLConf> confs = call(rewriter, "createConfsFromOffsetLog");
    Broadcast<SerializableConfiguration> hadoopConfBroadcast =
        SerializableConfiguration.broadcast(spark.sparkContext(), hadoopConf);

    Map<Object, StateStoreCheckpointInfo[][]> infos = new LinkedHashMap<>();
    for (OperatorStateMetadata operator : operators) {
      scala.collection.immutable.Map<String, scala.collection.immutable.List<Path>> schemaFiles =
          call(rewriter, "getStoreToSchemaFilesMap", operator);
      scala.collection.immutable.Map<String, TransformWithStateVariableInfo> stateVariables =
          call(rewriter, "getStateVariablesIfTWS", operator);
      List<StateStoreCheckpointInfo[]> perStore = new ArrayList<>();
      for (StateStoreMetadata store : CollectionConverters.asJava(operator.stateStoresMetadata())) {
        perStore.add(
            rewriteStore(
                spark,
                rewriter,
                location,
                readBatch,
                writeBatch,
                numPartitions,
                operator,
                store,
                confs._1(),
                hadoopConfBroadcast,
                schemaFiles.apply(store.storeName()),
                stateVariables));
      }
      infos.put(
          operator.operatorInfo().operatorId(),
          perStore.toArray(new StateStoreCheckpointInfo[0][]));
    }
    return call(
        rewriter,
        "extractCheckpointIdsPerPartition",
        scala.collection.immutable.Map$.MODULE$.from(CollectionConverters.asScala(infos)));
  }

  /** {@code StateRewriter.rewriteStore}, reading through {@link #readAllColumnFamilies}. */
  private static StateStoreCheckpointInfo[] rewriteStore(
      org.apache.spark.sql.classic.SparkSession spark,
      StateRewriter rewriter,
      String location,
      long readBatch,
      long writeBatch,
      int numPartitions,
      OperatorStateMetadata operator,
      StateStoreMetadata store,
      StateStoreConf storeConf,
      Broadcast<SerializableConfiguration> hadoopConf,
      scala.collection.immutable.List<Path> schemaFiles,
      scala.collection.immutable.Map<String, TransformWithStateVariableInfo> stateVariables) {
    long operatorId = operator.operatorInfo().operatorId();
    String storeName = store.storeName();
    Map<String, String> options = new LinkedHashMap<>();
    options.put(StateSourceOptions$.MODULE$.PATH(), location);
    options.put(StateSourceOptions$.MODULE$.BATCH_ID(), Long.toString(readBatch));
    options.put(StateSourceOptions$.MODULE$.OPERATOR_ID(), Long.toString(operatorId));
    options.put(StateSourceOptions$.MODULE$.STORE_NAME(), storeName);
    options.put(READ_ALL_COLUMN_FAMILIES, "true");
    Dataset<Row> state = readAllColumnFamilies(spark, options);
    Dataset<Row> repartitioned =
        state.repartition(numPartitions, org.apache.spark.sql.functions.col("partition_key"));

    Option<StateSchemaProvider> schemaProvider =
        call(
            rewriter,
            "createStoreSchemaProviderIfTWS",
            operator.operatorInfo().operatorName(),
            schemaFiles);
    scala.collection.immutable.Map<String, StatePartitionWriterColumnFamilyInfo> families =
        call(rewriter, "getWriterColFamilyInfoMap", operatorId, store, schemaFiles, stateVariables);

    List<StateStoreCheckpointInfo> written =
        repartitioned
            .queryExecution()
            .toRdd()
            .toJavaRDD()
            .mapPartitions(
                (java.util.Iterator<InternalRow> rows) -> {
                  StatePartitionAllColumnFamiliesWriter writer =
                      new StatePartitionAllColumnFamiliesWriter(
                          storeConf,
                          hadoopConf.value().value(),
                          TaskContext.get().partitionId(),
                          location,
                          operatorId,
                          storeName,
                          writeBatch,
                          families,
                          schemaProvider);
                  return List.of(writer.write(CollectionConverters.asScala(rows))).iterator();
                })
            .collect();
    return written.toArray(new StateStoreCheckpointInfo[0]);
  }

  /**
   * The state data source's table for the internal all-column-families read, built as {@code
   * StateDataSource.getTable} builds it, without its provider class name check.
   */
  static Dataset<Row> readAllColumnFamilies(
      org.apache.spark.sql.classic.SparkSession spark, Map<String, String> options) {
    CaseInsensitiveStringMap caseInsensitive = new CaseInsensitiveStringMap(options);
    StateDataSource source = new StateDataSource();
    StructType schema = source.inferSchema(caseInsensitive);
    Configuration hadoopConf = spark.sessionState().newHadoopConf();
    StateSourceOptions sourceOptions =
        StateSourceOptions$.MODULE$.modifySourceOptions(
            hadoopConf, StateSourceOptions$.MODULE$.apply(spark, hadoopConf, caseInsensitive));
    SQLConf batchConf =
        call(
            source,
            "buildSqlConfForBatch",
            sourceOptions.resolvedCpLocation(),
            sourceOptions.batchId());
    StateStoreReaderInfo info = call(source, "getStoreMetadataAndRunChecks", sourceOptions);
    KeyStateEncoderSpec keySpec =
        info.keyStateEncoderSpecOpt().isDefined()
            ? info.keyStateEncoderSpecOpt().get()
            : new NoPrefixKeyStateEncoderSpec(
                (StructType) SchemaUtil.getSchemaAsDataType(schema, "key"));
    int partitions =
        (Integer) batchConf.getConf(SQLConf.STATEFUL_SHUFFLE_PARTITIONS_INTERNAL()).get();
    StateTable table =
        new StateTable(
            spark,
            schema,
            sourceOptions,
            StateStoreConf.apply(batchConf),
            partitions,
            keySpec,
            info.transformWithStateVariableInfoOpt(),
            info.stateStoreColFamilySchemaOpt(),
            info.stateSchemaProviderOpt(),
            info.joinColFamilyOpt(),
            info.allColumnFamiliesReaderInfo(),
            info.joinStateFormatVersion());
    return org.apache.spark.sql.classic.Dataset$.MODULE$.ofRows(
        spark,
        DataSourceV2Relation$.MODULE$.create(
            table,
            Option.empty(),
            Option.empty(),
            caseInsensitive,
            DataSourceV2Relation$.MODULE$.create$default$5()));
  }

  /** Calls Spark's private method {@code name} of {@code target}, unwrapping what it throws. */
  @SuppressWarnings("unchecked")
  static <T> T call(Object target, String name, Object... args) {
    Method method = null;
    for (Method m : target.getClass().getDeclaredMethods()) {
      if (m.getName().equals(name) && m.getParameterCount() == args.length) {
        method = m;
        break;
      }
    }
    if (method == null) {
      throw new UnsupportedOperationException(
          "Spark "
              + org.apache.spark.package$.MODULE$.SPARK_VERSION()
              + " has no "
              + target.getClass().getName()
              + "."
              + name
              + " with "
              + args.length
              + " parameters: this repartitioning follows Spark 4.2's offline repartitioning"
              + " steps and cannot run on this Spark");
    }
    try {
      method.setAccessible(true);
      return (T) method.invoke(target, args);
    } catch (InvocationTargetException e) {
      Throwable cause = e.getCause();
      if (cause instanceof RuntimeException r) {
        throw r;
      }
      if (cause instanceof Error err) {
        throw err;
      }
      throw new IllegalStateException(cause);
    } catch (IllegalAccessException e) {
      throw new IllegalStateException("Cannot call Spark's " + name, e);
    }
  }
}
