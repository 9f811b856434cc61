package io.streamstate.testkit.engine;

import static io.streamstate.testkit.engine.EngineFixture.assertState;
import static io.streamstate.testkit.engine.EngineFixture.writeVersion;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.streamstate.core.engine.StateTransaction;
import io.streamstate.core.engine.StoreOptions;
import io.streamstate.core.engine.VersionedStore;
import io.streamstate.core.engine.local.RocksDbMemoryBudget;
import io.streamstate.core.error.CorruptFileException;
import io.streamstate.core.error.MissingFileException;
import io.streamstate.core.error.OutcomeUnknownException;
import io.streamstate.core.error.StreamStateException;
import io.streamstate.core.storage.ContentWriter;
import io.streamstate.core.storage.FileInfo;
import io.streamstate.core.storage.Storage;
import io.streamstate.testkit.FaultInjectingStorage;
import io.streamstate.testkit.FaultInjectingStorage.FaultKind;
import io.streamstate.testkit.InMemoryStorage;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A crash injected before and after every storage call of a commit and of maintenance (snapshot and
 * retention), then recovery on a new instance: the state equals the reference at the last committed
 * version, and later commits and snapshots still work over whatever the crash left.
 */
class CrashRecoveryTest {
  private static final StoreOptions OPTIONS =
      StoreOptions.defaults()
          .withSnapshotInterval(3)
          .withMinVersionsToRetain(4)
          .withTornFileGraceMillis(0)
          .withInlineSstMaxBytes(0); // crashes between SST uploads need SST files

  @TempDir Path tmp;
  private static final RocksDbMemoryBudget budget = EngineFixture.BUDGET;
  private int instances;

  private VersionedStore open(Storage storage) {
    return VersionedStore.builder("op=0/part=0", storage)
        .prefix("state/0/0/")
        .localDir(tmp.resolve("local" + (++instances)))
        .options(OPTIONS)
        .memoryBudget(budget)
        .open();
  }

  /** Commits versions 1..n with a snapshot every 3 versions, on a store over {@code storage}. */
  private VersionedStore commitVersions(FaultInjectingStorage storage, int n) {
    VersionedStore store = open(storage);
    for (long v = 1; v <= n; v++) {
      try (StateTransaction tx = store.begin(v - 1)) {
        writeVersion(tx, v);
        tx.commit();
      }
      store.maintain();
    }
    return store;
  }

  private void assertRecovers(InMemoryStorage durable, long expectedVersion) {
    try (VersionedStore store = open(durable)) {
      try (StateTransaction tx = store.begin(expectedVersion)) {
        assertState(tx, expectedVersion);
      }
      // Life goes on over whatever the crash left: commit, snapshot, retain, recover again.
      for (long v = expectedVersion + 1; v <= expectedVersion + 4; v++) {
        try (StateTransaction tx = store.begin(v - 1)) {
          writeVersion(tx, v);
          tx.commit();
        }
        store.maintain();
      }
    }
    try (VersionedStore store = open(durable);
        StateTransaction tx = store.begin(expectedVersion + 4)) {
      assertState(tx, expectedVersion + 4);
    }
  }

  @Test
  void crashBeforeChangelogPublishLosesOnlyThatVersion() {
    InMemoryStorage durable = new InMemoryStorage();
    FaultInjectingStorage storage = FaultInjectingStorage.builder(durable, 1).build();
    VersionedStore store = commitVersions(storage, 5);
    StateTransaction tx = store.begin(5);
    writeVersion(tx, 6);
    storage.failBefore(storage.callCount());
    assertThatThrownBy(tx::commit)
        .isInstanceOf(StreamStateException.class)
        .hasMessageContaining("injected");
    store.close(); // the crash
    try (VersionedStore fresh = open(durable)) {
      assertThatThrownBy(() -> fresh.begin(6))
          .isInstanceOf(MissingFileException.class)
          .hasMessageContaining("no valid changelog of version 6")
          .hasMessageContaining("the newest version of this store there is 5");
    }
    assertRecovers(durable, 5);
  }

  @Test
  void crashAfterChangelogPublishKeepsThatVersion() {
    InMemoryStorage durable = new InMemoryStorage();
    FaultInjectingStorage storage = FaultInjectingStorage.builder(durable, 2).build();
    VersionedStore store = commitVersions(storage, 5);
    StateTransaction tx = store.begin(5);
    writeVersion(tx, 6);
    storage.failAfter(storage.callCount());
    assertThatThrownBy(tx::commit)
        .isInstanceOf(StreamStateException.class)
        .hasMessageContaining("injected");
    store.close();
    assertRecovers(durable, 6);
  }

  @Test
  void crashMidChangelogWriteLeavesATornFileThatIsNeverReadAsData() {
    InMemoryStorage durable = new InMemoryStorage();
    FaultInjectingStorage storage = FaultInjectingStorage.builder(durable, 3).build();
    VersionedStore store = commitVersions(storage, 5);
    String changelogDir = store.layout().changelogDir();
    store.close();
    // What a writer that died mid-write leaves on a store that shows partial files.
    try (VersionedStore writer = open(durable);
        StateTransaction tx = writer.begin(5)) {
      writeVersion(tx, 6);
      tx.commit();
    }
    String name =
        durable.list(changelogDir).stream()
            .map(FileInfo::name)
            .filter(n -> n.contains("/00000000000000000006-"))
            .findFirst()
            .orElseThrow();
    byte[] full = durable.bytes(name);
    durable.delete(name);
    durable.create(name, ContentWriter.ofBytes(Arrays.copyOf(full, full.length / 2)));
    try (VersionedStore fresh = open(durable)) {
      assertThatThrownBy(() -> fresh.begin(6))
          .isInstanceOf(CorruptFileException.class)
          .hasMessageContaining(name);
    }
    // The version is redone by the next attempt under its own name; the torn file is ignored.
    assertRecovers(durable, 5);
  }

  @Test
  void crashBeforeOrAfterEveryStorageCallOfMaintenance() {
    int crashPoints = 0;
    List<String> kinds = new java.util.ArrayList<>();
    for (String mode : new String[] {"before", "after", "torn"}) {
      for (int call = 0; ; call++) {
        InMemoryStorage durable = new InMemoryStorage();
        TearingStorage tearing = new TearingStorage(durable);
        FaultInjectingStorage storage = FaultInjectingStorage.builder(tearing, call).build();
        // Versions 1..9 with maintenance after each; only the maintenance after 9 (a snapshot,
        // then retention) is faulted.
        VersionedStore store = open(storage);
        for (long v = 1; v <= 9; v++) {
          try (StateTransaction tx = store.begin(v - 1)) {
            writeVersion(tx, v);
            tx.commit();
          }
          if (v < 9) {
            store.maintain();
          }
        }
        long at = storage.callCount() + call;
        long faultsBefore = faults(storage) + tearing.torn;
        switch (mode) {
          case "before" -> storage.failBefore(at);
          case "after" -> storage.failAfter(at);
          default -> tearing.tearCall(call);
        }
        boolean failed = false;
        try {
          store.maintain();
        } catch (StreamStateException e) {
          failed = true;
          assertThat(e).hasMessageContaining("injected");
        }
        store.close(); // the crash
        if (!failed && faults(storage) + tearing.torn == faultsBefore) {
          break; // past the last storage call of maintenance
        }
        crashPoints++;
        kinds.add(mode + " " + lastCall(storage));
        assertRecovers(durable, 9);
      }
    }
    System.out.println("maintenance crash points: " + crashPoints + " " + kinds);
    // Maintenance of version 9 makes several calls (SST and manifest creates, lists, deletes).
    assertThat(kinds).anyMatch(k -> k.startsWith("before create of state/0/0/snapshot/"));
    assertThat(kinds).anyMatch(k -> k.startsWith("after create of state/0/0/sst/"));
    assertThat(kinds).anyMatch(k -> k.startsWith("before delete"));
    assertThat(kinds).anyMatch(k -> k.startsWith("torn create of state/0/0/snapshot/"));
  }

  private static String lastCall(FaultInjectingStorage storage) {
    List<FaultInjectingStorage.Call> calls = storage.calls();
    FaultInjectingStorage.Call last = calls.get(calls.size() - 1);
    return last.toString();
  }

  private static long faults(FaultInjectingStorage storage) {
    return storage.injectedFaults().get(FaultKind.ERROR_BEFORE)
        + storage.injectedFaults().get(FaultKind.ERROR_AFTER);
  }

  /**
   * Tears the create at a given call index (counted from {@link #tearCall}): publishes the first
   * half of its content, as a writer dying mid-write leaves it on local disk or HDFS, then fails.
   */
  private static final class TearingStorage implements Storage {
    private final Storage delegate;
    private long countdown = -1;
    long torn;

    TearingStorage(Storage delegate) {
      this.delegate = delegate;
    }

    void tearCall(long callsFromNow) {
      countdown = callsFromNow;
    }

    private boolean tearNow() {
      if (countdown < 0) {
        return false;
      }
      return countdown-- == 0;
    }

    @Override
    public void create(String name, ContentWriter content) {
      if (!tearNow()) {
        delegate.create(name, content);
        return;
      }
      ByteArrayOutputStream buffer = new ByteArrayOutputStream();
      try {
        content.writeTo(buffer);
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
      byte[] all = buffer.toByteArray();
      delegate.create(name, ContentWriter.ofBytes(Arrays.copyOf(all, all.length / 2)));
      torn++;
      throw new OutcomeUnknownException("injected torn write of " + name);
    }

    @Override
    public InputStream open(String name) {
      tearNow();
      return delegate.open(name);
    }

    @Override
    public boolean delete(String name) {
      tearNow();
      return delegate.delete(name);
    }

    @Override
    public List<FileInfo> list(String prefix) {
      tearNow();
      return delegate.list(prefix);
    }

    @Override
    public String describe() {
      return delegate.describe();
    }
  }
}
