package io.ember.nvmf.host;

import io.ember.nvmf.IdentifyNamespace;
import io.ember.nvmf.NvmfCallback;
import io.ember.nvmf.NvmfController;
import io.ember.nvmf.NvmfException;
import io.ember.nvmf.NvmfQueue;
import io.ember.nvmf.spec.Nvme;
import io.ember.nvmf.spec.Sqe;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * The NVM command set over any transport: turns reads, writes, flushes, deallocations and Write
 * Zeroes into submission queue entries, splitting transfers larger than the controller takes, and
 * hands each to {@link #submitCommand}.
 */
public abstract class CommandQueue implements NvmfQueue {
  private final NvmfController controller;

  /** A queue of {@code controller}, whose namespaces and largest transfer it obeys. */
  protected CommandQueue(NvmfController controller) {
    this.controller = controller;
  }

  /**
   * Sends one command; its completion (or the transport's failure) reaches {@code cb} exactly once.
   *
   * @param sqe the command, without CID, PSDT or SGL (the transport sets them)
   * @param data the transfer already sliced to its bytes, or null
   * @param dataOut whether {@code data} goes to the controller
   */
  protected abstract void submitCommand(Sqe sqe, ByteBuffer data, boolean dataOut, NvmfCallback cb);

  private void rw(int opcode, int nsid, long slba, ByteBuffer buf, NvmfCallback cb) {
    IdentifyNamespace ns = controller.namespace(nsid);
    int bs = ns.blockSize();
    int len = buf.remaining();
    if (len == 0 || len % bs != 0) {
      throw new IllegalArgumentException(
          "transfer of "
              + len
              + " bytes is not a positive multiple of the "
              + bs
              + "-byte block size of namespace "
              + nsid);
    }
    // NLB is a 16-bit 0's based field: 65536 blocks per command at most, whatever MDTS allows.
    int max = (int) Math.min(controller.maxTransferSize(), 65536L * bs) / bs * bs;
    int pos = buf.position();
    boolean out = opcode == Nvme.IO_WRITE;
    if (len <= max) {
      submitCommand(rwSqe(opcode, nsid, slba, len / bs), buf.slice(pos, len), out, cb);
      return;
    }
    int parts = (len + max - 1) / max;
    SplitCallback split = new SplitCallback(parts, cb);
    for (int off = 0; off < len; off += max) {
      int n = Math.min(max, len - off);
      submitCommand(
          rwSqe(opcode, nsid, slba + off / bs, n / bs), buf.slice(pos + off, n), out, split);
    }
  }

  private static Sqe rwSqe(int opcode, int nsid, long slba, int nlb) {
    return new Sqe()
        .opcode(opcode)
        .nsid(nsid)
        .cdw(10, (int) slba)
        .cdw(11, (int) (slba >>> 32))
        .cdw(12, nlb - 1);
  }

  @Override
  public void read(int nsid, long slba, ByteBuffer dst, NvmfCallback callback) {
    if (dst.isReadOnly()) {
      throw new IllegalArgumentException("read into a read-only buffer");
    }
    rw(Nvme.IO_READ, nsid, slba, dst, callback);
  }

  @Override
  public void write(int nsid, long slba, ByteBuffer src, NvmfCallback callback) {
    rw(Nvme.IO_WRITE, nsid, slba, src, callback);
  }

  @Override
  public void flush(int nsid, NvmfCallback callback) {
    submitCommand(new Sqe().opcode(Nvme.IO_FLUSH).nsid(nsid), null, false, callback);
  }

  @Override
  public void deallocate(int nsid, long slba, long nlb, NvmfCallback callback) {
    controller.namespace(nsid); // refuses an inactive namespace at once
    if (nlb <= 0) {
      throw new IllegalArgumentException("deallocate of " + nlb + " blocks");
    }
    // One range descriptor holds up to 2^32-1 blocks; up to 256 descriptors per command.
    int ranges = (int) ((nlb + 0xFFFFFFFEL) / 0xFFFFFFFFL);
    if (ranges > 256) {
      throw new IllegalArgumentException(
          "deallocate of " + nlb + " blocks needs more than 256 ranges");
    }
    ByteBuffer d = ByteBuffer.allocateDirect(16 * ranges).order(ByteOrder.LITTLE_ENDIAN);
    long lba = slba;
    long left = nlb;
    for (int i = 0; i < ranges; i++) {
      long n = Math.min(left, 0xFFFFFFFFL);
      d.putInt(0).putInt((int) n).putLong(lba);
      lba += n;
      left -= n;
    }
    d.flip();
    Sqe sqe = new Sqe().opcode(Nvme.IO_DSM).nsid(nsid).cdw(10, ranges - 1).cdw(11, 1 << 2);
    submitCommand(sqe, d, true, callback);
  }

  @Override
  public void writeZeroes(int nsid, long slba, long nlb, NvmfCallback callback) {
    controller.namespace(nsid); // refuses an inactive namespace at once
    if (nlb <= 0) {
      throw new IllegalArgumentException("write zeroes of " + nlb + " blocks");
    }
    int parts = (int) ((nlb + 65535) / 65536);
    NvmfCallback cb = parts == 1 ? callback : new SplitCallback(parts, callback);
    for (long off = 0; off < nlb; off += 65536) {
      int n = (int) Math.min(65536, nlb - off);
      long lba = slba + off;
      submitCommand(
          new Sqe()
              .opcode(Nvme.IO_WRITE_ZEROES)
              .nsid(nsid)
              .cdw(10, (int) lba)
              .cdw(11, (int) (lba >>> 32))
              .cdw(12, n - 1),
          null,
          false,
          cb);
    }
  }

  /** Completes the caller once every part completed; reports the first failure. */
  private static final class SplitCallback implements NvmfCallback {
    private final NvmfCallback target;
    private int left;
    private NvmfException first;

    SplitCallback(int parts, NvmfCallback target) {
      this.left = parts;
      this.target = target;
    }

    @Override
    public void complete(NvmfException error) {
      NvmfException report;
      synchronized (this) {
        if (error != null && first == null) {
          first = error;
        }
        if (--left > 0) {
          return;
        }
        report = first;
      }
      target.complete(report);
    }
  }
}
