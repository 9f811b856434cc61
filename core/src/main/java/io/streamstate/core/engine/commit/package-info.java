/**
 * How commits become durable (docs/protocol.md, "Commit", "Durability modes", "Group commit"): one
 * {@link CommitPublisher} per store, chosen when the store is built (a hedged changelog, a member
 * of a group commit's segment, or an async upload), each returning what it wrote for the store's
 * metrics.
 *
 * <p>Internal: public only for the engine's other packages; no API promise to users.
 */
package io.streamstate.core.engine.commit;
