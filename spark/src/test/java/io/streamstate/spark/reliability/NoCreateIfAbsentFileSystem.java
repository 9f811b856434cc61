package io.streamstate.spark.reliability;

import io.streamstate.hadoop.ExclusiveCreateLocalFileSystem;

/**
 * {@code nocreatefs:///abs/path}: the local disk behind a Hadoop file system that does not declare
 * create-if-absent, as an unknown store would. Register with {@code
 * spark.hadoop.fs.nocreatefs.impl}.
 */
public class NoCreateIfAbsentFileSystem extends ExclusiveCreateLocalFileSystem {
  public static final String SCHEME = "nocreatefs";

  public NoCreateIfAbsentFileSystem() {
    declaresExclusiveCreate = false;
  }
}
