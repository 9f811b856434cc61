package io.streamstate.cli.json;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A small JSON reader for what Spark writes in a checkpoint (the {@code metadata} file, the lines
 * of offset and commit log entries, operator metadata): objects become {@link LinkedHashMap}s in
 * document order, arrays {@link List}s, numbers {@link Long} or {@link Double}, and {@code true},
 * {@code false}, {@code null} themselves. No JSON library is on the command's classpath: Hadoop's
 * client jar shades its own, Spark's is not there when the command runs on Hadoop alone.
 */
public final class Json {
  private final String text;
  private int pos;

  private Json(String text) {
    this.text = text;
  }

  /**
   * Parses one JSON value that makes up the whole of {@code text} (surrounding whitespace allowed).
   *
   * @throws JsonException not one complete JSON value, saying where
   */
  public static Object parse(String text) {
    Json p = new Json(text);
    p.skipWhitespace();
    Object value = p.value();
    p.skipWhitespace();
    if (p.pos != text.length()) {
      throw p.error("unexpected text after the value");
    }
    return value;
  }

  /** As {@link #parse}, for an object. */
  @SuppressWarnings("unchecked")
  public static Map<String, Object> parseObject(String text) {
    Object value = parse(text);
    if (!(value instanceof Map)) {
      throw new JsonException("not a JSON object: " + abbreviate(text));
    }
    return (Map<String, Object>) value;
  }

  /** A malformed document. */
  public static final class JsonException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public JsonException(String message) {
      super(message);
    }
  }

  private Object value() {
    if (pos >= text.length()) {
      throw error("unexpected end");
    }
    char c = text.charAt(pos);
    switch (c) {
      case '{':
        return object();
      case '[':
        return array();
      case '"':
        return string();
      case 't':
        return literal("true", Boolean.TRUE);
      case 'f':
        return literal("false", Boolean.FALSE);
      case 'n':
        return literal("null", null);
      default:
        if (c == '-' || (c >= '0' && c <= '9')) {
          return number();
        }
        throw error("unexpected character '" + c + "'");
    }
  }

  private Map<String, Object> object() {
    Map<String, Object> map = new LinkedHashMap<>();
    pos++; // {
    skipWhitespace();
    if (peek() == '}') {
      pos++;
      return map;
    }
    while (true) {
      skipWhitespace();
      if (peek() != '"') {
        throw error("expected a field name");
      }
      String key = string();
      skipWhitespace();
      expect(':');
      skipWhitespace();
      map.put(key, value());
      skipWhitespace();
      char c = next();
      if (c == '}') {
        return map;
      }
      if (c != ',') {
        throw error("expected ',' or '}'");
      }
    }
  }

  private List<Object> array() {
    List<Object> list = new ArrayList<>();
    pos++; // [
    skipWhitespace();
    if (peek() == ']') {
      pos++;
      return list;
    }
    while (true) {
      skipWhitespace();
      list.add(value());
      skipWhitespace();
      char c = next();
      if (c == ']') {
        return list;
      }
      if (c != ',') {
        throw error("expected ',' or ']'");
      }
    }
  }

  private String string() {
    pos++; // "
    StringBuilder sb = new StringBuilder();
    while (true) {
      char c = next();
      if (c == '"') {
        return sb.toString();
      }
      if (c == '\\') {
        char e = next();
        switch (e) {
          case '"', '\\', '/' -> sb.append(e);
          case 'b' -> sb.append('\b');
          case 'f' -> sb.append('\f');
          case 'n' -> sb.append('\n');
          case 'r' -> sb.append('\r');
          case 't' -> sb.append('\t');
          case 'u' -> {
            if (pos + 4 > text.length()) {
              throw error("unexpected end in a \\u escape");
            }
            try {
              sb.append((char) Integer.parseInt(text.substring(pos, pos + 4), 16));
            } catch (NumberFormatException ex) {
              throw error("bad \\u escape");
            }
            pos += 4;
          }
          default -> throw error("bad escape '\\" + e + "'");
        }
      } else if (c < 0x20) {
        throw error("control character in a string");
      } else {
        sb.append(c);
      }
    }
  }

  private Object number() {
    int start = pos;
    if (peek() == '-') {
      pos++;
    }
    boolean fraction = false;
    while (pos < text.length()) {
      char c = text.charAt(pos);
      if (c >= '0' && c <= '9') {
        pos++;
      } else if (c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-') {
        fraction = true;
        pos++;
      } else {
        break;
      }
    }
    String n = text.substring(start, pos);
    try {
      if (!fraction) {
        try {
          return Long.parseLong(n);
        } catch (NumberFormatException tooLong) {
          return Double.parseDouble(n);
        }
      }
      return Double.parseDouble(n);
    } catch (NumberFormatException e) {
      pos = start;
      throw error("bad number '" + n + "'");
    }
  }

  private Object literal(String word, Object value) {
    if (!text.startsWith(word, pos)) {
      throw error("unexpected token");
    }
    pos += word.length();
    return value;
  }

  private void skipWhitespace() {
    while (pos < text.length() && Character.isWhitespace(text.charAt(pos))) {
      pos++;
    }
  }

  private char peek() {
    if (pos >= text.length()) {
      throw error("unexpected end");
    }
    return text.charAt(pos);
  }

  private char next() {
    char c = peek();
    pos++;
    return c;
  }

  private void expect(char c) {
    if (next() != c) {
      pos--;
      throw error("expected '" + c + "'");
    }
  }

  private JsonException error(String what) {
    return new JsonException(what + " at character " + pos + " of " + abbreviate(text));
  }

  private static String abbreviate(String text) {
    String oneLine = text.replace('\n', ' ');
    return oneLine.length() <= 80 ? "'" + oneLine + "'" : "'" + oneLine.substring(0, 77) + "...'";
  }
}
