package io.streamstate.core.journal;

import static org.assertj.core.api.Assertions.assertThat;

import io.streamstate.core.storage.Storage;
import io.streamstate.core.storage.SupportsLateWriteReports;
import java.lang.reflect.Proxy;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class JournalAppendCopyTest {
  /** What happened, in order: late reports to the storage and retirements of journals. */
  private final List<String> events = new ArrayList<>();

  private Storage storage(boolean takesReports) {
    Class<?>[] types =
        takesReports
            ? new Class<?>[] {Storage.class, SupportsLateWriteReports.class}
            : new Class<?>[] {Storage.class};
    return (Storage)
        Proxy.newProxyInstance(
            getClass().getClassLoader(),
            types,
            (proxy, method, args) -> {
              if (method.getName().equals("reportLateWrite")) {
                events.add("report " + args[0]);
                return null;
              }
              throw new UnsupportedOperationException(method.getName());
            });
  }

  private static JournalFile journal(Storage storage, String name) {
    return new JournalFile(
        new FakeAppendableFile(name), 0, JournalFile.NO_CLOSE_BY, storage, Runnable::run);
  }

  private final class Copy extends JournalAppendCopy {
    final JournalFile journal;

    Copy(JournalFile journal) {
      this.journal = journal;
    }

    @Override
    protected void hedgeStarting() {
      events.add("starting");
    }

    @Override
    protected JournalFile journal() {
      return journal;
    }

    @Override
    protected void retire(JournalFile late) {
      events.add("retire " + late.name());
      super.retire(late);
    }

    @Override
    protected void hedgeStartedWithoutJournal() {
      events.add("no journal");
    }

    @Override
    public String write(byte[] content) {
      return journal.name() + "@0";
    }

    @Override
    public String describe() {
      return "test";
    }
  }

  @Test
  void aLateAppendIsReportedBeforeItsJournalIsRetired() {
    JournalFile late = journal(storage(true), "j-1");
    new Copy(late).hedgeStarted();
    assertThat(events).containsExactly("starting", "report j-1", "retire j-1");
    assertThat(late.isRetired()).isTrue();
  }

  @Test
  void aStorageThatTakesNoReportsOnlyRetires() {
    new Copy(journal(storage(false), "j-1")).hedgeStarted();
    assertThat(events).containsExactly("starting", "retire j-1");
  }

  @Test
  void withoutAJournalNothingIsReportedOrRetired() {
    new Copy(null).hedgeStarted();
    assertThat(events).containsExactly("starting", "no journal");
  }

  @Test
  void anAppendIsNeverDiscarded() {
    assertThat(new Copy(journal(storage(true), "j-1")).discard("j-1@0")).isFalse();
    assertThat(events).isEmpty();
  }
}
