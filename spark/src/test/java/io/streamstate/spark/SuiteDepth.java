package io.streamstate.spark;

/**
 * Which depth of the test suite is running: the one {@code .ci/run} runs (the default), or the
 * longer one of {@code mvn verify -Pextended}, which sets the system property {@value #PROPERTY} to
 * {@code extended} in every test JVM (root pom). The extended suite adds cases that repeat what the
 * default one already covers in another form, and raises seeded counts; the soaks go further by
 * their own properties.
 */
public final class SuiteDepth {
  public static final String PROPERTY = "streamstate.suite";

  private SuiteDepth() {}

  /** Whether this is the extended suite ({@code -Pextended}). */
  public static boolean extended() {
    return "extended".equals(System.getProperty(PROPERTY));
  }

  /**
   * A seeded count: the system property {@code property} when set, else {@code extended} in the
   * extended suite and {@code ci} in the default one.
   */
  public static int count(String property, int ci, int extended) {
    return Integer.getInteger(property, extended() ? extended : ci);
  }
}
