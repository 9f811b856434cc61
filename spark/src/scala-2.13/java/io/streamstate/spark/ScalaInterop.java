package io.streamstate.spark;

import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import scala.jdk.javaapi.CollectionConverters;

/**
 * Java and Scala collections, for Scala 2.13 (the 2.12 version is in {@code src/scala-2.12}; the
 * build picks one): the only place the adapter names Scala's converters, whose classes differ
 * between the two (docs/spark-lines.md, section 8).
 */
public final class ScalaInterop {
  private ScalaInterop() {}

  public static <T> scala.collection.immutable.Seq<T> seq(List<T> list) {
    return CollectionConverters.asScala(list).toSeq();
  }

  public static <T> scala.collection.immutable.Set<T> set(Set<T> set) {
    return CollectionConverters.asScala(set).toSet();
  }

  public static <K, V> scala.collection.immutable.Map<K, V> map(Map<K, V> map) {
    return scala.collection.immutable.Map$.MODULE$.from(CollectionConverters.asScala(map));
  }

  public static <T> scala.collection.Iterator<T> iterator(Iterator<T> iterator) {
    return CollectionConverters.asScala(iterator);
  }

  public static <T> Iterator<T> javaIterator(scala.collection.Iterator<T> iterator) {
    return CollectionConverters.asJava(iterator);
  }

  public static <K, V> Map<K, V> javaMap(scala.collection.Map<K, V> map) {
    return CollectionConverters.asJava(map);
  }

  public static <T> List<T> javaList(scala.collection.Seq<T> seq) {
    return CollectionConverters.asJava(seq);
  }
}
