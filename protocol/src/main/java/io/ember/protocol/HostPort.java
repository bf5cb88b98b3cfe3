package io.ember.protocol;

import java.net.InetSocketAddress;

/**
 * A host and port as written by people: {@code host:port}, {@code [v6]:port}, or {@code host} alone
 * with a default port.
 *
 * @param host the host name or address
 * @param port 0 to 65535
 */
public record HostPort(String host, int port) {

  /**
   * Parses {@code text}.
   *
   * @throws IllegalArgumentException naming the text and the expected form
   */
  public static HostPort parse(String text, int defaultPort) {
    HostPort hp = tryParse(text, defaultPort);
    if (hp == null) {
      throw new IllegalArgumentException(
          "'" + text + "' is not host:port (e.g. 127.0.0.1:" + defaultPort + ")");
    }
    return hp;
  }

  /** Parses {@code text}, or returns {@code null}. */
  public static HostPort tryParse(String text, int defaultPort) {
    if (text == null) {
      return null;
    }
    String t = text.trim();
    if (t.isEmpty()) {
      return null;
    }
    String host;
    String port = null;
    if (t.startsWith("[")) {
      int close = t.indexOf(']');
      if (close < 0) {
        return null;
      }
      host = t.substring(1, close);
      if (close + 1 < t.length()) {
        if (t.charAt(close + 1) != ':') {
          return null;
        }
        port = t.substring(close + 2);
      }
    } else {
      int colon = t.lastIndexOf(':');
      if (colon >= 0 && t.indexOf(':') == colon) {
        host = t.substring(0, colon);
        port = t.substring(colon + 1);
      } else {
        host = t;
      }
    }
    if (host.isEmpty()) {
      return null;
    }
    int p = defaultPort;
    if (port != null) {
      try {
        p = Integer.parseInt(port);
      } catch (NumberFormatException e) {
        return null;
      }
    }
    if (p < 0 || p > 65535) {
      return null;
    }
    return new HostPort(host, p);
  }

  /** An unresolved socket address for Netty to resolve on connect. */
  public InetSocketAddress toAddress() {
    return InetSocketAddress.createUnresolved(host, port);
  }

  @Override
  public String toString() {
    return host.indexOf(':') >= 0 ? "[" + host + "]:" + port : host + ":" + port;
  }
}
