package io.ember.nvmf.target;

import io.ember.nvmf.auth.DhGroup;
import io.ember.nvmf.auth.DhchapHash;
import io.ember.nvmf.auth.DhchapSecret;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CountDownLatch;

/**
 * Runs an embedded target from the command line, e.g. for {@code nvme connect -t tcp} from a Linux
 * host:
 *
 * <pre>
 * java -cp ... io.ember.nvmf.target.NvmfTargetMain --listen 0.0.0.0:4420 --nqn nqn.2024-01.io.ember:dev \
 *      --memory 1073741824 [--file /path/img 1073741824] [--block-size 4096] [--allow-host NQN
 *      [--dhchap-secret DHHC-1:..: [--dhchap-ctrl-secret DHHC-1:..:] [--dhchap-hash sha256,sha512]
 *      [--dhchap-group ffdhe2048,null]]]
 * </pre>
 *
 * The {@code --dhchap-*} options make the host named by the {@code --allow-host} before them
 * authenticate in-band (DH-HMAC-CHAP) with that secret, hashes and groups (most preferred first).
 *
 * <p>Prints {@code READY <uri>} once listening and serves until killed.
 */
public final class NvmfTargetMain {
  private NvmfTargetMain() {}

  public static void main(String[] args) throws Exception {
    String listen = "127.0.0.1:4420";
    String nqn = "nqn.2024-01.io.ember:dev";
    int blockSize = 4096;
    java.util.List<String[]> ns = new java.util.ArrayList<>();
    java.util.List<String> hosts = new java.util.ArrayList<>();
    java.util.Map<String, String[]> auth = new java.util.HashMap<>();
    for (int i = 0; i < args.length; i++) {
      switch (args[i]) {
        case "--listen":
          listen = args[++i];
          break;
        case "--nqn":
          nqn = args[++i];
          break;
        case "--block-size":
          blockSize = Integer.parseInt(args[++i]);
          break;
        case "--memory":
          ns.add(new String[] {"memory", args[++i]});
          break;
        case "--file":
          ns.add(new String[] {"file", args[++i], args[++i]});
          break;
        case "--allow-host":
          hosts.add(args[++i]);
          break;
        case "--dhchap-secret":
        case "--dhchap-ctrl-secret":
        case "--dhchap-hash":
        case "--dhchap-group":
          if (hosts.isEmpty()) {
            System.err.println(args[i] + " must follow the --allow-host it applies to");
            System.exit(2);
          }
          String[] a = auth.computeIfAbsent(hosts.get(hosts.size() - 1), h -> new String[4]);
          a[
                  List.of(
                          "--dhchap-secret",
                          "--dhchap-ctrl-secret",
                          "--dhchap-hash",
                          "--dhchap-group")
                      .indexOf(args[i])] =
              args[++i];
          break;
        default:
          System.err.println(
              "unknown argument "
                  + args[i]
                  + "; use --listen host:port --nqn NQN --memory BYTES --file PATH BYTES --block-size N"
                  + " --allow-host NQN [--dhchap-secret S --dhchap-ctrl-secret S --dhchap-hash H,H"
                  + " --dhchap-group G,G]");
          System.exit(2);
      }
    }
    Subsystem s = new Subsystem(nqn);
    if (ns.isEmpty()) {
      ns.add(new String[] {"memory", Long.toString(256L << 20)});
    }
    for (String[] n : ns) {
      if (n[0].equals("memory")) {
        s.addNamespace(new MemoryNamespace(Long.parseLong(n[1]), blockSize));
      } else {
        s.addNamespace(new FileNamespace(Path.of(n[1]), Long.parseLong(n[2]), blockSize, true));
      }
    }
    for (String h : hosts) {
      String[] a = auth.get(h);
      if (a == null) {
        s.allowHost(h);
      } else if (a[0] == null) {
        System.err.println("host " + h + " has DH-HMAC-CHAP options but no --dhchap-secret");
        System.exit(2);
      } else {
        s.allowHost(
            h,
            new HostKeys(
                DhchapSecret.parse(a[0]),
                a[1] == null ? null : DhchapSecret.parse(a[1]),
                a[2] == null ? HostKeys.ALL_HASHES : list(a[2], DhchapHash::byName),
                a[3] == null ? HostKeys.DEFAULT_GROUPS : list(a[3], DhGroup::byName)));
      }
    }
    int colon = listen.lastIndexOf(':');
    NvmfTarget t =
        NvmfTarget.builder()
            .listen(listen.substring(0, colon), Integer.parseInt(listen.substring(colon + 1)))
            .subsystem(s)
            .build()
            .start();
    Runtime.getRuntime().addShutdownHook(new Thread(t::close));
    System.out.println("READY " + t.uri(nqn));
    new CountDownLatch(1).await();
  }

  private static <T> List<T> list(String csv, java.util.function.Function<String, T> parse) {
    List<T> out = new java.util.ArrayList<>();
    for (String v : csv.split(",", -1)) {
      out.add(parse.apply(v));
    }
    return out;
  }
}
