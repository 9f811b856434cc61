/**
 * A store's working state on local disk: the RocksDB instance ({@link LocalDb}, the one owner of
 * native handles: RocksDB types never leave this package), what it holds ({@link LocalInstance}),
 * and the process's memory budget for RocksDB ({@link RocksDbMemoryBudget}, the one public API
 * class here).
 *
 * <p>Otherwise internal: public only for the engine's other packages; no API promise to users.
 */
package io.streamstate.core.engine.local;
