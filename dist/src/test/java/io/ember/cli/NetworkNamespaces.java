package io.ember.cli;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;

/**
 * Hosts made of Linux network namespaces: each one its own namespace with one address, joined to
 * the others by a veth pair on a bridge, in a private /24 used only inside them. The bridge has no
 * address, so nothing outside the namespaces reaches them, nor they it. Needs root and iproute2.
 */
final class NetworkNamespaces implements AutoCloseable {
  private final String tag;
  private final String subnet;
  private final String bridge;
  private final Map<String, Integer> hosts = new LinkedHashMap<>();

  private NetworkNamespaces() throws IOException {
    // A tag of its own per run, so leftovers of a killed run never collide with this one.
    tag = String.format("e%04x", ThreadLocalRandom.current().nextInt(0x10000));
    subnet = "10.213." + ThreadLocalRandom.current().nextInt(256) + ".";
    bridge = tag + "br";
    ip("link", "add", bridge, "type", "bridge");
    ip("link", "set", bridge, "up");
  }

  /** A new, empty set of hosts, or an error saying why namespaces cannot be made here. */
  static NetworkNamespaces create() throws IOException {
    return new NetworkNamespaces();
  }

  /**
   * Why this machine cannot make network namespaces (not root, no iproute2, no kernel support), or
   * null when it can.
   */
  static String unavailable() {
    String probe = String.format("ember-probe-%d", ProcessHandle.current().pid());
    try {
      ip("netns", "add", probe);
      ip("netns", "delete", probe);
      return null;
    } catch (IOException e) {
      return "network namespaces cannot be made here (needs root and iproute2): " + e.getMessage();
    }
  }

  /** Adds host {@code name} and returns its address. */
  String add(String name) throws IOException {
    int index = hosts.size();
    String ns = namespace(name);
    String outside = tag + index + "h";
    String inside = tag + index + "n";
    String address = subnet + (10 + index);
    ip("netns", "add", ns);
    hosts.put(name, index);
    ip("link", "add", outside, "type", "veth", "peer", "name", inside);
    ip("link", "set", inside, "netns", ns);
    ip("link", "set", outside, "master", bridge);
    ip("link", "set", outside, "up");
    ip("-n", ns, "addr", "add", address + "/24", "dev", inside);
    ip("-n", ns, "link", "set", inside, "up");
    ip("-n", ns, "link", "set", "lo", "up");
    return address;
  }

  /** The command prefix that runs a command on host {@code name}. */
  List<String> on(String name) {
    return List.of("ip", "netns", "exec", namespace(name));
  }

  /** Cuts host {@code name} off the bridge (its cable pulled): packets to and from it are lost. */
  void cut(String name) throws IOException {
    ip("link", "set", tag + index(name) + "h", "down");
  }

  /** Puts host {@code name} back on the bridge. */
  void mend(String name) throws IOException {
    ip("link", "set", tag + index(name) + "h", "up");
  }

  private int index(String name) {
    Integer index = hosts.get(name);
    if (index == null) {
      throw new IllegalArgumentException("no host " + name);
    }
    return index;
  }

  private String namespace(String name) {
    return tag + "-" + name;
  }

  /** Deletes every namespace (their veth pairs go with them) and the bridge. */
  @Override
  public void close() throws IOException {
    IOException first = null;
    List<String> commands = new ArrayList<>();
    for (String name : hosts.keySet()) {
      commands.add(namespace(name));
    }
    for (String ns : commands) {
      try {
        ip("netns", "delete", ns);
      } catch (IOException e) {
        first = first == null ? e : first;
      }
    }
    try {
      ip("link", "delete", bridge);
    } catch (IOException e) {
      first = first == null ? e : first;
    }
    if (first != null) {
      throw first;
    }
  }

  private static void ip(String... args) throws IOException {
    List<String> cmd = new ArrayList<>();
    cmd.add("ip");
    cmd.addAll(List.of(args));
    Process p;
    try {
      p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
    } catch (IOException e) {
      throw new IOException(String.join(" ", cmd) + ": " + e.getMessage(), e);
    }
    try {
      byte[] out = p.getInputStream().readAllBytes();
      if (!p.waitFor(60, TimeUnit.SECONDS) || p.exitValue() != 0) {
        throw new IOException(
            String.join(" ", cmd) + " failed: " + new String(out, StandardCharsets.UTF_8).strip());
      }
    } catch (InterruptedException e) {
      p.destroyForcibly();
      Thread.currentThread().interrupt();
      throw new IOException(String.join(" ", cmd) + " interrupted", e);
    }
  }
}
