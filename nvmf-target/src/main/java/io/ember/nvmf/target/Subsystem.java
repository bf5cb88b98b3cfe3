package io.ember.nvmf.target;

import java.util.Collections;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentSkipListMap;

/**
 * An NVM subsystem of the embedded target: an NQN, namespaces by NSID and the host NQNs allowed to
 * connect (none listed: any host). Configure before the target starts; namespaces are not
 * hot-plugged.
 */
public final class Subsystem {
  private final String nqn;
  private final ConcurrentSkipListMap<Integer, Namespace> namespaces =
      new ConcurrentSkipListMap<>();
  private final Set<String> allowedHosts = ConcurrentHashMap.newKeySet();

  /**
   * Hosts that authenticate in-band and their keys: an immutable map, replaced whole, so a connect
   * sees one consistent answer to whether it may connect and what it must prove.
   */
  private volatile Map<String, HostKeys> hostKeys = Map.of();

  private String serial;
  private String model = "Ember embedded NVMe/TCP target";

  /**
   * @param nqn the subsystem NQN, e.g. {@code nqn.2024-01.io.ember:ns1}; at most 223 bytes
   * @throws IllegalArgumentException when the NQN is empty, too long or the discovery NQN
   */
  public Subsystem(String nqn) {
    if (nqn.isEmpty() || nqn.length() > 223) {
      throw new IllegalArgumentException("subsystem NQN must be 1..223 bytes: '" + nqn + "'");
    }
    if (nqn.equals(io.ember.nvmf.spec.Nvme.DISCOVERY_NQN)) {
      throw new IllegalArgumentException("the discovery NQN is served by the target itself");
    }
    this.nqn = nqn;
    this.serial = Integer.toHexString(nqn.hashCode());
  }

  public String nqn() {
    return nqn;
  }

  /**
   * Adds {@code ns} under the next free NSID and returns that NSID. The target owns it from now on.
   */
  public synchronized int addNamespace(Namespace ns) {
    int id = 1;
    while (namespaces.containsKey(id)) {
      id++;
    }
    namespaces.put(id, ns);
    return id;
  }

  /**
   * Adds {@code ns} as NSID {@code nsid}. @throws IllegalArgumentException if taken or 0/FFFFFFFFh
   */
  public synchronized Subsystem namespace(int nsid, Namespace ns) {
    if (nsid == 0 || nsid == -1 || namespaces.containsKey(nsid)) {
      throw new IllegalArgumentException(
          "NSID " + Integer.toUnsignedString(nsid) + " is reserved or taken");
    }
    namespaces.put(nsid, ns);
    return this;
  }

  /**
   * Set once any host is listed, and never cleared: a subsystem limited to some hosts does not open
   * to every host because its list was emptied.
   */
  private volatile boolean restricted;

  /** Allows host {@code hostNqn}; once any host is listed, only listed hosts may connect. */
  public Subsystem allowHost(String hostNqn) {
    restricted = true;
    allowedHosts.add(hostNqn);
    return this;
  }

  /**
   * Allows host {@code hostNqn} only after it authenticates in-band with {@code keys}
   * (DH-HMAC-CHAP): the target asks for authentication in its Connect answer and refuses every
   * other command until the host has proven it holds its secret.
   */
  public synchronized Subsystem allowHost(String hostNqn, HostKeys keys) {
    restricted = true;
    Map<String, HostKeys> next = new HashMap<>(hostKeys);
    next.put(hostNqn, keys);
    hostKeys = Map.copyOf(next);
    return this;
  }

  /**
   * Makes {@code keys} the hosts that authenticate in-band and what each must prove, in place of
   * those given before, in one step: a host left out may no longer connect (unless {@link
   * #allowHost(String)} allowed it without a key), and a changed key is the one asked for from the
   * next queue that connects on. Queues already connected stay connected. The subsystem stays
   * limited to its listed hosts, even when {@code keys} is empty.
   */
  public synchronized Subsystem replaceHostKeys(Map<String, HostKeys> keys) {
    restricted = true;
    hostKeys = Map.copyOf(keys);
    return this;
  }

  /** Whether a host may connect, and what it must prove first ({@code keys} null: nothing). */
  public record Admission(boolean allowed, HostKeys keys) {}

  /** Whether {@code hostNqn} may connect and with which keys, from one view of the host list. */
  public Admission admission(String hostNqn) {
    HostKeys keys = hostKeys.get(hostNqn);
    return new Admission(!restricted || keys != null || allowedHosts.contains(hostNqn), keys);
  }

  /** Serial number reported by Identify Controller (at most 20 ASCII characters). */
  public Subsystem serial(String v) {
    this.serial = v;
    return this;
  }

  /** Model number reported by Identify Controller (at most 40 ASCII characters). */
  public Subsystem model(String v) {
    this.model = v;
    return this;
  }

  public String serial() {
    return serial;
  }

  public String model() {
    return model;
  }

  /** Whether {@code hostNqn} may connect. */
  public boolean allows(String hostNqn) {
    return admission(hostNqn).allowed();
  }

  /** Namespaces by NSID (read-only view). */
  public synchronized Map<Integer, Namespace> namespaces() {
    return Collections.unmodifiableMap(new TreeMap<>(namespaces));
  }

  Namespace get(int nsid) {
    return namespaces.get(nsid);
  }

  int maxNsid() {
    return namespaces.isEmpty() ? 0 : namespaces.lastKey();
  }
}
