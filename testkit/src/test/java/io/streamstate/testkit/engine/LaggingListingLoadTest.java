package io.streamstate.testkit.engine;

import static io.streamstate.testkit.engine.EngineFixture.bytes;
import static io.streamstate.testkit.engine.EngineFixture.contents;
import static org.assertj.core.api.Assertions.assertThat;

import io.streamstate.core.engine.StateTransaction;
import io.streamstate.core.engine.StoreLayout;
import io.streamstate.core.engine.StoreOptions;
import io.streamstate.core.engine.VersionedStore;
import io.streamstate.core.storage.ContentWriter;
import io.streamstate.core.storage.FileInfo;
import io.streamstate.core.storage.Storage;
import io.streamstate.testkit.InMemoryStorage;
import java.io.InputStream;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.function.Predicate;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A load on a store whose listings lag behind writes (S3-compatible stores other than AWS's): a
 * changelog the listing does not show yet but whose commit id is known (its child names it as
 * parent; Spark's commit log names it in format v2) is read by name, as GET sees it at once.
 */
class LaggingListingLoadTest {
  private static final String STORE = "op=0/part=0";
  @TempDir Path tmp;
  private final long[] clock = {1_000};
  private final InMemoryStorage storage = new InMemoryStorage(() -> clock[0]);
  private int instances;

  /** Lists as {@code delegate} does, except the names {@code unlisted} matches. */
  private static final class LaggingListing implements Storage {
    private final Storage delegate;
    private final Predicate<String> unlisted;

    LaggingListing(Storage delegate, Predicate<String> unlisted) {
      this.delegate = delegate;
      this.unlisted = unlisted;
    }

    @Override
    public void create(String name, ContentWriter content) {
      delegate.create(name, content);
    }

    @Override
    public InputStream open(String name) {
      return delegate.open(name);
    }

    @Override
    public boolean delete(String name) {
      return delegate.delete(name);
    }

    @Override
    public List<FileInfo> list(String prefix) {
      return delegate.list(prefix).stream().filter(f -> !unlisted.test(f.name())).toList();
    }

    @Override
    public String describe() {
      return "lagging " + delegate.describe();
    }
  }

  private VersionedStore open(Storage on) {
    return VersionedStore.builder(STORE, on)
        .localDir(tmp.resolve("l" + (++instances)))
        .options(StoreOptions.defaults())
        .memoryBudget(EngineFixture.BUDGET)
        .open();
  }

  private long commit(VersionedStore store, long version, String key, String value) {
    clock[0] += 1_000;
    try (StateTransaction tx = store.begin(version)) {
      tx.put("default", bytes(key), bytes(value));
      tx.commit();
      return tx.committedId();
    }
  }

  @Test
  void aParentChangelogMissingFromTheListingIsReadByName() {
    long first;
    try (VersionedStore writer = open(storage)) {
      first = commit(writer, 0, "a", "1");
      commit(writer, 1, "b", "2");
    }
    String v1 = new StoreLayout("").changelogsOf(1);
    assertThat(storage.list("")).extracting(FileInfo::name).anyMatch(n -> n.startsWith(v1));
    Storage lagging = new LaggingListing(storage, n -> n.startsWith(v1));

    // Version 2's changelog is listed and names version 1's commit as its parent.
    try (VersionedStore reader = open(lagging);
        StateTransaction tx = reader.begin(2)) {
      assertThat(contents(tx)).containsExactly(Map.entry("a", "1"), Map.entry("b", "2"));
    }
    // The commit Spark's commit log names (format v2), itself unlisted.
    try (VersionedStore reader = open(lagging);
        StateTransaction tx = reader.begin(1, OptionalLong.of(first))) {
      assertThat(contents(tx)).containsExactly(Map.entry("a", "1"));
    }
  }
}
