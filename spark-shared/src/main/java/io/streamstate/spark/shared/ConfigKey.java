package io.streamstate.spark.shared;

import io.streamstate.core.config.ConfigValues;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * One configuration key as users see it: its name, type, default, scope and meaning, and how its
 * value is read. {@link StreamStateKeys} lists every key; the readers, the unknown-key warning and
 * docs/configuration.md all come from there.
 *
 * @param name the full key
 * @param type how its value is read
 * @param defaultValue the default as a value of {@code type}, or null when the default is computed
 *     (then {@code defaultDoc} says how, and the reader passes it in)
 * @param defaultDoc the default as the reference table shows it
 * @param scope who shares one value of it
 * @param choices for {@link Type#CHOICE}: the accepted values, lower case; else empty
 * @param doc what it does (Markdown)
 */
public record ConfigKey(
    String name,
    Type type,
    String defaultValue,
    String defaultDoc,
    Scope scope,
    List<String> choices,
    String doc) {

  /** How a value is read ({@link ConfigValues}: Spark's rules). */
  public enum Type {
    BOOLEAN("boolean", "`true` or `false`"),
    COUNT("count", "a whole number"),
    SIZE("size", "bytes, or with Spark's suffixes `b`, `k`, `m`, `g`, `t`, `p` (`256m`)"),
    DURATION(
        "duration", "milliseconds, or with Spark's suffixes `us`, `ms`, `s`, `m`, `min`, `h`, `d`"),
    DECIMAL("decimal", "a number"),
    TEXT("text", "any text"),
    CHOICE("choice", "one of the values named");

    private final String label;
    private final String accepts;

    Type(String label, String accepts) {
      this.label = label;
      this.accepts = accepts;
    }

    /** The type's name in the reference table. */
    public String label() {
      return label;
    }

    /** What a value of the type may look like (Markdown). */
    public String accepts() {
      return accepts;
    }
  }

  /** Who shares one value of a key. */
  public enum Scope {
    /** Each store (or checkpoint file manager, or file-sink task) reads its own. */
    STORE("query"),
    /** One per JVM: the first store opened fixes it; a later store's other value is ignored. */
    PROCESS("JVM (first store fixes it)"),
    /** One per Spark log: the first manager of a driver to open the log's journal fixes it. */
    LOG("log (first manager fixes it)");

    private final String label;

    Scope(String label) {
      this.label = label;
    }

    /** The scope's name in the reference table. */
    public String label() {
      return label;
    }
  }

  public ConfigKey {
    Objects.requireNonNull(name, "name");
    Objects.requireNonNull(type, "type");
    Objects.requireNonNull(defaultDoc, "defaultDoc");
    Objects.requireNonNull(scope, "scope");
    choices = List.copyOf(choices);
    Objects.requireNonNull(doc, "doc");
    if ((type == Type.CHOICE) == choices.isEmpty()) {
      throw new IllegalArgumentException(name + ": choices go with type CHOICE, and only there");
    }
    if (defaultValue != null) {
      // A default the reader would refuse is a bug here, not the user's.
      check(name, type, choices, defaultValue);
    }
  }

  /**
   * A key of {@code type} whose default is {@code defaultValue}, shown as is; null: computed, then
   * documented by {@link #computedDefault}.
   */
  static ConfigKey of(String name, Type type, String defaultValue, String doc) {
    return new ConfigKey(
        name,
        type,
        defaultValue,
        defaultValue == null ? "" : defaultValue,
        Scope.STORE,
        List.of(),
        doc);
  }

  /** A key whose value is one of {@code choices}, default the first. */
  static ConfigKey choice(String name, List<String> choices, String doc) {
    return new ConfigKey(
        name, Type.CHOICE, choices.get(0), choices.get(0), Scope.STORE, choices, doc);
  }

  /** This key with its default shown as {@code text} (e.g. the value with its unit). */
  ConfigKey shownAs(String text) {
    return new ConfigKey(name, type, defaultValue, text, scope, choices, doc);
  }

  /** This key with a default the reader computes, documented as {@code text}. */
  ConfigKey computedDefault(String text) {
    return new ConfigKey(name, type, null, text, scope, choices, doc);
  }

  /** This key with another scope. */
  ConfigKey scope(Scope newScope) {
    return new ConfigKey(name, type, defaultValue, defaultDoc, newScope, choices, doc);
  }

  /** The value set in {@code confs}, if any (absent or blank: not set). */
  public Optional<String> find(Map<String, String> confs) {
    return Optional.ofNullable(confs.get(name)).filter(v -> !v.isBlank());
  }

  /** A {@link Type#BOOLEAN}: the value set, else the default. */
  public boolean readBoolean(Map<String, String> confs) {
    requireType(Type.BOOLEAN);
    return ConfigValues.parseBoolean(name, valueOrDefault(confs));
  }

  /** A {@link Type#COUNT}, {@link Type#SIZE} (bytes) or {@link Type#DURATION} (ms). */
  public long readLong(Map<String, String> confs) {
    return parseLong(valueOrDefault(confs));
  }

  /** As {@link #readLong(Map)}, for a key whose default the caller computes. */
  public long readLong(Map<String, String> confs, long computedDefault) {
    Optional<String> value = find(confs);
    return value.isPresent() ? parseLong(value.get()) : computedDefault;
  }

  /** A {@link Type#DECIMAL}: the value set, else the default. */
  public double readDouble(Map<String, String> confs) {
    requireType(Type.DECIMAL);
    return ConfigValues.parseDouble(name, valueOrDefault(confs));
  }

  /** A {@link Type#CHOICE}: the value set (trimmed, lower case), else the default. */
  public String readChoice(Map<String, String> confs) {
    requireType(Type.CHOICE);
    return choiceOf(name, choices, valueOrDefault(confs));
  }

  /** Reads {@code value} as this key's type, throwing as the reader would. */
  void check(String value) {
    check(name, type, choices, value);
  }

  private static void check(String name, Type type, List<String> choices, String value) {
    switch (type) {
      case BOOLEAN -> ConfigValues.parseBoolean(name, value);
      case COUNT, SIZE, DURATION -> parseLong(name, type, value);
      case DECIMAL -> ConfigValues.parseDouble(name, value);
      case CHOICE -> choiceOf(name, choices, value);
      case TEXT -> {}
    }
  }

  private static String choiceOf(String name, List<String> choices, String value) {
    String v = value.trim().toLowerCase(Locale.ROOT);
    if (!choices.contains(v)) {
      throw new IllegalArgumentException(
          "Invalid value for "
              + name
              + ": '"
              + value
              + "' (expected "
              + String.join(" or ", choices)
              + ")");
    }
    return v;
  }

  private long parseLong(String value) {
    return parseLong(name, type, value);
  }

  private static long parseLong(String name, Type type, String value) {
    return switch (type) {
      case COUNT -> ConfigValues.parseLong(name, value);
      case SIZE -> ConfigValues.parseBytes(name, value);
      case DURATION -> ConfigValues.parseMillis(name, value);
      default -> throw new IllegalStateException(name + " is a " + type + ", not a number");
    };
  }

  private String valueOrDefault(Map<String, String> confs) {
    Optional<String> value = find(confs);
    if (value.isPresent()) {
      return value.get();
    }
    if (defaultValue == null) {
      throw new IllegalStateException(name + " has a computed default: pass it to the reader");
    }
    return defaultValue;
  }

  private void requireType(Type expected) {
    if (type != expected) {
      throw new IllegalStateException(name + " is a " + type + ", not a " + expected);
    }
  }
}
