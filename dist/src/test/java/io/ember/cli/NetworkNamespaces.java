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
 * the others by a veth pair on a bridge, in a private /24 used only inside them. The bridge sits in
 * a namespace of its own (a switch), so neither the machine's firewall (Docker's FORWARD DROP, for
 * one) nor its routes touch the traffic, and nothing outside reaches the hosts. Needs root and
 * iproute2.
 */
final class NetworkNamespaces implements AutoCloseable {
  private final String tag;
  private final String subnet;
  private final String switchNamespace;
  private final Map<String, Integer> hosts = new LinkedHashMap<>();

  private NetworkNamespaces() {
    // A tag of its own per run, so leftovers of a killed run never collide with this one.
    tag = String.format("e%04x", ThreadLocalRandom.current().nextInt(0x10000));
    subnet = "10.213." + ThreadLocalRandom.current().nextInt(256) + ".";
    switchNamespace = tag + "-switch";
  }

  /** A new, empty set of hosts; fails, leaving nothing behind, where namespaces cannot be made. */
  static NetworkNamespaces create() throws IOException {
    NetworkNamespaces net = new NetworkNamespaces();
    try {
      ip("netns", "add", net.switchNamespace);
      ip("-n", net.switchNamespace, "link", "add", "name", "sw0", "type", "bridge");
      ip("-n", net.switchNamespace, "link", "set", "sw0", "up");
    } catch (IOException e) {
      try {
        net.close();
      } catch (IOException cleaning) {
        e.addSuppressed(cleaning);
      }
      throw e;
    }
    return net;
  }

  /**
   * Why this machine cannot make hosts of network namespaces (not root, no iproute2, no bridge or
   * veth support), or null when it can.
   */
  static String unavailable() {
    try (NetworkNamespaces probe = create()) {
      probe.add("probe");
      return null;
    } catch (IOException e) {
      return "network namespaces cannot be made here (needs root and iproute2): " + e.getMessage();
    }
  }

  /** Adds host {@code name} and returns its address. */
  String add(String name) throws IOException {
    int index = hosts.size();
    String ns = namespace(name);
    String address = subnet + (10 + index);
    ip("netns", "add", ns);
    hosts.put(name, index);
    // The pair is made in the host's namespace and its outer end moved to the switch, so no
    // interface of the machine's own namespace is ever involved.
    ip("-n", ns, "link", "add", "eth0", "type", "veth", "peer", "name", port(index));
    ip("-n", ns, "link", "set", port(index), "netns", switchNamespace);
    ip("-n", switchNamespace, "link", "set", port(index), "master", "sw0");
    ip("-n", switchNamespace, "link", "set", port(index), "up");
    ip("-n", ns, "addr", "add", address + "/24", "dev", "eth0");
    ip("-n", ns, "link", "set", "eth0", "up");
    ip("-n", ns, "link", "set", "lo", "up");
    return address;
  }

  /** The command prefix that runs a command on host {@code name}. */
  List<String> on(String name) {
    return List.of("ip", "netns", "exec", namespace(name));
  }

  /** Cuts host {@code name} off the bridge (its cable pulled): packets to and from it are lost. */
  void cut(String name) throws IOException {
    ip("-n", switchNamespace, "link", "set", port(index(name)), "down");
  }

  /** Puts host {@code name} back on the bridge. */
  void mend(String name) throws IOException {
    ip("-n", switchNamespace, "link", "set", port(index(name)), "up");
  }

  private static String port(int index) {
    return "p" + index;
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

  /** Deletes every namespace, the switch's last: the veth pairs and the bridge go with them. */
  @Override
  public void close() throws IOException {
    IOException first = null;
    List<String> namespaces = new ArrayList<>();
    for (String name : hosts.keySet()) {
      namespaces.add(namespace(name));
    }
    namespaces.add(switchNamespace);
    for (String ns : namespaces) {
      try {
        ip("netns", "delete", ns);
      } catch (IOException e) {
        if (first == null) {
          first = e;
        } else {
          first.addSuppressed(e);
        }
      }
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
