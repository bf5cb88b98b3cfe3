package io.ember.protocol;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.embedded.EmbeddedChannel;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class FrameDecoderTest {
  private final List<Object> events = new ArrayList<>();

  private EmbeddedChannel channel(int max) {
    return new EmbeddedChannel(
        new FrameDecoder(max),
        new ChannelInboundHandlerAdapter() {
          @Override
          public void userEventTriggered(ChannelHandlerContext ctx, Object evt) {
            events.add(evt);
          }
        });
  }

  private static ByteBuf frame(long id, byte[] payload) {
    ByteBuf b = Unpooled.buffer();
    b.writeInt(Frame.HEADER_BYTES + payload.length)
        .writeByte(1)
        .writeByte(11)
        .writeByte(0)
        .writeLong(id)
        .writeBytes(payload);
    return b;
  }

  @Test
  void reassemblesFramesSplitAtEveryByte() {
    ByteBuf whole = Unpooled.buffer();
    whole.writeBytes(frame(1, new byte[] {1, 2, 3}));
    whole.writeBytes(frame(2, new byte[0]));
    byte[] bytes = new byte[whole.readableBytes()];
    whole.readBytes(bytes);
    whole.release();
    for (int split = 1; split < bytes.length; split++) {
      EmbeddedChannel ch = channel(1024);
      ch.writeInbound(Unpooled.wrappedBuffer(bytes, 0, split));
      ch.writeInbound(Unpooled.wrappedBuffer(bytes, split, bytes.length - split));
      Frame a = ch.readInbound();
      Frame b = ch.readInbound();
      assertEquals(1, a.requestId());
      assertEquals(3, a.payload().readableBytes());
      assertEquals(2, b.requestId());
      assertEquals(0, b.payload().readableBytes());
      a.release();
      b.release();
      assertNull(ch.readInbound());
      ch.finishAndReleaseAll();
    }
  }

  @Test
  void oversizeAndUndersizeLengthsRaiseOneEventAndDropTheRest() {
    EmbeddedChannel ch = channel(100);
    ByteBuf b = Unpooled.buffer().writeInt(101).writeBytes(new byte[200]);
    ch.writeInbound(b);
    ch.writeInbound(frame(3, new byte[1])); // never decoded: the stream is broken
    assertNull(ch.readInbound());
    assertEquals(1, events.size());
    assertTrue(((FrameDecoder.FrameTooLargeEvent) events.get(0)).describe().contains("101"));
    ch.finishAndReleaseAll();

    events.clear();
    EmbeddedChannel ch2 = channel(100);
    ch2.writeInbound(Unpooled.buffer().writeInt(2).writeShort(0));
    assertEquals(1, events.size());
    assertTrue(((FrameDecoder.FrameTooLargeEvent) events.get(0)).describe().contains("shorter"));
    ch2.finishAndReleaseAll();
  }
}
