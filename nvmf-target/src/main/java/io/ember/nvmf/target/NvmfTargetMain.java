package io.ember.nvmf.target;

import java.nio.file.Path;
import java.util.concurrent.CountDownLatch;

/**
 * Runs an embedded target from the command line, e.g. for {@code nvme connect -t tcp} from a Linux
 * host:
 *
 * <pre>
 * java -cp ... io.ember.nvmf.target.NvmfTargetMain --listen 0.0.0.0:4420 --nqn nqn.2024-01.io.ember:dev \
 *      --memory 1073741824 [--file /path/img 1073741824] [--block-size 4096] [--allow-host NQN]
 * </pre>
 *
 * Prints {@code READY <uri>} once listening and serves until killed.
 */
public final class NvmfTargetMain {
  private NvmfTargetMain() {}

  public static void main(String[] args) throws Exception {
    String listen = "127.0.0.1:4420";
    String nqn = "nqn.2024-01.io.ember:dev";
    int blockSize = 4096;
    java.util.List<String[]> ns = new java.util.ArrayList<>();
    java.util.List<String> hosts = new java.util.ArrayList<>();
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
        default:
          System.err.println(
              "unknown argument "
                  + args[i]
                  + "; use --listen host:port --nqn NQN --memory BYTES --file PATH BYTES --block-size N"
                  + " --allow-host NQN");
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
    hosts.forEach(s::allowHost);
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
}
