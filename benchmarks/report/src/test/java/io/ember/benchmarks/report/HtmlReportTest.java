package io.ember.benchmarks.report;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayInputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import javax.xml.parsers.DocumentBuilderFactory;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.w3c.dom.Element;

class HtmlReportTest {
  private static final Pattern SVG_DATA =
      Pattern.compile(
          "<img alt=\"([^\"]*)\" width=\"(\\d+)\" height=\"(\\d+)\" "
              + "src=\"data:image/svg\\+xml;base64,([A-Za-z0-9+/=]+)\">");

  @Test
  void tablesAreEscapedAndNumbersSetRight() {
    String html =
        new HtmlReport("bench <1> & co")
            .heading("metadata")
            .table(
                List.of("measure", "Ember", "ratio"),
                List.of(
                    List.of("lookup, <8> threads", "41000 ops/s", "0.93"),
                    List.of("-", "", ""),
                    List.of("4 handler threads", "1.30 (q96)", "-0.5")))
            .html();
    assertTrue(html.startsWith("<!DOCTYPE html>"), html);
    assertTrue(html.contains("<title>bench &lt;1&gt; &amp; co</title>"), html);
    assertTrue(html.contains("<h2>metadata</h2>"), html);
    assertTrue(
        html.contains(
            "<tr><td>lookup, &lt;8&gt; threads</td><td class=\"n\">41000 ops/s</td>"
                + "<td class=\"n\">0.93</td></tr>"),
        html);
    assertTrue(html.contains("<tr><td>-</td><td></td><td></td></tr>"), html);
    assertTrue(
        html.contains(
            "<tr><td>4 handler threads</td><td class=\"n\">1.30 (q96)</td>"
                + "<td class=\"n\">-0.5</td></tr>"),
        html);
  }

  @Test
  void aRowWiderThanItsHeadersIsRefused() {
    HtmlReport report = new HtmlReport("t");
    IllegalArgumentException e =
        assertThrows(
            IllegalArgumentException.class,
            () -> report.table(List.of("a"), List.of(List.of("1", "2"))));
    assertTrue(e.getMessage().contains("2 cells under 1 headers"), e.getMessage());
  }

  @Test
  void chartsAreEmbeddedAsSvgDocumentsOfTheirSize() throws Exception {
    String html =
        new HtmlReport("t")
            .chart(
                Charts.ratios(
                    "Ember / Spark",
                    "ratio",
                    List.of("q1", "q2"),
                    Map.of("dram", new double[] {1, 2})),
                "per query")
            .html();
    Matcher m = SVG_DATA.matcher(html);
    assertTrue(m.find(), html);
    assertEquals("Ember / Spark", m.group(1));
    byte[] svg = Base64.getDecoder().decode(m.group(4));
    DocumentBuilderFactory f = DocumentBuilderFactory.newInstance();
    f.setFeature("http://apache.org/xml/features/nonvalidating/load-external-dtd", false);
    Element root = f.newDocumentBuilder().parse(new ByteArrayInputStream(svg)).getDocumentElement();
    assertEquals("svg", root.getTagName());
    assertEquals(m.group(2) + "px", root.getAttribute("width"));
    assertEquals(m.group(3) + "px", root.getAttribute("height"));
    assertTrue(root.getElementsByTagName("path").getLength() > 10, "the chart draws shapes");
    assertTrue(html.contains("<figcaption>per query</figcaption>"), html);
  }

  @Test
  void aChartXChartCannotDrawBecomesALineAndTheTablesStay() {
    String html =
        new HtmlReport("t")
            .table(List.of("a"), List.of(List.of("1")))
            .chart(
                Charts.ratios(
                    "odd",
                    "ratio",
                    List.of("q1"),
                    Map.of("x", new double[] {Double.POSITIVE_INFINITY})),
                "caption")
            .html();
    assertTrue(html.contains("<p>(The chart &#39;odd&#39; could not be drawn: "), html);
    assertFalse(html.contains("<img"), html);
    assertTrue(html.contains("<td class=\"n\">1</td>"), html);
  }

  @Test
  void writingReplacesThePageWholeAndLeavesNoPartialFile(@TempDir Path dir) throws Exception {
    Path nested = dir.resolve("a/b");
    Path first = new HtmlReport("first").write(nested);
    assertEquals(nested.resolve("index.html"), first);
    Path second = new HtmlReport("second").paragraph("again").write(nested);
    assertEquals(first, second);
    String page = Files.readString(second);
    assertTrue(page.contains("<h1>second</h1>") && page.contains("<p>again</p>"), page);
    assertFalse(page.contains("first"), page);
    try (Stream<Path> files = Files.list(nested)) {
      assertEquals(List.of(second), files.toList());
    }
  }
}
