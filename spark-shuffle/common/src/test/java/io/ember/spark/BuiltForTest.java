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
  void anotherSparkLineOrScalaIsToldTheJarToUse() {
    assertEquals(
        BuiltFor.ARTIFACT
            + " is built for Spark "
            + BuiltFor.SPARK_LINE
            + " with Scala "
            + BuiltFor.SCALA
            + ", but this is Spark 9.8.7-SNAPSHOT with Scala 2.14.1: use ember-spark-9.8_2.14"
            + " instead",
        BuiltFor.mismatch("9.8.7-SNAPSHOT", "2.14.1"));
    assertEquals(
        BuiltFor.ARTIFACT
            + " is built for Spark "
            + BuiltFor.SPARK_LINE
            + " with Scala "
            + BuiltFor.SCALA
            + ", but this is Spark "
            + RUNNING_SPARK
            + " with Scala 3.3.0: use ember-spark-"
            + BuiltFor.SPARK_LINE
            + "_3.3 instead",
        BuiltFor.mismatch(RUNNING_SPARK, "3.3.0"));
  }
}
