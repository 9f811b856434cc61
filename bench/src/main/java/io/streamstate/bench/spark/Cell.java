package io.streamstate.bench.spark;

/**
 * One run of a query: {@code kind} is {@code matrix} (steady phase, then recovery), {@code
 * saturation} (steady phase only, large batches), {@code heap} (steady phase only, memory sampled)
 * or {@code warmup} (not recorded). {@link RoundPlan} says which cells a round has.
 */
record Cell(
    String id,
    String kind,
    Provider provider,
    Workload workload,
    long keys,
    String storage,
    long rowsPerBatch,
    int batches) {}
