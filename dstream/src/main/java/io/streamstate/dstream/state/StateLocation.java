package io.streamstate.dstream.state;

import io.streamstate.hadoop.HadoopStorages;
import java.io.Serializable;
import java.net.URI;
import java.util.Map;
import java.util.TreeMap;
import org.apache.hadoop.conf.Configuration;

/**
 * Where one incremental {@code mapWithState}'s state lives: a storage root, the state's name under
 * it, the Hadoop settings of the file system, and optionally a local directory for the executors'
 * RocksDB instances. Made from {@code StreamStateDStreams.Options}; travels with tasks.
 *
 * <p>Layout under the root (all names relative to it):
 *
 * <pre>
 * &lt;name&gt;/partitions/&lt;partition, 5 digits&gt;/...   one VersionedStore per partition (changelogs, snapshots)
 * &lt;name&gt;/batches/&lt;version, 20 digits&gt;.batch     one marker per completed batch (BatchMarkers)
 * </pre>
 *
 * @param root the storage root ({@code file:}, {@code hdfs:}, {@code s3a:})
 * @param name the state's name: letters, digits, {@code .}, {@code _}, {@code -}
 * @param hadoopConf Hadoop settings added to a default {@link Configuration}
 * @param localDir the executors' local directory, or null for {@code spark.local.dir} or {@code
 *     java.io.tmpdir}
 */
public record StateLocation(URI root, String name, Map<String, String> hadoopConf, String localDir)
    implements Serializable {

  public StateLocation {
    if (root == null || root.getScheme() == null) {
      throw new IllegalArgumentException(
          "The state's location must be an absolute URI with a scheme (file:, hdfs:, s3a:): "
              + root);
    }
    if (name == null || !name.matches("[A-Za-z0-9._-]+")) {
      throw new IllegalArgumentException(
          "The state's name must be letters, digits, '.', '_' or '-': " + name);
    }
    hadoopConf = new TreeMap<>(hadoopConf);
  }

  /** The prefix of partition {@code partition}'s store. */
  public String partitionPrefix(int partition) {
    return name + "/partitions/" + String.format("%05d", partition) + "/";
  }

  /** The prefix of the batch markers. */
  public String batchesPrefix() {
    return name + "/batches/";
  }

  /** What messages call this state. */
  public String describe() {
    return name + " at " + root;
  }

  /** The Hadoop configuration of the storage. */
  public Configuration configuration() {
    Configuration conf = new Configuration();
    hadoopConf.forEach(conf::set);
    return conf;
  }

  /** Opens the storage (the caller closes it). */
  io.streamstate.core.storage.Storage openStorage() {
    return HadoopStorages.open(root, configuration());
  }
}
