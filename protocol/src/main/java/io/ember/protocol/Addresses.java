package io.ember.protocol;

import java.net.InetAddress;
import java.net.UnknownHostException;

/** What a server tells others to connect to, given where it listens. */
public final class Addresses {
  private Addresses() {}

  /**
   * The host a server advertises: {@code configured} when set; else the address it binds, when that
   * is one address; else, for a server on every interface, this machine's host name (which Spark
   * and Hadoop match to their executors' hosts), or its loopback address when the machine cannot
   * name itself.
   *
   * @param configured the {@code --advertise} host, or empty
   * @param bindHost the address the server listens on
   */
  public static String advertised(String configured, String bindHost) {
    if (!configured.isBlank()) {
      return configured;
    }
    if (!anyLocal(bindHost)) {
      return bindHost;
    }
    try {
      return InetAddress.getLocalHost().getHostName();
    } catch (UnknownHostException e) {
      return InetAddress.getLoopbackAddress().getHostAddress();
    }
  }

  /** Whether {@code host} is a wildcard address: listening there is listening everywhere. */
  public static boolean anyLocal(String host) {
    return host.equals("0.0.0.0") || host.equals("::") || host.equals("[::]");
  }
}
