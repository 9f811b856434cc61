package io.streamstate.dstream.wal;

import io.streamstate.core.ProcessResources;
import io.streamstate.hadoop.HadoopStorages;
import java.util.HashMap;
import java.util.Map;

/**
 * The process's write-ahead logs, one per root and role, with the number of Spark instances using
 * each: the last instance's close closes it. A {@link ProcessResources} component.
 */
final class WalLogs {
  private final Map<String, WalLog> logs = new HashMap<>();
  private final Map<String, Integer> users = new HashMap<>();

  static WalLogs of(ProcessResources resources) {
    return resources.component(WalLogs.class, WalLogs::new);
  }

  synchronized WalLog acquire(WalSettings settings, String role, ProcessResources resources) {
    String key = role + " " + settings.root();
    WalLog log =
        logs.computeIfAbsent(
            key,
            k ->
                new WalLog(
                    HadoopStorages.open(settings.root(), settings.hadoopConf(), resources),
                    role,
                    settings,
                    resources));
    users.merge(key, 1, Integer::sum);
    return log;
  }

  synchronized void release(WalLog log) {
    for (Map.Entry<String, WalLog> e : logs.entrySet()) {
      if (e.getValue() == log) {
        String key = e.getKey();
        if (users.merge(key, -1, Integer::sum) <= 0) {
          users.remove(key);
          logs.remove(key);
          log.close();
        }
        return;
      }
    }
  }
}
