package io.streamstate.bench.spark;

import io.streamstate.bench.spark.Report.Row;
import java.awt.BasicStroke;
import java.awt.Color;
import java.awt.Font;
import java.awt.Graphics2D;
import java.awt.RenderingHints;
import java.awt.image.BufferedImage;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import javax.imageio.ImageIO;

/**
 * The {@link Report}'s PNG charts, in plain Java2D: a batch duration CDF per provider and a value
 * per batch id over time.
 */
final class ReportCharts {
  private static final Color[] COLORS = {
    new Color(0xD62728),
    new Color(0x1F77B4),
    new Color(0x2CA02C),
    new Color(0xFF7F0E),
    new Color(0x9467BD),
    new Color(0x8C564B),
    new Color(0x7F7F7F)
  };

  private static final int W = 900;
  private static final int H = 520;
  private static final int L = 80;
  private static final int R = 200;
  private static final int T = 40;
  private static final int B = 60;

  /** The colour of the {@code i}-th provider of a chart. */
  private static Color color(int i) {
    return COLORS[i % COLORS.length];
  }

  /** Batch duration CDF per provider, log x; {@code reference} drawn thicker. */
  static void cdf(Path file, String title, Map<String, double[]> durations, String reference)
      throws IOException {
    double max = 1;
    double min = Double.MAX_VALUE;
    for (double[] d : durations.values()) {
      for (double x : d) {
        max = Math.max(max, x);
        min = Math.min(min, Math.max(1, x));
      }
    }
    if (min == Double.MAX_VALUE) {
      min = 1;
    }
    double lo = Math.log10(Math.max(1, min * 0.8));
    double hi = Math.log10(max * 1.2);
    if (hi - lo < 0.5) {
      hi = lo + 0.5;
    }
    BufferedImage img = new BufferedImage(W, H, BufferedImage.TYPE_INT_RGB);
    Graphics2D g =
        frame(
            img,
            "Batch duration CDF: " + title,
            "batch duration (ms, log scale)",
            "fraction of batches");
    // axes ticks
    for (int e = (int) Math.floor(lo); e <= Math.ceil(hi); e++) {
      for (int m : new int[] {1, 2, 5}) {
        double v = m * Math.pow(10, e);
        double lv = Math.log10(v);
        if (lv < lo || lv > hi) {
          continue;
        }
        int x = L + (int) ((lv - lo) / (hi - lo) * (W - L - R));
        g.setColor(new Color(0xE0E0E0));
        g.drawLine(x, T, x, H - B);
        g.setColor(Color.DARK_GRAY);
        g.drawString(String.format(Locale.ROOT, "%.0f", v), x - 10, H - B + 18);
      }
    }
    for (int i = 0; i <= 4; i++) {
      int y = H - B - i * (H - T - B) / 4;
      g.setColor(new Color(0xE0E0E0));
      g.drawLine(L, y, W - R, y);
      g.setColor(Color.DARK_GRAY);
      g.drawString(String.format(Locale.ROOT, "%.2f", i / 4.0), L - 40, y + 4);
    }
    int s = 0;
    for (Map.Entry<String, double[]> e : durations.entrySet()) {
      Color c = color(s);
      double[] d = e.getValue();
      g.setColor(c);
      g.setStroke(new BasicStroke(e.getKey().equals(reference) ? 3f : 2f));
      int px = -1;
      int py = H - B;
      for (int i = 0; i < d.length; i++) {
        int x = L + (int) ((Math.log10(Math.max(1, d[i])) - lo) / (hi - lo) * (W - L - R));
        int y = H - B - (int) ((i + 1.0) / d.length * (H - T - B));
        if (px >= 0) {
          g.drawLine(px, py, x, py); // step
          g.drawLine(x, py, x, y);
        } else {
          g.drawLine(x, H - B, x, y);
        }
        px = x;
        py = y;
      }
      legend(g, s++, e.getKey() + " (n=" + d.length + ")", c);
    }
    g.dispose();
    ImageIO.write(img, "png", file.toFile());
  }

  /** {@code column} per batch id of the steady phase, a line per provider and round. */
  static void time(
      Path file,
      String title,
      Map<String, List<Row>> byProvider,
      String column,
      String yLabel,
      String reference)
      throws IOException {
    double maxY = 1;
    double maxX = 1;
    for (List<Row> rows : byProvider.values()) {
      for (Row r : rows) {
        if (r.s("phase").equals("steady") && !Double.isNaN(r.d(column))) {
          maxY = Math.max(maxY, r.d(column));
          maxX = Math.max(maxX, r.d("batchId"));
        }
      }
    }
    maxY *= 1.1;
    BufferedImage img = new BufferedImage(W, H, BufferedImage.TYPE_INT_RGB);
    Graphics2D g = frame(img, title, "batch id", yLabel);
    for (int i = 0; i <= 5; i++) {
      int y = H - B - i * (H - T - B) / 5;
      g.setColor(new Color(0xE0E0E0));
      g.drawLine(L, y, W - R, y);
      g.setColor(Color.DARK_GRAY);
      g.drawString(String.format(Locale.ROOT, "%.0f", maxY * i / 5), L - 50, y + 4);
    }
    for (int b = 0; b <= maxX; b += Math.max(1, (int) maxX / 10)) {
      int x = L + (int) (b / maxX * (W - L - R));
      g.drawString(Integer.toString(b), x - 4, H - B + 18);
    }
    int s = 0;
    for (Map.Entry<String, List<Row>> e : byProvider.entrySet()) {
      Color c = color(s);
      g.setColor(c);
      g.setStroke(new BasicStroke(e.getKey().equals(reference) ? 3f : 2f));
      Map<String, List<double[]>> byRound = new TreeMap<>();
      for (Row r : e.getValue()) {
        if (r.s("phase").equals("steady") && !Double.isNaN(r.d(column))) {
          byRound
              .computeIfAbsent(r.s("round"), k -> new ArrayList<>())
              .add(new double[] {r.d("batchId"), r.d(column)});
        }
      }
      for (List<double[]> pts : byRound.values()) {
        pts.sort((a, b) -> Double.compare(a[0], b[0]));
        int px = -1;
        int py = -1;
        for (double[] pt : pts) {
          int x = L + (int) (pt[0] / maxX * (W - L - R));
          int y = H - B - (int) (pt[1] / maxY * (H - T - B));
          g.fillOval(x - 3, y - 3, 6, 6);
          if (px >= 0) {
            g.drawLine(px, py, x, y);
          }
          px = x;
          py = y;
        }
      }
      legend(g, s++, e.getKey(), c);
    }
    g.dispose();
    ImageIO.write(img, "png", file.toFile());
  }

  private static Graphics2D frame(BufferedImage img, String title, String xLabel, String yLabel) {
    Graphics2D g = img.createGraphics();
    g.setRenderingHint(RenderingHints.KEY_ANTIALIASING, RenderingHints.VALUE_ANTIALIAS_ON);
    g.setRenderingHint(
        RenderingHints.KEY_TEXT_ANTIALIASING, RenderingHints.VALUE_TEXT_ANTIALIAS_ON);
    g.setColor(Color.WHITE);
    g.fillRect(0, 0, W, H);
    g.setColor(Color.BLACK);
    g.setFont(new Font(Font.SANS_SERIF, Font.BOLD, 15));
    g.drawString(title, L, 25);
    g.setFont(new Font(Font.SANS_SERIF, Font.PLAIN, 12));
    g.drawRect(L, T, W - L - R, H - T - B);
    g.drawString(xLabel, L + (W - L - R) / 2 - 60, H - 15);
    Graphics2D rot = (Graphics2D) g.create();
    rot.rotate(-Math.PI / 2);
    rot.drawString(yLabel, -(T + (H - T - B) / 2) - 50, 18);
    rot.dispose();
    return g;
  }

  private static void legend(Graphics2D g, int i, String label, Color c) {
    int x = W - R + 15;
    int y = T + 10 + i * 22;
    g.setColor(c);
    g.fillRect(x, y, 18, 10);
    g.setColor(Color.BLACK);
    g.drawString(label, x + 24, y + 10);
  }

  private ReportCharts() {}
}
