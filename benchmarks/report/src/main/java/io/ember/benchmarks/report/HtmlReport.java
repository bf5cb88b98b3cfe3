package io.ember.benchmarks.report;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Base64;
import java.util.List;
import java.util.regex.Pattern;
import org.knowm.xchart.VectorGraphicsEncoder;
import org.knowm.xchart.internal.chartpart.Chart;

/**
 * A benchmark's report as one self-contained HTML page: headings, paragraphs, tables and charts, in
 * the order they are added. Charts are SVG drawn by XChart and embedded as data, and the style
 * sheet is inline, so the file can be mailed or attached to an issue and opens anywhere, offline.
 * Not thread-safe.
 */
public final class HtmlReport {
  /** The name of the page {@link #write} writes in its directory. */
  public static final String FILE_NAME = "index.html";

  private static final String STYLE =
      """
      body { font: 14px/1.45 system-ui, sans-serif; margin: 2em auto; max-width: 70em; \
      padding: 0 1em; color: #222; }
      h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 2em; }
      table { border-collapse: collapse; margin: 1em 0; }
      th, td { border: 1px solid #ccc; padding: .25em .6em; }
      th { background: #f0f0f0; text-align: left; }
      td.n { text-align: right; font-variant-numeric: tabular-nums; }
      figure { margin: 1em 0; } figcaption { color: #555; font-size: .9em; }
      img { max-width: 100%; height: auto; }
      p.meta { color: #555; }
      """;

  private final String title;
  private final StringBuilder body = new StringBuilder();

  /** A report whose page title and first heading are {@code title}. */
  public HtmlReport(String title) {
    this.title = title;
  }

  /** Adds a section heading. */
  public HtmlReport heading(String text) {
    body.append("<h2>").append(escape(text)).append("</h2>\n");
    return this;
  }

  /** Adds a paragraph of plain text. */
  public HtmlReport paragraph(String text) {
    body.append("<p>").append(escape(text)).append("</p>\n");
    return this;
  }

  /** Adds a paragraph in the muted style of the run's particulars (command line, machine). */
  public HtmlReport meta(String text) {
    body.append("<p class=\"meta\">").append(escape(text)).append("</p>\n");
    return this;
  }

  /**
   * Adds a table. Cells that read as a number (with or without a unit after it) are set right.
   *
   * @throws IllegalArgumentException if a row has more cells than there are headers
   */
  public HtmlReport table(List<String> headers, List<List<String>> rows) {
    body.append("<table>\n<tr>");
    headers.forEach(h -> body.append("<th>").append(escape(h)).append("</th>"));
    body.append("</tr>\n");
    for (List<String> row : rows) {
      if (row.size() > headers.size()) {
        throw new IllegalArgumentException(
            "a row of " + row.size() + " cells under " + headers.size() + " headers: " + row);
      }
      body.append("<tr>");
      for (String cell : row) {
        body.append(numeric(cell) ? "<td class=\"n\">" : "<td>")
            .append(escape(cell))
            .append("</td>");
      }
      body.append("</tr>\n");
    }
    body.append("</table>\n");
    return this;
  }

  /**
   * Adds a chart, drawn to SVG at its own size, with a caption under it. A chart XChart cannot draw
   * (a value it refuses, no font to draw text with) becomes a line saying so: the tables are the
   * report's figures and must not be lost to a picture.
   */
  public HtmlReport chart(Chart<?, ?> chart, String caption) {
    String data;
    try {
      data = Base64.getEncoder().encodeToString(svg(chart));
    } catch (RuntimeException e) {
      return paragraph("(The chart '" + chart.getTitle() + "' could not be drawn: " + e + ")");
    }
    body.append("<figure><img alt=\"")
        .append(escape(chart.getTitle()))
        .append("\" width=\"")
        .append(chart.getWidth())
        .append("\" height=\"")
        .append(chart.getHeight())
        .append("\" src=\"data:image/svg+xml;base64,")
        .append(data)
        .append("\">");
    if (!caption.isEmpty()) {
      body.append("<figcaption>").append(escape(caption)).append("</figcaption>");
    }
    body.append("</figure>\n");
    return this;
  }

  /** The chart as an SVG document. */
  static byte[] svg(Chart<?, ?> chart) {
    ByteArrayOutputStream svg = new ByteArrayOutputStream();
    try {
      VectorGraphicsEncoder.saveVectorGraphic(
          chart, svg, VectorGraphicsEncoder.VectorGraphicsFormat.SVG);
    } catch (IOException e) {
      throw new UncheckedIOException("drawing the chart '" + chart.getTitle() + "'", e);
    }
    return svg.toByteArray();
  }

  /** The whole page. */
  public String html() {
    return "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>"
        + escape(title)
        + "</title>\n<style>\n"
        + STYLE
        + "</style>\n</head>\n<body>\n<h1>"
        + escape(title)
        + "</h1>\n"
        + body
        + "</body>\n</html>\n";
  }

  /**
   * Writes the page as {@code dir/index.html}, creating {@code dir} if needed. The page is written
   * beside it and renamed over it, so a reader never sees half a report.
   *
   * @return the file written
   * @throws IOException if the directory cannot be made or the file written
   */
  public Path write(Path dir) throws IOException {
    Files.createDirectories(dir);
    Path file = dir.resolve(FILE_NAME);
    // Not createTempFile: its file is private to its owner, and a report is for sharing.
    Path partial = dir.resolve("." + FILE_NAME + ".partial");
    try {
      Files.writeString(partial, html(), StandardCharsets.UTF_8);
      try {
        Files.move(partial, file, StandardCopyOption.ATOMIC_MOVE);
      } catch (AtomicMoveNotSupportedException e) {
        Files.move(partial, file, StandardCopyOption.REPLACE_EXISTING);
      }
    } finally {
      Files.deleteIfExists(partial);
    }
    return file;
  }

  /** Text made safe for HTML's text and attribute values. */
  static String escape(String text) {
    StringBuilder s = new StringBuilder(text.length());
    for (int i = 0; i < text.length(); i++) {
      char c = text.charAt(i);
      switch (c) {
        case '<' -> s.append("&lt;");
        case '>' -> s.append("&gt;");
        case '&' -> s.append("&amp;");
        case '"' -> s.append("&quot;");
        case '\'' -> s.append("&#39;");
        default -> s.append(c);
      }
    }
    return s.toString();
  }

  /** A number, perhaps with one word after it: "41000 ops/s", "0.93", "1.30 (q96)". */
  private static final Pattern NUMBER = Pattern.compile("-?[0-9][0-9.,]*( \\S+)?");

  private static boolean numeric(String cell) {
    return NUMBER.matcher(cell).matches();
  }
}
