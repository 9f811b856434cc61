package io.streamstate.cli.json;

import java.util.ArrayDeque;
import java.util.Deque;

/**
 * Writes one JSON document, pretty-printed with two-space indents, fields in the order they are
 * written (so that the commands' output keeps the order their documentation shows). Strings are
 * escaped as RFC 8259 asks; {@code null} values are written as {@code null}.
 *
 * <pre>{@code
 * JsonWriter w = new JsonWriter();
 * w.beginObject().field("a", 1).name("b").beginArray().value("x").endArray().endObject();
 * String json = w.toString();
 * }</pre>
 */
public final class JsonWriter {
  private final StringBuilder out = new StringBuilder();

  /** Per open object or array: whether it has a member yet. */
  private final Deque<boolean[]> open = new ArrayDeque<>();

  /** A name was written; its value comes next, on the same line. */
  private boolean afterName;

  public JsonWriter beginObject() {
    beforeValue();
    out.append('{');
    open.push(new boolean[1]);
    return this;
  }

  public JsonWriter endObject() {
    return close('}');
  }

  public JsonWriter beginArray() {
    beforeValue();
    out.append('[');
    open.push(new boolean[1]);
    return this;
  }

  public JsonWriter endArray() {
    return close(']');
  }

  /** The name of the next field of the current object. */
  public JsonWriter name(String name) {
    separate();
    quote(name);
    out.append(": ");
    afterName = true;
    return this;
  }

  public JsonWriter value(String value) {
    beforeValue();
    if (value == null) {
      out.append("null");
    } else {
      quote(value);
    }
    return this;
  }

  public JsonWriter value(long value) {
    beforeValue();
    out.append(value);
    return this;
  }

  public JsonWriter value(boolean value) {
    beforeValue();
    out.append(value);
    return this;
  }

  /** A long, or {@code null} when {@code value} is null. */
  public JsonWriter value(Long value) {
    return value == null ? nullValue() : value((long) value);
  }

  public JsonWriter nullValue() {
    beforeValue();
    out.append("null");
    return this;
  }

  public JsonWriter field(String name, String value) {
    return name(name).value(value);
  }

  public JsonWriter field(String name, long value) {
    return name(name).value(value);
  }

  public JsonWriter field(String name, Long value) {
    return name(name).value(value);
  }

  public JsonWriter field(String name, boolean value) {
    return name(name).value(value);
  }

  /** The document, ending with a newline. */
  @Override
  public String toString() {
    return out + "\n";
  }

  private JsonWriter close(char c) {
    boolean[] members = open.pop();
    if (members[0]) {
      newline();
    }
    out.append(c);
    return this;
  }

  private void beforeValue() {
    if (afterName) {
      afterName = false;
      return;
    }
    separate();
  }

  /** Before a member of the current object or array: a comma if needed, a new line, the indent. */
  private void separate() {
    if (open.isEmpty()) {
      return;
    }
    boolean[] members = open.peek();
    if (members[0]) {
      out.append(',');
    }
    members[0] = true;
    newline();
  }

  private void newline() {
    out.append('\n');
    out.append("  ".repeat(open.size()));
  }

  private void quote(String s) {
    out.append('"');
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      switch (c) {
        case '"' -> out.append("\\\"");
        case '\\' -> out.append("\\\\");
        case '\n' -> out.append("\\n");
        case '\r' -> out.append("\\r");
        case '\t' -> out.append("\\t");
        case '\b' -> out.append("\\b");
        case '\f' -> out.append("\\f");
        default -> {
          if (c < 0x20) {
            out.append(String.format("\\u%04x", (int) c));
          } else {
            out.append(c);
          }
        }
      }
    }
    out.append('"');
  }
}
