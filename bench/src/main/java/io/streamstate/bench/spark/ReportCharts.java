package io.streamstate.bench.spark;

import io.streamstate.bench.spark.Report.Row;
import java.awt.BasicStroke;
import java.awt.Color;
import java.awt.Font;
import java.awt.Graphics2D;
import java.awt.geom.Ellipse2D;
import java.awt.geom.Rectangle2D;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import org.jfree.chart.ChartUtils;
import org.jfree.chart.JFreeChart;
import org.jfree.chart.axis.LogAxis;
import org.jfree.chart.axis.NumberAxis;
import org.jfree.chart.axis.NumberTick;
import org.jfree.chart.axis.NumberTickUnit;
import org.jfree.chart.axis.ValueAxis;
import org.jfree.chart.plot.PlotOrientation;
import org.jfree.chart.plot.XYPlot;
import org.jfree.chart.renderer.xy.XYLineAndShapeRenderer;
import org.jfree.chart.title.LegendTitle;
import org.jfree.chart.ui.RectangleEdge;
import org.jfree.chart.ui.TextAnchor;
import org.jfree.data.xy.XYSeries;
import org.jfree.data.xy.XYSeriesCollection;

/**
 * The {@link Report}'s PNG charts, drawn by JFreeChart: a batch duration CDF per provider (log x,
 * labelled at 1, 2 and 5 times each power of ten) and a value per batch id over time. Every chart
 * has a title, axis labels with units and a legend; the reference provider is drawn thicker.
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

  private static final int W = 1000;
  private static final int H = 560;

  /** The colour of the {@code i}-th provider of a chart. */
  private static Color color(int i) {
    return COLORS[i % COLORS.length];
  }

  /** Batch duration CDF per provider, log x; {@code reference} drawn thicker. */
  static void cdf(Path file, String title, Map<String, double[]> durations, String reference)
      throws IOException {
    XYSeriesCollection data = new XYSeriesCollection();
    List<Integer> providerOfSeries = new ArrayList<>();
    List<Boolean> referenceSeries = new ArrayList<>();
    int p = 0;
    for (Map.Entry<String, double[]> e : durations.entrySet()) {
      double[] d = e.getValue();
      if (d.length > 0) {
        // A step per batch: at duration d[i] the fraction rises to (i + 1) / n.
        XYSeries series = new XYSeries(e.getKey() + " (n=" + d.length + ")", false, true);
        for (int i = 0; i < d.length; i++) {
          double ms = Math.max(1, d[i]);
          series.add(ms, (double) i / d.length);
          series.add(ms, (i + 1.0) / d.length);
        }
        data.addSeries(series);
        providerOfSeries.add(p);
        referenceSeries.add(e.getKey().equals(reference));
      }
      p++;
    }
    LogAxis x = new OneTwoFiveLogAxis("batch duration (ms, log scale)");
    NumberAxis y = new NumberAxis("fraction of batches taking at most x");
    y.setRange(0, 1.02);
    y.setTickUnit(new NumberTickUnit(0.1));
    save(
        file, chart("Batch duration CDF: " + title, data, x, y, providerOfSeries, referenceSeries));
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
    XYSeriesCollection data = new XYSeriesCollection();
    List<Integer> providerOfSeries = new ArrayList<>();
    List<Boolean> referenceSeries = new ArrayList<>();
    int p = 0;
    for (Map.Entry<String, List<Row>> e : byProvider.entrySet()) {
      Map<String, XYSeries> byRound = new TreeMap<>();
      for (Row r : e.getValue()) {
        if (r.s("phase").equals("steady") && !Double.isNaN(r.d(column))) {
          byRound
              .computeIfAbsent(r.s("round"), k -> new XYSeries(e.getKey() + " round " + k))
              .add(r.d("batchId"), r.d(column));
        }
      }
      boolean first = true;
      for (XYSeries series : byRound.values()) {
        if (first) {
          // The legend names the provider once; its other rounds share its colour.
          series.setKey(
              byRound.size() == 1
                  ? e.getKey()
                  : e.getKey() + " (" + byRound.size() + " rounds, one line each)");
        }
        data.addSeries(series);
        providerOfSeries.add(first ? p : -1 - p);
        referenceSeries.add(e.getKey().equals(reference));
        first = false;
      }
      p++;
    }
    NumberAxis x = new NumberAxis("batch id");
    x.setStandardTickUnits(NumberAxis.createIntegerTickUnits());
    NumberAxis y = new NumberAxis(yLabel);
    y.setAutoRangeIncludesZero(true);
    JFreeChart chart = chart(title, data, x, y, providerOfSeries, referenceSeries);
    XYLineAndShapeRenderer renderer = (XYLineAndShapeRenderer) chart.getXYPlot().getRenderer();
    renderer.setDefaultShapesVisible(true);
    save(file, chart);
  }

  /**
   * A chart of {@code data}; series {@code i} in the colour of provider {@code providerOfSeries[i]}
   * (negative, {@code -1 - provider}: the same colour, left out of the legend).
   */
  private static JFreeChart chart(
      String title,
      XYSeriesCollection data,
      ValueAxis x,
      ValueAxis y,
      List<Integer> providerOfSeries,
      List<Boolean> referenceSeries) {
    XYLineAndShapeRenderer renderer = new XYLineAndShapeRenderer(true, false);
    for (int i = 0; i < providerOfSeries.size(); i++) {
      int provider = providerOfSeries.get(i);
      boolean inLegend = provider >= 0;
      Color c = color(inLegend ? provider : -1 - provider);
      renderer.setSeriesPaint(i, c);
      renderer.setSeriesStroke(i, new BasicStroke(referenceSeries.get(i) ? 3f : 1.6f));
      renderer.setSeriesVisibleInLegend(i, inLegend);
      renderer.setSeriesShape(i, new Ellipse2D.Double(-2.5, -2.5, 5, 5));
    }
    Font labels = new Font(Font.SANS_SERIF, Font.PLAIN, 13);
    Font ticks = new Font(Font.SANS_SERIF, Font.PLAIN, 11);
    for (ValueAxis axis : List.of(x, y)) {
      axis.setLabelFont(labels);
      axis.setTickLabelFont(ticks);
    }
    XYPlot plot = new XYPlot(data, x, y, renderer);
    plot.setOrientation(PlotOrientation.VERTICAL);
    plot.setBackgroundPaint(Color.WHITE);
    plot.setDomainGridlinePaint(new Color(0xD0D0D0));
    plot.setRangeGridlinePaint(new Color(0xD0D0D0));
    JFreeChart chart = new JFreeChart(title, new Font(Font.SANS_SERIF, Font.BOLD, 15), plot, true);
    chart.setBackgroundPaint(Color.WHITE);
    LegendTitle legend = chart.getLegend();
    legend.setPosition(RectangleEdge.RIGHT);
    legend.setItemFont(new Font(Font.SANS_SERIF, Font.PLAIN, 12));
    return chart;
  }

  private static void save(Path file, JFreeChart chart) throws IOException {
    ChartUtils.saveChartAsPNG(file.toFile(), chart, W, H);
  }

  /**
   * A log axis labelled at 1, 2 and 5 times each power of ten (JFreeChart's labels one point per
   * power of ten, which leaves a range under one decade, as batch durations often are, with one
   * label or none).
   */
  private static final class OneTwoFiveLogAxis extends LogAxis {
    OneTwoFiveLogAxis(String label) {
      super(label);
      setSmallestValue(1);
    }

    @Override
    protected List<NumberTick> refreshTicksHorizontal(
        Graphics2D g2, Rectangle2D dataArea, RectangleEdge edge) {
      List<NumberTick> ticks = new ArrayList<>();
      for (double v : oneTwoFive(getLowerBound(), getUpperBound())) {
        ticks.add(
            new NumberTick(
                v,
                String.format(Locale.ROOT, "%,.0f", v),
                TextAnchor.TOP_CENTER,
                TextAnchor.CENTER,
                0.0));
      }
      return ticks;
    }
  }

  /** 1, 2 and 5 times the powers of ten (at least 1) within {@code [lo, hi]}, ascending. */
  static List<Double> oneTwoFive(double lo, double hi) {
    List<Double> values = new ArrayList<>();
    for (int e = Math.max(0, (int) Math.floor(Math.log10(lo)));
        e <= Math.ceil(Math.log10(hi));
        e++) {
      for (int m : new int[] {1, 2, 5}) {
        double v = m * Math.pow(10, e);
        if (v >= lo && v <= hi) {
          values.add(v);
        }
      }
    }
    return values;
  }

  private ReportCharts() {}
}
