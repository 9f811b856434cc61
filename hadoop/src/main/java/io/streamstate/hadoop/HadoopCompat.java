package io.streamstate.hadoop;

import io.streamstate.core.error.RetryableException;
import java.io.IOException;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.util.List;
import java.util.Map;
import org.apache.hadoop.fs.BulkDelete;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;

/**
 * Hadoop APIs newer than the oldest Hadoop a supported Spark line ships (3.3.4, with Spark 3.5),
 * used only where the running Hadoop has them: bulk delete (3.4.1) and lease recovery through
 * {@code LeaseRecoverable} (3.4.0; before it, {@code DistributedFileSystem.recoverLease}). The
 * module compiles against Spark 4.2's Hadoop; no class of it names these types outside this one,
 * whose nested class is loaded only after the probe found the API.
 */
final class HadoopCompat {
  /** Whether {@code FileSystem.createBulkDelete} exists (Hadoop 3.4.1+). */
  static final boolean BULK_DELETE = hasMethod(FileSystem.class, "createBulkDelete", Path.class);

  private HadoopCompat() {}

  /** Recovers a file's lease: true once the file is closed. */
  interface LeaseRecoverer {
    boolean recoverLease(Path path) throws IOException;
  }

  /**
   * How {@code fs} recovers leases ({@code recoverLease(Path)}: HDFS in every Hadoop line, and file
   * systems that declare {@code LeaseRecoverable}), or null if it cannot.
   */
  static LeaseRecoverer leaseRecoverer(FileSystem fs) {
    Method method;
    try {
      method = fs.getClass().getMethod("recoverLease", Path.class);
    } catch (NoSuchMethodException e) {
      return null;
    }
    if (method.getReturnType() != boolean.class) {
      return null;
    }
    return path -> {
      try {
        return (Boolean) method.invoke(fs, path);
      } catch (InvocationTargetException e) {
        if (e.getCause() instanceof IOException io) {
          throw io;
        }
        if (e.getCause() instanceof RuntimeException r) {
          throw r;
        }
        throw new IOException(e.getCause());
      } catch (IllegalAccessException e) {
        throw new IOException("cannot call recoverLease on " + fs.getClass().getName(), e);
      }
    };
  }

  /**
   * Deletes {@code paths} under {@code root}: one bulk delete per page where the Hadoop has it,
   * else one {@code delete} per file.
   *
   * @throws RetryableException a file could not be deleted ({@code where} names the store)
   */
  static void deleteAll(FileSystem fs, Path root, List<Path> paths, String where) {
    try {
      if (BULK_DELETE) {
        Bulk.deleteAll(fs, root, paths, where);
      } else {
        for (Path path : paths) {
          fs.delete(path, false);
        }
      }
    } catch (IOException e) {
      throw new RetryableException("Cannot delete files under " + where + ": " + e, e);
    }
  }

  /** Loaded only on Hadoop 3.4.1+ ({@link #BULK_DELETE}). */
  private static final class Bulk {
    static void deleteAll(FileSystem fs, Path root, List<Path> paths, String where)
        throws IOException {
      // new Path(String) drops a trailing slash, which new Path(URI) keeps: Hadoop's bulk delete
      // then finds no path under "<root>/" (found by the storage contract: a root given as a
      // directory URI made every retention delete fail).
      try (BulkDelete bulk = fs.createBulkDelete(new Path(root.toString()))) {
        int pageSize = Math.max(1, bulk.pageSize());
        for (int from = 0; from < paths.size(); from += pageSize) {
          List<Map.Entry<Path, String>> failures =
              bulk.bulkDelete(paths.subList(from, Math.min(paths.size(), from + pageSize)));
          if (!failures.isEmpty()) {
            Map.Entry<Path, String> first = failures.get(0);
            throw new RetryableException(
                "Cannot delete "
                    + failures.size()
                    + " files under "
                    + where
                    + ", first "
                    + first.getKey()
                    + ": "
                    + first.getValue());
          }
        }
      }
    }
  }

  private static boolean hasMethod(Class<?> type, String name, Class<?>... parameters) {
    try {
      type.getMethod(name, parameters);
      return true;
    } catch (NoSuchMethodException e) {
      return false;
    }
  }
}
