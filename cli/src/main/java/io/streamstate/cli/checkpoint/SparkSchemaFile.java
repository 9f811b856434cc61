package io.streamstate.cli.checkpoint;

import io.streamstate.cli.json.Json;
import java.io.ByteArrayInputStream;
import java.io.DataInputStream;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * A state schema file Spark writes for a store ({@code state/<op>/<part>/_metadata/schema}), read
 * without Spark: versions 1 and 2 are Java {@code DataOutputStream} data, the version as a UTF
 * string ({@code v1}, {@code v2}) then the key's and the value's schema as Spark's JSON of a {@code
 * StructType} (version 1: one UTF string each; version 2: a chunk count, then that many UTF
 * strings). Version 3 files ({@code state/<op>/_stateSchema/...}, with column families) are not
 * decoded: the command names them and their size.
 */
public final class SparkSchemaFile {
  /** A decoded schema file: its version and the key's and value's columns. */
  public record Schema(String version, String keySchema, String valueSchema) {}

  private SparkSchemaFile() {}

  /**
   * Decodes a version 1 or 2 schema file; null if it is of another version or not decodable.
   *
   * @param bytes the whole file
   */
  public static Schema decode(byte[] bytes) {
    try (DataInputStream in = new DataInputStream(new ByteArrayInputStream(bytes))) {
      String version = in.readUTF();
      String key;
      String value;
      if (version.equals("v1")) {
        key = in.readUTF();
        value = in.readUTF();
      } else if (version.equals("v2")) {
        key = readChunks(in);
        value = readChunks(in);
      } else {
        return null;
      }
      return new Schema(version, columns(key), columns(value));
    } catch (IOException | RuntimeException e) {
      return null;
    }
  }

  private static String readChunks(DataInputStream in) throws IOException {
    int chunks = in.readInt();
    if (chunks < 0 || chunks > 1 << 16) {
      throw new IOException("bad chunk count " + chunks);
    }
    StringBuilder sb = new StringBuilder();
    for (int i = 0; i < chunks; i++) {
      sb.append(in.readUTF());
    }
    return sb.toString();
  }

  /** A StructType's JSON as {@code name type, ...}. */
  static String columns(String structJson) {
    return render(Json.parse(structJson), true);
  }

  private static String render(Object type, boolean top) {
    if (type instanceof String s) {
      return s;
    }
    if (type instanceof Map<?, ?> m) {
      Object kind = m.get("type");
      if ("struct".equals(kind) && m.get("fields") instanceof List<?> fields) {
        List<String> cols = new ArrayList<>();
        for (Object f : fields) {
          if (f instanceof Map<?, ?> field) {
            cols.add(field.get("name") + " " + render(field.get("type"), false));
          }
        }
        return top ? String.join(", ", cols) : "struct<" + String.join(", ", cols) + ">";
      }
      if ("array".equals(kind)) {
        return "array<" + render(m.get("elementType"), false) + ">";
      }
      if ("map".equals(kind)) {
        return "map<"
            + render(m.get("keyType"), false)
            + ","
            + render(m.get("valueType"), false)
            + ">";
      }
      return String.valueOf(kind);
    }
    return String.valueOf(type);
  }
}
