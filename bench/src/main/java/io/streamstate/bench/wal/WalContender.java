package io.streamstate.bench.wal;

import io.streamstate.dstream.wal.StreamStateReceiverWriteAheadLog;
import io.streamstate.dstream.wal.WalSettings;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.spark.SparkConf;
import org.apache.spark.streaming.util.FileBasedWriteAheadLog;
import org.apache.spark.streaming.util.WriteAheadLog;

/** The two logs compared, each opened on a cell's directory as a receiver's log. */
enum WalContender {
  /** Ours: {@code StreamStateReceiverWriteAheadLog}, default settings (hedging on). */
  STREAMSTATE("streamstate") {
    @Override
    WriteAheadLog open(String dir, Map<String, String> hadoop, boolean objectStore) {
      SparkConf conf = new SparkConf(false).set(WalSettings.DIR, dir);
      hadoop.forEach((k, v) -> conf.set("spark.hadoop." + k, v));
      return new StreamStateReceiverWriteAheadLog(conf);
    }
  },
  /**
   * Spark's {@code FileBasedWriteAheadLog} as its receivers make it: rolling interval 60 s, 3
   * attempts per write; {@code closeFileAfterWrite} on object stores (as Spark requires there).
   */
  SPARK("spark-filebased") {
    @Override
    WriteAheadLog open(String dir, Map<String, String> hadoop, boolean objectStore) {
      Configuration conf = new Configuration();
      hadoop.forEach(conf::set);
      return new FileBasedWriteAheadLog(new SparkConf(false), dir, conf, 60, 3, objectStore);
    }
  };

  private final String label;

  WalContender(String label) {
    this.label = label;
  }

  String label() {
    return label;
  }

  abstract WriteAheadLog open(String dir, Map<String, String> hadoop, boolean objectStore);
}
