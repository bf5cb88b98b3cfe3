package io.ember.nvmf.rdma;

import io.ember.nvmf.NvmfController;
import io.ember.nvmf.NvmfHost;
import io.ember.nvmf.NvmfHostOptions;
import java.nio.ByteBuffer;
import java.util.concurrent.Semaphore;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A client process for {@link RdmaTargetFailureTest}: connects to the RDMA target named by its
 * argument, keeps 32 writes in flight, says RUNNING once they flow, and goes on until it is killed.
 */
public final class RdmaLoadClient {
  private RdmaLoadClient() {}

  public static void main(String[] args) throws Exception {
    NvmfController c =
        NvmfHost.connect(args[0], NvmfHostOptions.builder().ioQueues(2).ioQueueSize(32).build());
    int nsid = c.namespaces().get(0).nsid();
    int bs = c.namespaces().get(0).blockSize();
    Semaphore window = new Semaphore(32);
    AtomicLong done = new AtomicLong();
    boolean said = false;
    for (long i = 0; ; i++) {
      window.acquire();
      ByteBuffer b = ByteBuffer.allocateDirect(8192);
      var unused =
          c.ioQueue((int) (i % 2))
              .write(nsid, (i % 512) * 8192 / bs, b)
              .whenComplete(
                  (v, err) -> {
                    window.release();
                    done.incrementAndGet();
                  });
      if (!said && done.get() >= 200) {
        System.out.println("RUNNING");
        System.out.flush();
        said = true;
      }
    }
  }
}
