package io.streamstate.cli.report;

import java.util.ArrayList;
import java.util.List;

/** A text table: columns as wide as their widest cell, two spaces apart, no trailing spaces. */
public final class Table {
  private final List<String[]> rows = new ArrayList<>();

  /** Adds a row (the first one is the header when rendered with one). */
  public Table row(String... cells) {
    rows.add(cells);
    return this;
  }

  /** The table, one line per row; with {@code header}, the first row is followed by a rule. */
  public String render(boolean header) {
    int columns = 0;
    for (String[] r : rows) {
      columns = Math.max(columns, r.length);
    }
    int[] widths = new int[columns];
    for (String[] r : rows) {
      for (int i = 0; i < r.length; i++) {
        widths[i] = Math.max(widths[i], r[i].length());
      }
    }
    StringBuilder out = new StringBuilder();
    for (int n = 0; n < rows.size(); n++) {
      String[] r = rows.get(n);
      StringBuilder line = new StringBuilder();
      for (int i = 0; i < r.length; i++) {
        line.append(r[i]);
        if (i < r.length - 1) {
          line.append(" ".repeat(widths[i] - r[i].length() + 2));
        }
      }
      out.append(line.toString().stripTrailing()).append('\n');
      if (header && n == 0) {
        StringBuilder rule = new StringBuilder();
        for (int i = 0; i < columns; i++) {
          rule.append("-".repeat(widths[i]));
          if (i < columns - 1) {
            rule.append("  ");
          }
        }
        out.append(rule).append('\n');
      }
    }
    return out.toString();
  }
}
