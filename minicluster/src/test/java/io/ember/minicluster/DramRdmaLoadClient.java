package io.ember.minicluster;

import io.ember.client.EmberClient;
import io.ember.client.EmberInputStream;

/**
 * A client process for {@link DramRdmaSafetyTest}: reads the file named by its second argument from
 * the name node named by its first, over and over, says RUNNING once reads flow, and goes on until
 * it is killed.
 */
public final class DramRdmaLoadClient {
  private DramRdmaLoadClient() {}

  public static void main(String[] args) throws Exception {
    EmberClient c = EmberClient.connect(args[0]);
    if (args.length > 2 && args[2].equals("once")) {
      // Read the whole file once and say what it holds.
      try (EmberInputStream in = c.open(args[1])) {
        byte[] all = in.readAllBytes();
        System.out.println("READ " + all.length + " " + java.util.Arrays.hashCode(all));
      }
      c.close();
      return;
    }
    byte[] buf = new byte[64 * 1024];
    try (EmberInputStream in = c.open(args[1])) {
      long length = c.lookup(args[1]).length();
      for (long i = 0; ; i++) {
        in.readFully((i * buf.length) % (length - buf.length + 1), buf, 0, buf.length);
        if (i == 100) {
          System.out.println("RUNNING");
          System.out.flush();
        }
      }
    }
  }
}
