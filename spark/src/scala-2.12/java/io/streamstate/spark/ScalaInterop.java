package io.streamstate.spark;

import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import scala.Predef;
import scala.Tuple2;
import scala.collection.JavaConverters;

/**
 * Java and Scala collections, for Scala 2.12 (the 2.13 version is in {@code src/scala-2.13}; the
 * build picks one): 2.12 has no {@code scala.jdk.javaapi.CollectionConverters}, and its {@code Seq}
 * in Spark's signatures is {@code scala.collection.Seq}, which the immutable one extends
 * (docs/spark-lines.md, section 8).
 */
public final class ScalaInterop {
  private ScalaInterop() {}

  public static <T> scala.collection.immutable.Seq<T> seq(List<T> list) {
    return JavaConverters.asScalaBuffer(list).toList();
  }

  public static <T> scala.collection.immutable.Set<T> set(Set<T> set) {
    return JavaConverters.asScalaSet(set).toSet();
  }

  public static <K, V> scala.collection.immutable.Map<K, V> map(Map<K, V> map) {
    return JavaConverters.mapAsScalaMap(map).toMap(Predef.<Tuple2<K, V>>$conforms());
  }

  public static <T> scala.collection.Iterator<T> iterator(Iterator<T> iterator) {
    return JavaConverters.asScalaIterator(iterator);
  }

  public static <T> Iterator<T> javaIterator(scala.collection.Iterator<T> iterator) {
    return JavaConverters.asJavaIterator(iterator);
  }

  public static <K, V> Map<K, V> javaMap(scala.collection.Map<K, V> map) {
    return JavaConverters.mapAsJavaMap(map);
  }

  public static <T> List<T> javaList(scala.collection.Seq<T> seq) {
    return JavaConverters.seqAsJavaList(seq);
  }
}
