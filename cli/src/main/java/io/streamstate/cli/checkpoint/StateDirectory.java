package io.streamstate.cli.checkpoint;

import io.streamstate.core.engine.StoreLayout;
import io.streamstate.core.engine.segment.SegmentCatalog;
import io.streamstate.core.storage.FileInfo;
import io.streamstate.core.storage.Storage;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/**
 * What a checkpoint's {@code state/} directory holds, from one listing, by name: the operators
 * ({@code state/<op>/}), their metadata ({@code _metadata/}) and schema files ({@code
 * _stateSchema/}, {@code <part>/_metadata/schema}), their stores ({@code <op>/<part>/[<store
 * name>/]}) and who wrote each store (our provider's {@code changelog/ snapshot/ sst/}; Spark's
 * HDFS-backed provider's {@code N.delta N.snapshot}; Spark's RocksDB provider's {@code N.changelog
 * N.zip SSTs/}), and our group commits' {@code _segments/} shared by the stores.
 */
public final class StateDirectory {
  /** Who wrote a store's files, as its names tell. */
  public enum Provider {
    STREAMSTATE("streamstate"),
    HDFS_BACKED("hdfs"),
    ROCKSDB("rocksdb"),
    /** Nothing but metadata, or names no provider we know writes. */
    UNKNOWN("unknown");

    private final String label;

    Provider(String label) {
      this.label = label;
    }

    /** How the command's output names it. */
    public String label() {
      return label;
    }
  }

  /**
   * One store: operator, partition and store name ({@code null}: Spark's default store, which has
   * no directory of its own).
   */
  public record StoreKey(long operator, int partition, String storeName)
      implements Comparable<StoreKey> {
    /** The store's prefix in {@code state/}, as our provider lays it out. */
    public String prefix() {
      return operator + "/" + partition + "/" + (storeName == null ? "" : storeName + "/");
    }

    /** {@code default} for Spark's default store. */
    public String storeNameOrDefault() {
      return storeName == null ? "default" : storeName;
    }

    /** How messages name the store: {@code state/<op>/<part>[/<name>]}. */
    public String display() {
      return "state/" + operator + "/" + partition + (storeName == null ? "" : "/" + storeName);
    }

    @Override
    public int compareTo(StoreKey o) {
      int c = Long.compare(operator, o.operator);
      if (c == 0) {
        c = Integer.compare(partition, o.partition);
      }
      if (c == 0) {
        c = storeNameOrDefault().compareTo(o.storeNameOrDefault());
      }
      return c;
    }
  }

  /** One store's files (names relative to {@code state/}) and who wrote them. */
  public record StoreDir(StoreKey key, Provider provider, List<FileInfo> files) {}

  /** One operator: its metadata and schema files, and its stores. */
  public record OperatorDir(
      long id, List<FileInfo> metadata, List<FileInfo> schemas, Map<StoreKey, StoreDir> stores) {
    /** The partitions that have a store directory. */
    public Set<Integer> partitions() {
      Set<Integer> p = new java.util.TreeSet<>();
      stores.keySet().forEach(k -> p.add(k.partition()));
      return p;
    }

    /** The store names, {@code default} for Spark's default store. */
    public Set<String> storeNames() {
      Set<String> n = new java.util.TreeSet<>();
      stores.keySet().forEach(k -> n.add(k.storeNameOrDefault()));
      return n;
    }
  }

  private static final Set<String> OUR_DIRS =
      Set.of(
          StoreLayout.CHANGELOG_DIR.replace("/", ""),
          StoreLayout.SNAPSHOT_DIR.replace("/", ""),
          StoreLayout.SST_DIR.replace("/", ""));

  private final Storage storage;
  private final Map<Long, OperatorDir> operators;
  private final List<FileInfo> segmentFiles;
  private final List<FileInfo> other;

  private StateDirectory(
      Storage storage,
      Map<Long, OperatorDir> operators,
      List<FileInfo> segmentFiles,
      List<FileInfo> other) {
    this.storage = storage;
    this.operators = operators;
    this.segmentFiles = segmentFiles;
    this.other = other;
  }

  /** Lists {@code state/} (one recursive listing) and sorts what it holds. */
  static StateDirectory list(Storage stateStorage) {
    Map<Long, List<FileInfo>> metadata = new TreeMap<>();
    Map<Long, List<FileInfo>> schemas = new TreeMap<>();
    Map<StoreKey, List<FileInfo>> stores = new TreeMap<>();
    List<FileInfo> segments = new ArrayList<>();
    List<FileInfo> other = new ArrayList<>();
    for (FileInfo f : stateStorage.list("")) {
      String[] parts = f.name().split("/");
      if (f.name().startsWith(SegmentCatalog.SEGMENT_DIR)) {
        segments.add(f);
        continue;
      }
      if (parts.length < 3 || !isNumber(parts[0])) {
        other.add(f);
        continue;
      }
      long op = Long.parseLong(parts[0]);
      metadata.computeIfAbsent(op, o -> new ArrayList<>());
      schemas.computeIfAbsent(op, o -> new ArrayList<>());
      if (parts[1].equals("_metadata")) {
        metadata.get(op).add(f);
        continue;
      }
      if (parts[1].equals("_stateSchema")) {
        schemas.get(op).add(f);
        continue;
      }
      if (!isNumber(parts[1]) || parts[1].length() > 9) {
        other.add(f);
        continue;
      }
      int partition = Integer.parseInt(parts[1]);
      if (parts[2].startsWith("_")) {
        // <part>/_metadata/schema: the key and value schema (v1, v2); other Spark metadata.
        schemas.get(op).add(f);
        continue;
      }
      String storeName = null;
      if (parts.length >= 4 && isStoreNameDir(parts[2])) {
        storeName = parts[2];
      }
      stores.computeIfAbsent(new StoreKey(op, partition, storeName), k -> new ArrayList<>()).add(f);
    }
    Map<Long, OperatorDir> operators = new TreeMap<>();
    for (long op : metadata.keySet()) {
      Map<StoreKey, StoreDir> opStores = new TreeMap<>();
      stores.forEach(
          (k, files) -> {
            if (k.operator() == op) {
              opStores.put(k, new StoreDir(k, providerOf(k, files), files));
            }
          });
      operators.put(op, new OperatorDir(op, metadata.get(op), schemas.get(op), opStores));
    }
    return new StateDirectory(stateStorage, operators, segments, other);
  }

  /**
   * Whether a directory under a partition is a named store rather than a directory of a store
   * (ours: changelog/ snapshot/ sst/; Spark's RocksDB provider: SSTs/; Spark's metadata).
   */
  private static boolean isStoreNameDir(String dir) {
    return !OUR_DIRS.contains(dir) && !dir.equals("SSTs") && !dir.startsWith("_");
  }

  private static Provider providerOf(StoreKey key, List<FileInfo> files) {
    boolean ours = false;
    boolean hdfs = false;
    boolean rocksdb = false;
    for (FileInfo f : files) {
      String rest = f.name().substring(key.prefix().length());
      String first = rest.contains("/") ? rest.substring(0, rest.indexOf('/')) : null;
      if (first != null && OUR_DIRS.contains(first)) {
        ours = true;
      } else if ("SSTs".equals(first)) {
        rocksdb = true;
      } else if (first == null) {
        SparkStoreFiles.Kind kind = SparkStoreFiles.kindOf(rest);
        if (kind == SparkStoreFiles.Kind.DELTA || kind == SparkStoreFiles.Kind.SNAPSHOT) {
          hdfs = true;
        } else if (kind == SparkStoreFiles.Kind.CHANGELOG || kind == SparkStoreFiles.Kind.ZIP) {
          rocksdb = true;
        }
      }
    }
    if (ours) {
      return Provider.STREAMSTATE;
    }
    if (rocksdb) {
      return Provider.ROCKSDB;
    }
    return hdfs ? Provider.HDFS_BACKED : Provider.UNKNOWN;
  }

  private static boolean isNumber(String s) {
    return !s.isEmpty() && s.length() <= 18 && s.chars().allMatch(Character::isDigit);
  }

  /** The storage rooted at {@code state/}. */
  public Storage storage() {
    return storage;
  }

  /** The operators by id. */
  public Map<Long, OperatorDir> operators() {
    return operators;
  }

  /** Every store, by key. */
  public Map<StoreKey, StoreDir> stores() {
    Map<StoreKey, StoreDir> all = new TreeMap<>();
    operators.values().forEach(o -> all.putAll(o.stores()));
    return all;
  }

  /** The files under {@code _segments/}: our group commits' segments and segment journals. */
  public List<FileInfo> segmentFiles() {
    return segmentFiles;
  }

  /** Files under {@code state/} that are none of the above. */
  public List<FileInfo> other() {
    return other;
  }
}
