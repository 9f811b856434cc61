package io.streamstate.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.streamstate.cli.json.Json;
import io.streamstate.cli.json.JsonWriter;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The small JSON reader and writer: what Spark writes in checkpoints, what inspect prints. */
@SuppressWarnings("unchecked")
class JsonTest {
  @Test
  void readsWhatSparkWritesInAnOffsetEntry() {
    Map<String, Object> meta =
        Json.parseObject(
            "{\"batchWatermarkMs\":0,\"batchTimestampMs\":1796238613087,"
                + "\"conf\":{\"spark.sql.shuffle.partitions\":\"2\"},\"x\":[1.5,true,null,\"\\u00e9\\n\"]}");

    assertThat(meta.get("batchTimestampMs")).isEqualTo(1796238613087L);
    assertThat(meta.get("conf")).isEqualTo(Map.of("spark.sql.shuffle.partitions", "2"));
    assertThat((List<Object>) meta.get("x")).containsExactly(1.5, true, null, "é\n");
  }

  @Test
  void refusesATornLineNamingWhere() {
    assertThatThrownBy(() -> Json.parse("{\"nextBatchWatermarkMs\":0"))
        .isInstanceOf(Json.JsonException.class)
        .hasMessageContaining("unexpected end");
    assertThatThrownBy(() -> Json.parse("{} {}"))
        .hasMessageContaining("unexpected text after the value");
  }

  @Test
  void writesWhatItReadsBack() {
    JsonWriter w = new JsonWriter();
    w.beginObject()
        .field("a", 1)
        .field("s", "q\"uote\\ \t")
        .field("n", (String) null)
        .name("l")
        .beginArray()
        .value(true)
        .beginObject()
        .endObject()
        .endArray()
        .name("e")
        .beginArray()
        .endArray()
        .endObject();

    Map<String, Object> back = Json.parseObject(w.toString());

    assertThat(back.get("a")).isEqualTo(1L);
    assertThat(back.get("s")).isEqualTo("q\"uote\\ \t");
    assertThat(back).containsEntry("n", null);
    assertThat((List<Object>) back.get("l")).containsExactly(true, Map.of());
    assertThat((List<?>) back.get("e")).isEmpty();
    assertThat(w.toString()).startsWith("{\n  \"a\": 1,\n");
  }
}
