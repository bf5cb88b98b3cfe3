package io.ember.tier.dram;

import io.ember.protocol.EmberException;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.util.concurrent.TimeUnit;

/**
 * One-sided RDMA reads and writes with a key of the test's choosing, as a client that went past the
 * client library would post them: for tests that a key does only what its grant allowed. Each call
 * makes its own connection, since a refused key ends the one it was used on.
 */
public final class RdmaProbe {
  private static final long TIMEOUT_NANOS = TimeUnit.SECONDS.toNanos(60);

  private RdmaProbe() {}

  /** Reads {@code length} bytes at {@code remoteAddress} with {@code rkey}. */
  public static byte[] read(InetSocketAddress at, long remoteAddress, int rkey, int length)
      throws EmberException {
    RdmaLink link = RdmaLink.connect(at, "probed data node", TIMEOUT_NANOS);
    try {
      ByteBuffer dst = ByteBuffer.allocateDirect(length);
      io.ember.protocol.Futures.await(
          link.read(remoteAddress, rkey, dst, () -> "probe read of " + length + " bytes"));
      byte[] got = new byte[length];
      dst.get(0, got); // the link fills a duplicate: dst's position stays put
      return got;
    } finally {
      link.close("the probe is done");
    }
  }

  /**
   * Writes {@code bytes} at {@code remoteAddress} with {@code rkey}, with the write notice {@code
   * notice} (incarnation, block id, generation, address).
   */
  public static void write(
      InetSocketAddress at, long remoteAddress, int rkey, byte[] bytes, long[] notice)
      throws EmberException {
    RdmaLink link = RdmaLink.connect(at, "probed data node", TIMEOUT_NANOS);
    ByteBuf data = Unpooled.directBuffer(bytes.length).writeBytes(bytes);
    try {
      io.ember.protocol.Futures.await(
          link.write(
              remoteAddress,
              rkey,
              data,
              notice,
              () -> "probe write of " + bytes.length + " bytes"));
    } finally {
      data.release();
      link.close("the probe is done");
    }
  }
}
