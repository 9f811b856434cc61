package io.streamstate.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.concurrent.ExecutorService;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

class ProcessResourcesTest {
  static final class Registry implements AutoCloseable {
    final AtomicInteger closes = new AtomicInteger();

    Registry() {}

    Registry(AtomicInteger made) {
      made.incrementAndGet();
    }

    @Override
    public void close() {
      closes.incrementAndGet();
    }
  }

  @Test
  void aComponentIsMadeOncePerOwnerAndClosedWithIt() {
    AtomicInteger made = new AtomicInteger();
    Registry first;
    try (ProcessResources owner = new ProcessResources("test")) {
      first = owner.component(Registry.class, () -> new Registry(made));
      assertThat(owner.component(Registry.class, () -> new Registry(made))).isSameAs(first);
      assertThat(made).hasValue(1);
      try (ProcessResources other = new ProcessResources("test")) {
        assertThat(other.componentIfPresent(Registry.class)).isNull();
        assertThat(other.component(Registry.class, () -> new Registry(made))).isNotSameAs(first);
      }
    }
    assertThat(first.closes).hasValue(1);
  }

  @Test
  void poolsAreOnePerNameDaemonNamedAndStoppedOnClose() throws Exception {
    ProcessResources owner = new ProcessResources("test");
    ExecutorService pool = owner.cachedPool("work");
    assertThat(owner.cachedPool("work")).isSameAs(pool);
    Thread thread = pool.submit(Thread::currentThread).get();
    assertThat(thread.isDaemon()).isTrue();
    assertThat(thread.getName()).startsWith("test-work-");
    ThreadPoolExecutor bounded = owner.boundedPool("bounded", 2);
    assertThat(bounded.getMaximumPoolSize()).isEqualTo(2);
    owner.close();
    assertThat(pool.isShutdown()).isTrue();
    assertThat(bounded.isShutdown()).isTrue();
    assertThatThrownBy(() -> owner.cachedPool("work")).isInstanceOf(IllegalStateException.class);
  }

  @Test
  void aRestartGivesANewOwnerAndClosesTheOldOneOnlyIfAsked() {
    ProcessResources before = ProcessResources.shared();
    ProcessResources lives = ProcessResources.restartForTests(false);
    assertThat(lives).isNotSameAs(before).isSameAs(ProcessResources.shared());
    Registry r = lives.component(Registry.class, Registry::new);
    ProcessResources after = ProcessResources.restartForTests(true);
    assertThat(r.closes).hasValue(1);
    assertThat(after.componentIfPresent(Registry.class)).isNull();
  }
}
