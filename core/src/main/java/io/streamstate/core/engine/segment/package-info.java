/**
 * Group commit's segments (docs/protocol.md, "Group commit", "Segment journal"): who writes them
 * ({@link GroupCommitter}, appending to a segment journal where the storage can append), and where
 * they are and what they hold ({@link SegmentCatalog}: names, indexes, members). Which segments may
 * be deleted is retention's ({@code engine.retention.SegmentSweep}).
 *
 * <p>{@code GroupCommitter} and {@code SegmentJournalSettings} are API (a caller shares one
 * committer between the stores of a storage root); {@code SegmentCatalog} is internal, public for
 * the engine's other packages and for tests that inspect segments.
 */
package io.streamstate.core.engine.segment;
