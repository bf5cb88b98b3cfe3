package io.ember.nvmf.target;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.ember.nvmf.LeakCheck;
import io.ember.nvmf.RawHost;
import io.ember.nvmf.spec.Nvme;
import io.ember.nvmf.spec.Sqe;
import io.ember.nvmf.tcp.Pdu;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * When the target's PDUs reach the socket, seen on channels whose read batches the test ends by
 * hand: a host sends a write's data only once its R2T arrives, so a large write's R2T does not wait
 * for the rest of the batch, while a small write's goes with the batch's other PDUs.
 */
@ExtendWith(LeakCheck.class)
class TargetConnectionFlushTest {
  private static final String NQN = "nqn.2024-01.io.ember:flush";
  private static final String HOST = "nqn.2024-01.io.ember:flush-host";
  private static final int BS = 512;

  private final NvmfTarget target =
      NvmfTarget.builder().listen("127.0.0.1", 0).subsystem(subsystem()).build();
  private final EmbeddedChannel admin = new EmbeddedChannel();
  private final EmbeddedChannel io = new EmbeddedChannel();

  private static Subsystem subsystem() {
    Subsystem s = new Subsystem(NQN);
    s.addNamespace(new MemoryNamespace(1 << 20, BS));
    return s;
  }

  @AfterEach
  void close() {
    io.finishAndReleaseAll();
    admin.finishAndReleaseAll();
    target.close();
  }

  @Test
  void theR2tOfALargeWriteGoesOutBeforeTheReadBatchEnds() {
    connectIoQueue();
    io.pipeline()
        .fireChannelRead(Unpooled.wrappedBuffer(write(TargetConnection.R2T_AT_ONCE_BYTES)));
    assertEquals(List.of(Pdu.T_R2T), sentTypes(io), "sent while the read batch is still going");
    io.pipeline().fireChannelReadComplete();
    assertEquals(List.of(), sentTypes(io), "nothing was left for the batch's end");
  }

  @Test
  void theR2tOfASmallWriteWaitsForTheBatchsEnd() {
    connectIoQueue();
    io.pipeline()
        .fireChannelRead(Unpooled.wrappedBuffer(write(TargetConnection.R2T_AT_ONCE_BYTES - BS)));
    assertEquals(List.of(), sentTypes(io), "goes with the batch's other PDUs");
    io.pipeline().fireChannelReadComplete();
    assertEquals(List.of(Pdu.T_R2T), sentTypes(io));
  }

  /** A write of {@code bytes} at block 0 whose data the target must ask for. */
  private static byte[] write(int bytes) {
    return RawHost.capsule(
        new Sqe()
            .opcode(Nvme.IO_WRITE)
            .flags(Nvme.PSDT_SGL)
            .cid(7)
            .nsid(1)
            .cdw(12, bytes / BS - 1)
            .sgl(0, bytes, Nvme.SGL_TRANSPORT),
        null);
  }

  /**
   * Connects and enables a controller on {@link #admin}, then connects an I/O queue on {@link #io}.
   */
  private void connectIoQueue() {
    int cntlid = connect(admin, 0, 0xFFFF);
    admin.writeInbound(Unpooled.wrappedBuffer(RawHost.capsule(RawHost.enableSqe(), null)));
    assertEquals(List.of(Pdu.T_CAPSULE_RESP), sentTypes(admin));
    connect(io, 1, cntlid);
  }

  /**
   * Serves {@code channel} and connects it as queue {@code qid} of controller {@code cntlid};
   * returns the controller's ID from the Connect's answer.
   */
  private int connect(EmbeddedChannel channel, int qid, int cntlid) {
    TargetConnection.install(target, channel);
    channel.writeInbound(
        Unpooled.wrappedBuffer(
            RawHost.icReq(false, false),
            RawHost.capsule(RawHost.connectSqe(qid, 0), RawHost.connectData(NQN, HOST, cntlid))));
    ByteBuf answers = sent(channel);
    try {
      answers.skipBytes(128); // ICResp
      int at = answers.readerIndex();
      assertEquals(Pdu.T_CAPSULE_RESP, answers.getUnsignedByte(at));
      assertEquals(0, answers.getUnsignedShortLE(at + 22) >> 1, "Connect of queue " + qid);
      return answers.getUnsignedShortLE(at + 8);
    } finally {
      answers.release();
    }
  }

  /** What was flushed to {@code channel} since the last look, as one buffer. */
  private static ByteBuf sent(EmbeddedChannel channel) {
    ByteBuf all = Unpooled.buffer();
    for (ByteBuf b; (b = channel.readOutbound()) != null; ) {
      all.writeBytes(b);
      b.release();
    }
    return all;
  }

  /** The types of the PDUs flushed to {@code channel} since the last look, in order. */
  private static List<Integer> sentTypes(EmbeddedChannel channel) {
    List<Integer> types = new ArrayList<>();
    ByteBuf all = sent(channel);
    try {
      while (all.isReadable()) {
        types.add((int) all.getUnsignedByte(all.readerIndex()));
        all.skipBytes((int) all.getUnsignedIntLE(all.readerIndex() + 4));
      }
    } finally {
      all.release();
    }
    return types;
  }
}
