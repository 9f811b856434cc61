package io.streamstate.core.engine;

/** One entry of a store: a key and its value, both owned by the caller. */
public record KeyValue(byte[] key, byte[] value) {}
