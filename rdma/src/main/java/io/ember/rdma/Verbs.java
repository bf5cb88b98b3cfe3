package io.ember.rdma;

import com.ibm.disni.util.MemoryUtils;
import com.ibm.disni.verbs.IbvMr;
import com.ibm.disni.verbs.IbvPd;
import java.io.IOException;
import java.nio.ByteBuffer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** Memory registration over DiSNI, whose calls must each be freed after use. */
public final class Verbs {
  private static final Logger LOG = LoggerFactory.getLogger(Verbs.class);

  /** Local write and remote read and write: what a buffer the peer moves data into needs. */
  public static final int ACCESS_ALL =
      IbvMr.IBV_ACCESS_LOCAL_WRITE | IbvMr.IBV_ACCESS_REMOTE_READ | IbvMr.IBV_ACCESS_REMOTE_WRITE;

  private Verbs() {}

  /**
   * Registers {@code length} bytes at native address {@code address} with {@code pd}.
   *
   * @throws IOException when the device refuses (out of registrations or pinned memory)
   */
  public static IbvMr register(IbvPd pd, long address, int length, int access) throws IOException {
    var call = pd.regMr(address, length, access);
    try {
      return call.execute().getMr();
    } finally {
      call.free();
    }
  }

  /** Registers the remaining bytes of the direct buffer {@code b}. */
  public static IbvMr register(IbvPd pd, ByteBuffer b, int access) throws IOException {
    return register(pd, MemoryUtils.getAddress(b) + b.position(), b.remaining(), access);
  }

  /** One step of freeing verbs resources; DiSNI declares Exception on some of them. */
  public interface FreeStep {
    void run() throws Exception;
  }

  /**
   * Runs every step in order, each on its own: one that fails (logged at debug, as there is nothing
   * a caller could do) does not keep the others from freeing theirs.
   */
  public static void freeEach(String where, FreeStep... steps) {
    for (FreeStep step : steps) {
      try {
        step.run();
      } catch (Exception e) {
        LOG.debug("{}: freeing an RDMA resource failed: {}", where, e.toString());
      }
    }
  }

  /**
   * Deregisters {@code mr}; after this the peer's accesses with its key fail. Errors are logged:
   * there is nothing a caller could do about them.
   */
  public static void deregister(IbvMr mr) {
    try {
      mr.deregMr().execute().free();
    } catch (IOException e) {
      LOG.debug("deregistering memory failed: {}", e.toString());
    }
  }
}
