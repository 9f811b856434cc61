package io.streamstate.core.hedge;

import java.time.Duration;

/**
 * The outcome of a successful {@link HedgedWriter#publish}: which copy is the durable file.
 *
 * @param name the name that won: the primary or the alternate name, as the caller gave them. This
 *     is the file to reference; the other name is cleaned up or left for retention
 * @param hedgeFired whether an alternate copy was started (past the deadline or after a failure)
 * @param hedgeWon whether the alternate copy won ({@code name} is the alternate name)
 * @param latency from the start of the publish until the winning create returned
 */
public record HedgedPublish(String name, boolean hedgeFired, boolean hedgeWon, Duration latency) {}
