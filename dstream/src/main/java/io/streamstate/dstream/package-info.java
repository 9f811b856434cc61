/**
 * Spark Streaming (DStreams) on streamstate's storage: the write-ahead log ({@code wal}),
 * incremental state for {@code mapWithState} ({@link io.streamstate.dstream.StreamStateDStreams}),
 * and exactly-once output to a database with the Kafka offsets in the same transaction.
 */
package io.streamstate.dstream;
