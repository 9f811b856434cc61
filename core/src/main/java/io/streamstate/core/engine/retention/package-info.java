/**
 * What may be deleted, and deleting it (docs/protocol.md, "Retention", g4 and j7): {@link
 * RetentionPlanner} decides, from listings, in one place; a store's own retention ({@link
 * StoreRetention}) and the sweep of a storage root's segments ({@link SegmentSweep}) list, read and
 * delete.
 *
 * <p>Internal: public only for the engine's other packages ({@code SegmentSweep.sweep} also for
 * tests); no API promise to users.
 */
package io.streamstate.core.engine.retention;
