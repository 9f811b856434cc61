/**
 * The machinery of {@link io.streamstate.dstream.StreamStateDStreams#mapWithState}: the driver's
 * plan of each batch ({@link io.streamstate.dstream.state.StateDriver}), the task that applies a
 * batch to one partition's store ({@link io.streamstate.dstream.state.PartitionUpdate}), the
 * executor's cache of open stores ({@link io.streamstate.dstream.state.PartitionStores}), the
 * markers of completed batches ({@link io.streamstate.dstream.state.BatchMarkers}) and the byte
 * layout of keys and states ({@link io.streamstate.dstream.state.StateCodec}).
 *
 * <p>Internal: public for {@code io.streamstate.dstream} only, except {@link
 * io.streamstate.dstream.state.BatchMarker}, which {@code lastCompletedBatch} returns.
 */
package io.streamstate.dstream.state;
