package io.streamstate.cli.report;

import java.util.ArrayList;
import java.util.List;

/** Batch ids as the commands print them. */
public final class BatchRanges {
  private BatchRanges() {}

  /** {@code 0-3}, or {@code 0-3, 5} for ascending ids with gaps. */
  public static String of(List<Long> ids) {
    List<String> parts = new ArrayList<>();
    int i = 0;
    while (i < ids.size()) {
      int j = i;
      while (j + 1 < ids.size() && ids.get(j + 1) == ids.get(j) + 1) {
        j++;
      }
      parts.add(i == j ? String.valueOf(ids.get(i)) : ids.get(i) + "-" + ids.get(j));
      i = j + 1;
    }
    return String.join(", ", parts);
  }
}
