package io.ember.http;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.module.SimpleModule;
import com.fasterxml.jackson.databind.ser.std.ToStringSerializer;
import io.ember.protocol.StorageClass;
import java.util.List;
import java.util.Locale;
import java.util.regex.Pattern;

/**
 * A server-rendered HTML page with a little CSS and no script, so it works with JavaScript off and
 * needs nothing from the internet; and JSON for the API beside it.
 */
public final class Page {
  // Storage classes read as people name them (DRAM, NVMf), not as their number.
  private static final ObjectMapper JSON =
      new ObjectMapper()
          .enable(SerializationFeature.INDENT_OUTPUT)
          .registerModule(
              new SimpleModule().addSerializer(StorageClass.class, ToStringSerializer.instance));

  private static final String STYLE =
      """
      body{font-family:system-ui,sans-serif;margin:1.5em;color:#222}
      h1{font-size:1.4em;margin-bottom:.2em} h2{font-size:1.1em;margin-top:1.4em}
      table{border-collapse:collapse;margin:.4em 0} td,th{padding:.25em .7em;text-align:left}
      th{background:#eee} tr:nth-child(even) td{background:#f7f7f7}
      td.num{text-align:right;font-variant-numeric:tabular-nums}
      .live{color:#070} .lost{color:#b00;font-weight:bold} .other{color:#a60}
      nav a{margin-right:1em} .muted{color:#777}
      """;

  /** A cell that reads as a number, with or without a unit: right-aligned. */
  private static final Pattern NUMBER = Pattern.compile("-?[0-9][0-9.,]*( ?[A-Za-z]+)?");

  private final StringBuilder html = new StringBuilder(8 << 10);

  /**
   * Starts a page titled {@code title}; with {@code refreshSeconds > 0} the browser reloads it that
   * often (a meta refresh: no script needed).
   */
  public Page(String title, int refreshSeconds, List<String[]> nav) {
    html.append("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">");
    if (refreshSeconds > 0) {
      html.append("<meta http-equiv=\"refresh\" content=\"").append(refreshSeconds).append("\">");
    }
    html.append("<title>").append(escape(title)).append("</title><style>");
    html.append(STYLE).append("</style></head><body><nav>");
    for (String[] link : nav) {
      html.append("<a href=\"").append(escape(link[1])).append("\">");
      html.append(escape(link[0])).append("</a>");
    }
    html.append("</nav><h1>").append(escape(title)).append("</h1>\n");
  }

  /**
   * Adds a heading, with an id made of its words ({@code "Data nodes"} is {@code data-nodes}) that
   * links and scripts outside the page can name.
   */
  public Page heading(String text) {
    html.append("<h2 id=\"").append(idOf(text)).append("\">");
    html.append(escape(text)).append("</h2>\n");
    return this;
  }

  static String idOf(String text) {
    return text.toLowerCase(Locale.ROOT).replaceAll("[^a-z0-9]+", "-").replaceAll("^-|-$", "");
  }

  /** Adds a paragraph of text. */
  public Page paragraph(String text) {
    html.append("<p>").append(escape(text)).append("</p>\n");
    return this;
  }

  /** Adds markup as it is: the caller escapes what it holds. */
  public Page raw(String markup) {
    html.append(markup);
    return this;
  }

  /** A table cell of markup, made by {@link #link} or {@link #styled}: kept as it is. */
  public record Markup(String html) {}

  /**
   * Adds a table. A cell is text, escaped (and right-aligned when it looks like a number), or a
   * {@link Markup}, kept as it is: no text, whatever it holds, becomes markup.
   */
  public Page table(List<String> header, List<? extends List<?>> rows) {
    html.append("<table><tr>");
    for (String h : header) {
      html.append("<th>").append(escape(h)).append("</th>");
    }
    html.append("</tr>\n");
    for (List<?> row : rows) {
      html.append("<tr>");
      for (Object item : row) {
        String cell = String.valueOf(item);
        if (item instanceof Markup m) {
          html.append("<td>").append(m.html()).append("</td>");
        } else if (!cell.isEmpty() && NUMBER.matcher(cell).matches()) {
          html.append("<td class=\"num\">").append(escape(cell)).append("</td>");
        } else {
          html.append("<td>").append(escape(cell)).append("</td>");
        }
      }
      html.append("</tr>\n");
    }
    html.append("</table>\n");
    return this;
  }

  /** A table cell that links {@code text} to {@code href}. */
  public static Markup link(String text, String href) {
    return new Markup(anchor(text, href));
  }

  /** Markup of a link to {@code href} that reads {@code text}, for {@link #raw}. */
  public static String anchor(String text, String href) {
    return "<a href=\"" + escape(href) + "\">" + escape(text) + "</a>";
  }

  /** A table cell of {@code text} in CSS class {@code cssClass}. */
  public static Markup styled(String text, String cssClass) {
    return new Markup("<span class=\"" + escape(cssClass) + "\">" + escape(text) + "</span>");
  }

  /** The page, finished. */
  public StatusServer.Response done() {
    html.append("</body></html>\n");
    return StatusServer.Response.ok("text/html; charset=utf-8", html.toString());
  }

  /** {@code value} as JSON (records and collections as objects and arrays). */
  public static StatusServer.Response json(Object value) throws JsonProcessingException {
    return StatusServer.Response.ok(
        "application/json; charset=utf-8", JSON.writeValueAsString(value) + "\n");
  }

  /** Escapes text for HTML element content and attribute values. */
  public static String escape(String text) {
    StringBuilder out = new StringBuilder(text.length() + 16);
    for (int i = 0; i < text.length(); i++) {
      char c = text.charAt(i);
      switch (c) {
        case '<' -> out.append("&lt;");
        case '>' -> out.append("&gt;");
        case '&' -> out.append("&amp;");
        case '"' -> out.append("&quot;");
        case '\'' -> out.append("&#39;");
        default -> out.append(c);
      }
    }
    return out.toString();
  }

  /** Bytes as a person reads them: 1.5 GiB. */
  public static String bytes(long n) {
    if (n < 1024) {
      return n + " B";
    }
    String units = "KMGTPE";
    double v = n;
    int u = -1;
    while (v >= 1024 && u < units.length() - 1) {
      v /= 1024;
      u++;
    }
    return String.format(Locale.ROOT, "%.1f %siB", v, units.charAt(u));
  }
}
