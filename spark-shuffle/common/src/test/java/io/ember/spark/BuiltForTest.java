package io.ember.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import org.junit.jupiter.api.Test;

/** The jar knows the Spark line it was built for, and says which jar another Spark needs. */
class BuiltForTest {
  private static final String RUNNING_SPARK = org.apache.spark.package$.MODULE$.SPARK_VERSION();
  private static final String RUNNING_SCALA = scala.util.Properties.versionNumberString();

  @Test
  void theJarIsBuiltForTheSparkItIsTestedOn() {
    assertNull(BuiltFor.mismatch(RUNNING_SPARK, RUNNING_SCALA));
    assertEquals("ember-spark-" + BuiltFor.SPARK_LINE + "_" + BuiltFor.SCALA, BuiltFor.ARTIFACT);
    BuiltFor.check();
  }

  @Test
  void anotherSparkLineOrScalaIsToldTheJarToUseOrThatThereIsNone() {
    String built =
        BuiltFor.ARTIFACT
            + " is built for Spark "
            + BuiltFor.SPARK_LINE
            + " with Scala "
            + BuiltFor.SCALA
            + ", but this is Spark ";
    String other = BuiltFor.SPARK_LINE.equals("4.1") ? "3.5" : "4.1";
    assertEquals(
        built + other + ".2 with Scala 2.13.8: use ember-spark-" + other + "_2.13 instead",
        BuiltFor.mismatch(other + ".2", "2.13.8"));
    assertEquals(
        built
            + "4.0.1 with Scala 2.13.16: Ember's shuffle is built for Spark 3.5 with Scala 2.12,"
            + " 3.5 with Scala 2.13, 4.1 with Scala 2.13 only",
        BuiltFor.mismatch("4.0.1", "2.13.16"));
    assertEquals(
        built
            + RUNNING_SPARK
            + " with Scala 3.3.0: Ember's shuffle is built for Spark 3.5 with Scala 2.12,"
            + " 3.5 with Scala 2.13, 4.1 with Scala 2.13 only",
        BuiltFor.mismatch(RUNNING_SPARK, "3.3.0"));
  }

  @Test
  void theBuildsNamedAreTheModulesThereAre() throws Exception {
    // Tests run in the module's directory, beside its siblings.
    try (java.util.stream.Stream<java.nio.file.Path> dirs =
        java.nio.file.Files.list(java.nio.file.Path.of(".."))) {
      assertEquals(
          new java.util.TreeSet<>(BuiltFor.BUILDS),
          dirs.map(d -> d.getFileName().toString())
              .filter(n -> n.startsWith("spark-"))
              .map(n -> n.substring("spark-".length()))
              .collect(java.util.stream.Collectors.toCollection(java.util.TreeSet::new)));
    }
  }
}
