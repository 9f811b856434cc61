package io.streamstate.core.engine;

import java.util.Iterator;

/**
 * An iterator holding native resources. Close it when done; a transaction also closes every
 * iterator it opened when it commits or aborts.
 */
public interface CloseableIterator<T> extends Iterator<T>, AutoCloseable {
  @Override
  void close();
}
