/**
 * Load and recovery (docs/protocol.md, "Load and recovery", and a4 of "Durability modes"): a
 * store's durable files by version, and the walk of a version's lineage back to a base ({@link
 * LineageLoader}).
 *
 * <p>Internal: public only for the engine's other packages; no API promise to users.
 */
package io.streamstate.core.engine.recovery;
