package io.ember.spark;

import java.util.Iterator;

/**
 * A Java iterator seen as a Scala one. Scala 2.13's converters ({@code scala.jdk.javaapi}) do not
 * exist in 2.12 and 2.12's are deprecated in 2.13; {@code AbstractIterator} is in both, so the same
 * source serves every Scala version the shuffle is built for.
 */
final class ScalaIterator<T> extends scala.collection.AbstractIterator<T> {
  private final Iterator<T> java;

  private ScalaIterator(Iterator<T> java) {
    this.java = java;
  }

  static <T> scala.collection.Iterator<T> of(Iterator<T> java) {
    return new ScalaIterator<>(java);
  }

  @Override
  public boolean hasNext() {
    return java.hasNext();
  }

  @Override
  public T next() {
    return java.next();
  }
}
