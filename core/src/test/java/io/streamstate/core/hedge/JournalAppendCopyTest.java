package io.streamstate.core.hedge;

import static org.assertj.core.api.Assertions.assertThat;

import io.streamstate.core.storage.AppendableFile;
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

  private static AppendableFile file(String name) {
    return (AppendableFile)
        Proxy.newProxyInstance(
            JournalAppendCopyTest.class.getClassLoader(),
            new Class<?>[] {AppendableFile.class},
            (proxy, method, args) -> {
              if (method.getName().equals("name")) {
                return name;
              }
              throw new UnsupportedOperationException(method.getName());
            });
  }

  private final class Copy extends JournalAppendCopy<AppendableFile> {
    AppendableFile journal;

    Copy(Storage storage, AppendableFile journal) {
      super(storage);
      this.journal = journal;
    }

    @Override
    protected void hedgeStarting() {
      events.add("starting");
    }

    @Override
    protected AppendableFile journal() {
      return journal;
    }

    @Override
    protected AppendableFile fileOf(AppendableFile j) {
      return j;
    }

    @Override
    protected void retire(AppendableFile late) {
      events.add("retire " + late.name());
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
    new Copy(storage(true), file("j-1")).hedgeStarted();
    assertThat(events).containsExactly("starting", "report j-1", "retire j-1");
  }

  @Test
  void aStorageThatTakesNoReportsOnlyRetires() {
    new Copy(storage(false), file("j-1")).hedgeStarted();
    assertThat(events).containsExactly("starting", "retire j-1");
  }

  @Test
  void withoutAJournalNothingIsReportedOrRetired() {
    new Copy(storage(true), null).hedgeStarted();
    assertThat(events).containsExactly("starting", "no journal");
  }

  @Test
  void anAppendIsNeverDiscarded() {
    assertThat(new Copy(storage(true), file("j-1")).discard("j-1@0")).isFalse();
    assertThat(events).isEmpty();
  }
}
