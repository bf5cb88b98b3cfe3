package io.ember.protocol;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * Every message round-trips, and every truncation or lie about a length fails with
 * MalformedFrameException, never another exception and never a large allocation.
 */
class MessagesTest {
  interface Decoder {
    Object decode(ByteBuf in) throws EmberException;
  }

  private static final NodeStatus STATUS =
      new NodeStatus(7, NodeType.FILE, 123, 2, 1 << 20, StorageClass.DRAM, 99, false);
  private static final BlockLocation BLOCK =
      new BlockLocation(
          3, 17, 9, 2, -5L, StorageClass.NVMF, "dram", "127.0.0.1:4000", 1 << 20, 1 << 20, true);

  private static final BlockKey KEY = new BlockKey(7, 1234567, new byte[BlockKey.SECRET_BYTES]);
  private static final BlockKey KEY2 = new BlockKey(8, 7654321, filled(9));

  private static byte[] filled(int value) {
    byte[] b = new byte[BlockKey.SECRET_BYTES];
    java.util.Arrays.fill(b, (byte) value);
    return b;
  }

  private static final BlockToken TOKEN =
      BlockToken.sign(7, new byte[32], BLOCK, BlockToken.READ | BlockToken.WRITE, 99, "alice");

  private static final List<Object[]> CASES =
      List.of(
          new Object[] {
            new Messages.CreateRequest("/a/b", NodeType.MULTIFILE, StorageClass.NVMF, true),
            (Decoder) Messages.CreateRequest::decode
          },
          new Object[] {
            new Messages.CreateRequest(
                "/a/f", NodeType.FILE, StorageClass.DRAM, false, "ember-client@host-1", true, true),
            (Decoder) Messages.CreateRequest::decode
          },
          new Object[] {
            new Messages.CreateResponse(STATUS, BLOCK), (Decoder) Messages.CreateResponse::decode
          },
          new Object[] {
            new Messages.RenewLeaseRequest(
                "ember-client@host-1",
                List.of(new Messages.WrittenLength(7, 1 << 20), new Messages.WrittenLength(9, 0))),
            (Decoder) Messages.RenewLeaseRequest::decode
          },
          new Object[] {
            new Messages.RenewLeaseResponse(60_000, List.of(7L, 11L)),
            (Decoder) Messages.RenewLeaseResponse::decode
          },
          new Object[] {
            new Messages.AbandonFileRequest(42), (Decoder) Messages.AbandonFileRequest::decode
          },
          new Object[] {
            new Messages.CreateRequest(
                "/a/p", NodeType.DIRECTORY, StorageClass.DRAM, true, "", false, false, 01750),
            (Decoder) Messages.CreateRequest::decode
          },
          new Object[] {
            new Messages.SetAttributesRequest("/a/p", "alice", "staff", 0640),
            (Decoder) Messages.SetAttributesRequest::decode
          },
          new Object[] {
            new Messages.SetAttributesRequest("/a/p", "", "", Permissions.DEFAULT),
            (Decoder) Messages.SetAttributesRequest::decode
          },
          new Object[] {
            new NodeStatus(
                7,
                NodeType.DIRECTORY,
                0,
                0,
                4096,
                StorageClass.DRAM,
                99,
                false,
                "",
                0,
                "alice",
                "staff",
                01777),
            (Decoder) NodeStatus::decode
          },
          new Object[] {new Messages.PathRequest("/é/ü"), (Decoder) Messages.PathRequest::decode},
          new Object[] {
            new Messages.ListRequest("/d", "after", 10), (Decoder) Messages.ListRequest::decode
          },
          new Object[] {
            new Messages.ListResponse(
                List.of(new Messages.DirEntry("x", STATUS), new Messages.DirEntry("y", STATUS)),
                true),
            (Decoder) Messages.ListResponse::decode
          },
          new Object[] {
            new Messages.DeleteRequest("/d", true), (Decoder) Messages.DeleteRequest::decode
          },
          new Object[] {
            new Messages.RenameRequest("/a", "/b"), (Decoder) Messages.RenameRequest::decode
          },
          new Object[] {
            new Messages.AllocateBlockRequest(5, 6), (Decoder) Messages.AllocateBlockRequest::decode
          },
          new Object[] {
            new Messages.AllocateBlocksRequest(5, 6, 16),
            (Decoder) Messages.AllocateBlocksRequest::decode
          },
          new Object[] {
            new Messages.GetBlocksRequest(5, 0, 64), (Decoder) Messages.GetBlocksRequest::decode
          },
          new Object[] {
            new Messages.BlocksResponse(List.of(BLOCK, BLOCK)),
            (Decoder) Messages.BlocksResponse::decode
          },
          new Object[] {
            new Messages.OpenRequest("/o/p", 64), (Decoder) Messages.OpenRequest::decode
          },
          new Object[] {
            new Messages.OpenResponse(STATUS, List.of(BLOCK, BLOCK)),
            (Decoder) Messages.OpenResponse::decode
          },
          new Object[] {
            new Messages.CloseFileRequest(5, 1000), (Decoder) Messages.CloseFileRequest::decode
          },
          new Object[] {
            new Messages.DfResponse(
                List.of(new Messages.ClassUsage(StorageClass.DRAM, 1 << 20, 100, 40, 2, 1))),
            (Decoder) Messages.DfResponse::decode
          },
          new Object[] {
            new Messages.DatanodesResponse(
                List.of(
                    new Messages.DatanodeInfo(
                        3,
                        StorageClass.DRAM,
                        "dram",
                        "h:1",
                        "live",
                        -9L,
                        1 << 20,
                        64L << 20,
                        3L << 20,
                        61L << 20,
                        120,
                        2,
                        1),
                    new Messages.DatanodeInfo(
                        4,
                        StorageClass.NVMF,
                        "nvmf",
                        "nvmf+tcp://h:4420/n/1",
                        "lost",
                        5L,
                        1 << 20,
                        1L << 30,
                        0,
                        0,
                        99_000,
                        0,
                        0))),
            (Decoder) Messages.DatanodesResponse::decode
          },
          new Object[] {
            new Messages.RegisterRequest(
                StorageClass.DRAM, "dram", "h:1", 1L << 30, true, -77L, true),
            (Decoder) Messages.RegisterRequest::decode
          },
          new Object[] {
            new Messages.RegisterResponse(4, 1 << 20, 1024),
            (Decoder) Messages.RegisterResponse::decode
          },
          new Object[] {
            new Messages.RegisterResponse(4, 1 << 20, 1024, List.of(KEY, KEY2)),
            (Decoder) Messages.RegisterResponse::decode
          },
          new Object[] {
            new Messages.HeartbeatResponse(List.of(5L), List.of(KEY)),
            (Decoder) Messages.HeartbeatResponse::decode
          },
          new Object[] {
            new Messages.BlockReadRequest(-3L, 17, 9, 4096, 512, TOKEN),
            (Decoder) Messages.BlockReadRequest::decode
          },
          new Object[] {
            new Messages.BlockGrantRequest(-3L, 17, 9, 4096, false, TOKEN),
            (Decoder) Messages.BlockGrantRequest::decode
          },
          new Object[] {BLOCK.withToken(TOKEN), (Decoder) BlockLocation::decode},
          new Object[] {
            new Messages.HeartbeatRequest(4, List.of(1L, 99L)),
            (Decoder) Messages.HeartbeatRequest::decode
          },
          new Object[] {
            new Messages.HeartbeatResponse(List.of(5L, 6L, 7L)),
            (Decoder) Messages.HeartbeatResponse::decode
          },
          new Object[] {
            new Messages.BlockReadRequest(-3L, 17, 9, 4096, 512),
            (Decoder) Messages.BlockReadRequest::decode
          },
          new Object[] {
            new Messages.BlockLengthRequest(
                -3L, 17, 9, 4096, new BlockToken(7, 99L, BlockToken.READ, new byte[32])),
            (Decoder) Messages.BlockLengthRequest::decode
          },
          new Object[] {
            new Messages.BlockLengthResponse(65536), (Decoder) Messages.BlockLengthResponse::decode
          },
          new Object[] {
            new Messages.BlockGrantRequest(-3L, 17, 9, 4096, true),
            (Decoder) Messages.BlockGrantRequest::decode
          },
          new Object[] {
            new Messages.BlockGrantResponse(4420, 0x7f00_0000_1000L, -5),
            (Decoder) Messages.BlockGrantResponse::decode
          },
          new Object[] {
            new Messages.BlockReportRequest(
                3,
                -7L,
                List.of(new Messages.HeldBlock(0, 5), new Messages.HeldBlock(65536, 1L << 40))),
            (Decoder) Messages.BlockReportRequest::decode
          },
          new Object[] {STATUS, (Decoder) NodeStatus::decode},
          new Object[] {BLOCK, (Decoder) BlockLocation::decode});

  @Test
  void roundTrips() throws Exception {
    for (Object[] c : CASES) {
      Message m = (Message) c[0];
      ByteBuf buf = Unpooled.buffer();
      try {
        m.encode(buf);
        assertEquals(m, ((Decoder) c[1]).decode(buf), m.getClass().getSimpleName());
      } finally {
        buf.release();
      }
    }
  }

  @Test
  void everyTruncationFailsCleanly() throws Exception {
    for (Object[] c : CASES) {
      Message m = (Message) c[0];
      ByteBuf full = Unpooled.buffer();
      m.encode(full);
      try {
        for (int cut = 0; cut < full.readableBytes(); cut++) {
          ByteBuf part = full.retainedSlice(0, cut);
          try {
            assertThrows(
                MalformedFrameException.class,
                () -> ((Decoder) c[1]).decode(part),
                m.getClass().getSimpleName() + " cut at " + cut);
          } finally {
            part.release();
          }
        }
      } finally {
        full.release();
      }
    }
  }

  @Test
  void randomBytesNeverThrowAnythingButMalformed() {
    Random r = new Random(20261122);
    for (int i = 0; i < 20_000; i++) {
      byte[] junk = new byte[r.nextInt(64)];
      r.nextBytes(junk);
      for (Object[] c : CASES) {
        ByteBuf in = Unpooled.wrappedBuffer(junk);
        try {
          ((Decoder) c[1]).decode(in);
        } catch (MalformedFrameException expected) {
          // fine
        } catch (Throwable t) {
          throw new AssertionError(
              "decoder " + c[0].getClass().getSimpleName() + " threw " + t + " on random input", t);
        } finally {
          in.release();
        }
      }
    }
  }

  @Test
  void lyingCountsAreRefusedBeforeAllocation() {
    ByteBuf in = Unpooled.buffer();
    in.writeInt(Messages.MAX_LIST_ENTRIES); // claims 4096 entries, holds none
    in.writeBoolean(false);
    try {
      MalformedFrameException e =
          assertThrows(MalformedFrameException.class, () -> Messages.ListResponse.decode(in));
      assertEquals(ErrorCode.MALFORMED_FRAME, e.code());
    } finally {
      in.release();
    }
    ByteBuf s = Unpooled.buffer();
    s.writeInt(Integer.MAX_VALUE); // a 2 GiB path
    try {
      assertThrows(MalformedFrameException.class, () -> Messages.PathRequest.decode(s));
    } finally {
      s.release();
    }
  }

  @Test
  void aRunOfBlocksAskedForHoldsOneToAThousandAndTwentyFour() throws Exception {
    for (int count : new int[] {0, -1, Messages.MAX_BLOCKS_PER_CALL + 1}) {
      ByteBuf in = Unpooled.buffer();
      new Messages.AllocateBlocksRequest(5, 6, count).encode(in);
      try {
        MalformedFrameException e =
            assertThrows(
                MalformedFrameException.class, () -> Messages.AllocateBlocksRequest.decode(in));
        assertTrue(e.getMessage().contains("block count"), e.getMessage());
      } finally {
        in.release();
      }
    }
    ByteBuf most = Unpooled.buffer();
    new Messages.AllocateBlocksRequest(5, 6, Messages.MAX_BLOCKS_PER_CALL).encode(most);
    try {
      assertEquals(
          Messages.MAX_BLOCKS_PER_CALL, Messages.AllocateBlocksRequest.decode(most).count());
    } finally {
      most.release();
    }
  }

  @Test
  void trailingBytesAndInvalidUtf8AreRefused() {
    ByteBuf in = Unpooled.buffer();
    new Messages.PathRequest("/a").encode(in);
    in.writeByte(0);
    try {
      assertThrows(MalformedFrameException.class, () -> Messages.PathRequest.decode(in));
    } finally {
      in.release();
    }
    ByteBuf bad = Unpooled.buffer();
    bad.writeInt(2).writeByte(0xC3).writeByte(0x28); // invalid two-byte sequence
    try {
      assertThrows(MalformedFrameException.class, () -> Messages.PathRequest.decode(bad));
    } finally {
      bad.release();
    }
  }

  @Test
  void blockHostComesFromEitherEndpointForm() {
    assertEquals("127.0.0.1", BLOCK.host());
    BlockLocation nvmf =
        new BlockLocation(
            0,
            1,
            1,
            1,
            0,
            StorageClass.NVMF,
            "nvmf",
            "nvmf+tcp://10.1.2.3:4420/nqn.2014-08.org.nvmexpress:x/1",
            0,
            4096,
            false);
    assertEquals("10.1.2.3", nvmf.host());
    BlockLocation v6 =
        new BlockLocation(
            0,
            1,
            1,
            1,
            0,
            StorageClass.NVMF,
            "nvmf",
            "nvmf+tcp://[::1]:4420/nqn.x/1",
            0,
            4096,
            false);
    assertEquals("::1", v6.host());
  }

  @Test
  void aModeOutsideTheTwelveBitsIsRefused() {
    ByteBuf in = Unpooled.buffer();
    new Messages.SetAttributesRequest("/a", "", "", 0).encode(in);
    in.setShort(in.writerIndex() - 2, 02000);
    MalformedFrameException e =
        assertThrows(MalformedFrameException.class, () -> Messages.SetAttributesRequest.decode(in));
    assertTrue(e.getMessage().contains("mode 2000 is not a mode"), e.getMessage());
    assertEquals("rwxr-x--T", Permissions.symbolic(01750));
    assertEquals("rwxrwxrwt", Permissions.symbolic(01777));
    assertEquals(0755, Permissions.parseOctal("755"));
    assertThrows(IllegalArgumentException.class, () -> Permissions.parseOctal("8"));
    assertThrows(IllegalArgumentException.class, () -> Permissions.parseOctal("17777"));
  }

  @Test
  void blockWriteLengthMustMatchTheFrame() throws Exception {
    ByteBuf in = Unpooled.buffer();
    in.writeLong(3).writeLong(17).writeLong(9).writeLong(0).writeInt(10);
    BlockToken.NONE.encode(in);
    in.writeBytes(new byte[9]);
    try {
      assertThrows(MalformedFrameException.class, () -> Messages.BlockWriteRequest.decode(in));
    } finally {
      in.release();
    }
    ByteBuf ok = Unpooled.buffer();
    ok.writeLong(-3).writeLong(17).writeLong(9).writeLong(8).writeInt(3);
    BlockToken.NONE.encode(ok);
    ok.writeBytes(new byte[] {1, 2, 3});
    try {
      Messages.BlockWriteRequest r = Messages.BlockWriteRequest.decode(ok);
      assertEquals(-3, r.incarnation());
      assertEquals(17, r.blockId());
      assertEquals(9, r.generation());
      assertEquals(8, r.address());
      assertEquals(3, r.data().readableBytes());
      r.data().release();
    } finally {
      ok.release();
    }
  }

  @Test
  void anUnknownErrorNumberFromTheWireIsKeptInTheMessage() throws Exception {
    ByteBuf frame = Unpooled.buffer();
    try {
      frame.writeInt(57);
      Wire.writeString(frame, "quota of /a exceeded");
      Messages.ErrorReply r = Messages.ErrorReply.decode(frame);
      assertEquals(ErrorCode.INTERNAL, r.code());
      assertTrue(r.message().contains("57"), r.message());
    } finally {
      frame.release();
    }
  }
}
