package io.streamstate.dstream.jdbc;

import java.io.Serializable;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.util.Properties;

/**
 * Opens a new JDBC connection to the database that holds the results and the offsets.
 *
 * <p>Serializable, because the per-partition pattern ({@link DirectStreamOffsets#writePartition})
 * calls it in Spark tasks on executors: capture only serializable values (a URL, a user name, a
 * password from the application's configuration), never an open connection or a pool. Each call
 * must return a connection the caller owns and closes.
 */
@FunctionalInterface
public interface JdbcConnectionFactory extends Serializable {

  /** Opens a new connection; the caller closes it. */
  Connection open() throws SQLException;

  /**
   * A factory over {@link DriverManager#getConnection(String, Properties)}.
   *
   * @param url the JDBC URL, e.g. {@code jdbc:postgresql://db:5432/app}
   * @param properties connection properties ({@code user}, {@code password}, ...); copied
   */
  static JdbcConnectionFactory fromUrl(String url, Properties properties) {
    Properties copy = new Properties();
    copy.putAll(properties);
    return () -> DriverManager.getConnection(url, copy);
  }

  /** A factory over {@link DriverManager#getConnection(String)}. */
  static JdbcConnectionFactory fromUrl(String url) {
    return () -> DriverManager.getConnection(url);
  }
}
