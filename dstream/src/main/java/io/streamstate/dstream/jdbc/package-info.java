/**
 * Exactly-once output to a database over JDBC: results and the batch's identity (Kafka offset
 * ranges of the direct stream, or the batch id of {@code foreachBatch}) in one transaction. Entry
 * point: {@link io.streamstate.dstream.jdbc.ExactlyOnceJdbc}.
 */
package io.streamstate.dstream.jdbc;
