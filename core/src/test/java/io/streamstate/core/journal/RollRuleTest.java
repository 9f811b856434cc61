package io.streamstate.core.journal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.streamstate.core.storage.Storage;
import java.lang.reflect.Proxy;
import org.junit.jupiter.api.Test;

class RollRuleTest {
  private static final long HEADER = 8;

  private static JournalFile journal() {
    Storage storage =
        (Storage)
            Proxy.newProxyInstance(
                RollRuleTest.class.getClassLoader(),
                new Class<?>[] {Storage.class},
                (proxy, method, args) -> {
                  throw new UnsupportedOperationException(method.getName());
                });
    return new JournalFile(
        new FakeAppendableFile("j"), HEADER, JournalFile.NO_CLOSE_BY, storage, Runnable::run);
  }

  @Test
  void aRecordCountRuleIsDueAtItsCount() {
    RollRule rule = RollRule.afterRecords(3);
    JournalFile j = journal();
    j.append(new byte[5], 2);
    assertThat(rule.isFullOrDue(j, 100, 0)).isFalse();
    j.append(new byte[5], 1);
    assertThat(rule.isFullOrDue(j, 0, 0)).isTrue();
  }

  @Test
  void aRecordThatWouldGrowTheJournalPastItsBytesIsRefused() {
    RollRule rule = RollRule.afterBytesOrMillis(100, RollRule.UNBOUNDED);
    JournalFile j = journal();
    j.reserve(50);
    assertThat(rule.isFullOrDue(j, 100 - HEADER - 50, 0)).as("exactly full").isFalse();
    assertThat(rule.isFullOrDue(j, 100 - HEADER - 50 + 1, 0)).isTrue();
  }

  @Test
  void aJournalWithoutRecordsTakesARecordLargerThanItsBytes() {
    RollRule rule = RollRule.afterBytesOrMillis(100, RollRule.UNBOUNDED);
    assertThat(rule.isFullOrDue(journal(), 1_000, 0)).as("goes alone").isFalse();
  }

  @Test
  void aJournalAgesFromWhenItBecameCurrent() {
    RollRule rule = RollRule.afterBytesOrMillis(RollRule.UNBOUNDED, 1_000);
    JournalFile j = journal();
    assertThat(rule.isFullOrDue(j, 1, 1_000_000)).as("never current: does not age").isFalse();
    j.becameCurrent(5_000);
    assertThat(rule.isFullOrDue(j, 1, 5_999)).isFalse();
    assertThat(rule.isFullOrDue(j, 1, 6_000)).isTrue();
  }

  @Test
  void suspicionIsOnlyARuleThatSaysSo() {
    RollRule rule = RollRule.afterBytesOrMillis(100, 1_000);
    assertThat(rule.whenSuspectedSlow()).isFalse();
    assertThat(rule.orWhenSuspectedSlow())
        .isEqualTo(new RollRule(RollRule.UNBOUNDED, 100, 1_000, true));
  }

  @Test
  void rejectsLimitsBelowOne() {
    assertThatThrownBy(() -> RollRule.afterRecords(0))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage(
            "maxRecords, maxBytes and maxCurrentMillis must be >= 1: 0, "
                + Long.MAX_VALUE
                + ", "
                + Long.MAX_VALUE);
  }
}
