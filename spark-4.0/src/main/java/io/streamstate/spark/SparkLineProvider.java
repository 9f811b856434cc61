package io.streamstate.spark;

/**
 * The members of Spark's {@code StateStoreProvider} that only some lines declare: none on Spark 4.0
 * (it has no instance metrics). The 4.1+ version is in the spark module's {@code since-4.1}
 * sources.
 */
abstract class SparkLineProvider {}
