package io.streamstate.spark;

/**
 * The errors a load raises on Spark 3.5, whose providers raise plain exceptions (its error classes
 * for state store loads came with 4.0): our message, naming the file and what is wrong.
 */
final class LoadErrors {
  private LoadErrors() {}

  static RuntimeException unexpectedVersion(long version) {
    return new IllegalArgumentException("Version cannot be less than 0: " + version);
  }

  static RuntimeException missingFile(String fileToRead, Throwable detail) {
    return cannotLoad(detail);
  }

  static RuntimeException cannotLoad(Throwable detail) {
    return detail instanceof RuntimeException e ? e : new IllegalStateException(detail);
  }
}
