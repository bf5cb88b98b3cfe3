package io.ember.nvmf;

import java.net.URI;
import java.net.URISyntaxException;

/**
 * Where an NVMe-oF subsystem lives: {@code nvmf+tcp://host:port/subnqn[/nsid]} or {@code
 * nvmf+rdma://host:port/subnqn[/nsid]}. The port defaults to 4420, the nsid to 0 (meaning: every
 * active namespace). NQNs contain ':' and '.', never '/', so the path splits unambiguously.
 *
 * @param transport {@code "tcp"} or {@code "rdma"}
 * @param host host name or IP address
 * @param port TCP port (or RDMA CM port)
 * @param subsystemNqn the subsystem NQN
 * @param nsid a namespace id, or 0 for all
 */
public record NvmfUri(String transport, String host, int port, String subsystemNqn, int nsid) {
  /** The IANA-assigned NVMe-oF port. */
  public static final int DEFAULT_PORT = 4420;

  /**
   * Parses a URI.
   *
   * @throws IllegalArgumentException naming what is wrong with {@code uri}
   */
  public static NvmfUri parse(String uri) {
    URI u;
    try {
      u = new URI(uri);
    } catch (URISyntaxException e) {
      throw new IllegalArgumentException(
          "not an NVMe-oF URI (nvmf+tcp://host:port/subnqn[/nsid]): " + uri, e);
    }
    String scheme = u.getScheme();
    if (scheme == null || !(scheme.equals("nvmf+tcp") || scheme.equals("nvmf+rdma"))) {
      throw new IllegalArgumentException("scheme must be nvmf+tcp or nvmf+rdma in " + uri);
    }
    if (u.getHost() == null) {
      throw new IllegalArgumentException("no host in " + uri);
    }
    String path = u.getPath() == null ? "" : u.getPath();
    while (path.startsWith("/")) {
      path = path.substring(1);
    }
    if (path.isEmpty()) {
      throw new IllegalArgumentException("no subsystem NQN in the path of " + uri);
    }
    int nsid = 0;
    int slash = path.indexOf('/');
    String nqn = path;
    if (slash >= 0) {
      nqn = path.substring(0, slash);
      String rest = path.substring(slash + 1);
      if (!rest.isEmpty()) {
        try {
          nsid = Integer.parseUnsignedInt(rest);
        } catch (NumberFormatException e) {
          throw new IllegalArgumentException(
              "namespace id '" + rest + "' is not a number in " + uri, e);
        }
      }
    }
    if (nqn.length() > 223) {
      throw new IllegalArgumentException("subsystem NQN longer than 223 bytes in " + uri);
    }
    String host = u.getHost();
    if (host.startsWith("[") && host.endsWith("]")) {
      host = host.substring(1, host.length() - 1); // IPv6 literal
    }
    return new NvmfUri(
        scheme.substring(5), host, u.getPort() < 0 ? DEFAULT_PORT : u.getPort(), nqn, nsid);
  }

  @Override
  public String toString() {
    return "nvmf+"
        + transport
        + "://"
        + (host.contains(":") ? "[" + host + "]" : host)
        + ":"
        + port
        + "/"
        + subsystemNqn
        + (nsid != 0 ? "/" + Integer.toUnsignedString(nsid) : "");
  }
}
