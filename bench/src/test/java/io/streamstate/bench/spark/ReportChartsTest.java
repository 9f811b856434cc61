package io.streamstate.bench.spark;

import static org.assertj.core.api.Assertions.assertThat;

import java.awt.image.BufferedImage;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import javax.imageio.ImageIO;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ReportChartsTest {
  @TempDir Path dir;

  @Test
  void theLogAxisIsLabelledAtOneTwoAndFiveTimesEachPowerOfTen() {
    assertThat(ReportCharts.oneTwoFive(250, 24_000))
        .containsExactly(500.0, 1_000.0, 2_000.0, 5_000.0, 10_000.0, 20_000.0);
    // Durations within one decade still get more than one label.
    assertThat(ReportCharts.oneTwoFive(180, 900)).containsExactly(200.0, 500.0);
    assertThat(ReportCharts.oneTwoFive(0.5, 3)).containsExactly(1.0, 2.0);
  }

  @Test
  void aCdfChartIsAPngOfTheReportSize() throws Exception {
    Map<String, double[]> durations = new LinkedHashMap<>();
    durations.put("streamstate", new double[] {300, 320, 410, 2_000});
    durations.put("hdfs", new double[] {250, 260, 900});
    durations.put("rocksdb", new double[0]);
    Path png = dir.resolve("cdf.png");
    ReportCharts.cdf(png, "test", durations, "streamstate");
    BufferedImage image = ImageIO.read(png.toFile());
    assertThat(image).isNotNull();
    assertThat(image.getWidth()).isEqualTo(1000);
    assertThat(image.getHeight()).isEqualTo(560);
  }
}
