package io.streamstate.core.config;

import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * How a configuration value is read, the same for every key of every module, and as Spark reads its
 * own: strict booleans, sizes with Spark's byte suffixes and durations with Spark's time suffixes
 * ({@code org.apache.spark.network.util.JavaUtils.byteStringAsBytes} and {@code timeStringAsMs}). A
 * bare number keeps the key's own unit: bytes for a size, milliseconds for a duration. Values are
 * trimmed and case-insensitive; {@code _} between digits is accepted ("1_073_741_824"), as this
 * project always accepted it.
 *
 * <p>Every method throws {@link IllegalArgumentException} naming the key, the value and what was
 * expected.
 */
public final class ConfigValues {
  /** Spark's byte suffixes, binary multiples ({@code JavaUtils.byteSuffixes}). */
  private static final Map<String, Long> BYTE_SUFFIXES =
      Map.ofEntries(
          Map.entry("b", 1L),
          Map.entry("k", 1L << 10),
          Map.entry("kb", 1L << 10),
          Map.entry("m", 1L << 20),
          Map.entry("mb", 1L << 20),
          Map.entry("g", 1L << 30),
          Map.entry("gb", 1L << 30),
          Map.entry("t", 1L << 40),
          Map.entry("tb", 1L << 40),
          Map.entry("p", 1L << 50),
          Map.entry("pb", 1L << 50));

  /** Spark's time suffixes ({@code JavaUtils.timeSuffixes}). */
  private static final Map<String, TimeUnit> TIME_SUFFIXES =
      Map.of(
          "us", TimeUnit.MICROSECONDS,
          "ms", TimeUnit.MILLISECONDS,
          "s", TimeUnit.SECONDS,
          "m", TimeUnit.MINUTES,
          "min", TimeUnit.MINUTES,
          "h", TimeUnit.HOURS,
          "d", TimeUnit.DAYS);

  private static final Pattern NUMBER_AND_SUFFIX = Pattern.compile("(-?[0-9]+)([a-z]+)?");

  /** What a size accepts, for messages and docs. */
  public static final String SIZE_FORMS = "bytes, or a number with b, k, m, g, t or p (e.g. 256m)";

  /** What a duration accepts, for messages and docs. */
  public static final String DURATION_FORMS =
      "milliseconds, or a number with us, ms, s, m or min, h or d (e.g. 2min)";

  private ConfigValues() {}

  /** {@code true} or {@code false}, nothing else ("yes", "1" and typos are refused). */
  public static boolean parseBoolean(String key, String value) {
    String v = value == null ? "" : value.trim().toLowerCase(Locale.ROOT);
    if (v.equals("true")) {
      return true;
    }
    if (v.equals("false")) {
      return false;
    }
    throw invalid(key, value, "true or false");
  }

  /** A whole number. */
  public static long parseLong(String key, String value) {
    try {
      return Long.parseLong(normalize(value));
    } catch (NumberFormatException e) {
      throw invalid(key, value, "a whole number");
    }
  }

  /** A decimal number. */
  public static double parseDouble(String key, String value) {
    try {
      return Double.parseDouble(normalize(value));
    } catch (NumberFormatException e) {
      throw invalid(key, value, "a number");
    }
  }

  /** A size in bytes: a bare number is bytes, else Spark's byte suffixes (binary multiples). */
  public static long parseBytes(String key, String value) {
    Matcher m = NUMBER_AND_SUFFIX.matcher(normalize(value));
    Long unit = null;
    if (m.matches()) {
      unit = m.group(2) == null ? Long.valueOf(1) : BYTE_SUFFIXES.get(m.group(2));
    }
    if (unit == null || m.group(1).startsWith("-")) {
      throw invalid(key, value, "a size: " + SIZE_FORMS);
    }
    try {
      return Math.multiplyExact(Long.parseLong(m.group(1)), unit);
    } catch (ArithmeticException | NumberFormatException e) {
      throw invalid(key, value, "a size that fits 64 bits");
    }
  }

  /** A duration in ms: a bare number is ms, else Spark's time suffixes ({@code us} truncates). */
  public static long parseMillis(String key, String value) {
    Matcher m = NUMBER_AND_SUFFIX.matcher(normalize(value));
    TimeUnit unit = null;
    if (m.matches()) {
      unit = m.group(2) == null ? TimeUnit.MILLISECONDS : TIME_SUFFIXES.get(m.group(2));
    }
    if (unit == null) {
      throw invalid(key, value, "a duration: " + DURATION_FORMS);
    }
    long amount;
    try {
      amount = Long.parseLong(m.group(1));
    } catch (NumberFormatException e) {
      throw invalid(key, value, "a duration that fits 64 bits");
    }
    long millis = unit.toMillis(amount);
    if (millis == Long.MAX_VALUE || millis == Long.MIN_VALUE) {
      throw invalid(key, value, "a duration that fits 64 bits of milliseconds");
    }
    return millis;
  }

  /** Trimmed, lower case, without the {@code _} that may group digits. */
  private static String normalize(String value) {
    return value == null ? "" : value.trim().toLowerCase(Locale.ROOT).replace("_", "");
  }

  private static IllegalArgumentException invalid(String key, String value, String expected) {
    return new IllegalArgumentException(
        "Invalid value for " + key + ": '" + value + "' (expected " + expected + ")");
  }
}
