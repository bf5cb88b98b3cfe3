package io.ember.tier.nvmf;

import io.ember.nvmf.IdentifyNamespace;
import io.ember.nvmf.NvmfQueue;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.zip.CRC32C;

/**
 * The registration an NVMf data node serves, recorded in its namespace's last LBA, outside every
 * block. Clients talk to the target without the data node, so the target itself must tell them
 * whose blocks it holds: a target that came back empty, and whose data node registered anew, has a
 * new stamp, and a client holding a location of the old registration sees that before it reads
 * another file's bytes or writes over them.
 *
 * <p>Layout: 8 bytes {@code EMBRINC1}, the incarnation (8 bytes, big-endian), CRC32C of those 16
 * bytes (4 bytes), zeroes to the end of the LBA.
 */
public final class TargetStamp {
  /**
   * How long a client acts on a stamp it read before reading it again. A data node that replaces a
   * stamp waits twice this before it registers, so no client still holds the old one by then.
   */
  public static final Duration TRUSTED_FOR = Duration.ofSeconds(1);

  /** {@link #TRUSTED_FOR}, for the check every command makes. */
  static final long TRUSTED_FOR_NANOS = TRUSTED_FOR.toNanos();

  private static final byte[] MAGIC = "EMBRINC1".getBytes(StandardCharsets.US_ASCII);

  private TargetStamp() {}

  /** The LBA that holds the stamp: the namespace's last. */
  public static long lba(IdentifyNamespace ns) {
    return ns.size() - 1;
  }

  /**
   * Reads the stamp; completes with the recorded incarnation, or 0 when the LBA holds none, or
   * fails as the read does.
   */
  public static CompletableFuture<Long> read(NvmfQueue queue, IdentifyNamespace ns) {
    ByteBuffer lba = ByteBuffer.allocateDirect(ns.blockSize());
    return queue.read(ns.nsid(), lba(ns), lba).thenApply(v -> decode(lba));
  }

  /** Records {@code incarnation} on the target; fails as the write does. */
  public static CompletableFuture<Void> write(
      NvmfQueue queue, IdentifyNamespace ns, long incarnation) {
    return queue.write(ns.nsid(), lba(ns), encode(incarnation, ns.blockSize()));
  }

  static ByteBuffer encode(long incarnation, int lbaSize) {
    ByteBuffer b = ByteBuffer.allocateDirect(lbaSize);
    b.put(MAGIC).putLong(incarnation);
    b.putInt(crc(b, 16));
    return b.clear();
  }

  static long decode(ByteBuffer lba) {
    if (lba.capacity() < 20) {
      return 0;
    }
    for (int i = 0; i < MAGIC.length; i++) {
      if (lba.get(i) != MAGIC[i]) {
        return 0;
      }
    }
    return lba.getInt(16) == crc(lba, 16) ? lba.getLong(8) : 0;
  }

  private static int crc(ByteBuffer b, int length) {
    CRC32C crc = new CRC32C();
    crc.update(b.duplicate().clear().limit(length));
    return (int) crc.getValue();
  }
}
