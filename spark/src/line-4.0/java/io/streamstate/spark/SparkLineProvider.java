package io.streamstate.spark;

/**
 * What the 4.x {@link StreamStateProvider} adds on Spark 4.0: nothing (4.0 has no instance
 * metrics). The 4.1+ version is in {@code src/line-4.1+}.
 */
abstract class SparkLineProvider extends StreamStateProviderBase {}
