/**
 * What the engine's journals share (docs/protocol.md, "Segment journal", "Spark log journal",
 * "Hedged writes"): files one writer keeps open and appends records to, instead of creating a file
 * per write. {@link io.streamstate.core.journal.JournalFile} is one open journal and its lifecycle
 * (reserve, append, retire, close once idle), {@link io.streamstate.core.journal.RollRule} when a
 * journal is full or due, and {@link io.streamstate.core.journal.JournalAppendCopy} an append as a
 * hedged write's primary copy (a late append is reported, then its journal retired, never
 * discarded).
 *
 * <p>The writers are apart, and so is everything a journal's name or records mean: the segment
 * journal ({@code engine.segment}: many concurrent appenders, a standby created in the background,
 * swept by time) and the Spark log journal (spark module: one writer per log, epochs, take-over by
 * {@code SupportsAppend.fence}); formats in {@code core.format}.
 */
package io.streamstate.core.journal;
