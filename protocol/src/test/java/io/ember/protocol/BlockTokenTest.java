package io.ember.protocol;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import org.junit.jupiter.api.Test;

/**
 * A block token verifies for exactly the block, node contents, slot and caller it was signed for.
 */
class BlockTokenTest {
  private static final byte[] SECRET =
      "0123456789abcdef0123456789abcdef".getBytes(StandardCharsets.US_ASCII);
  private static final BlockLocation BLOCK =
      new BlockLocation(
          0, 17, 9, 2, 5L, StorageClass.DRAM, "dram", "127.0.0.1:4000", 1 << 20, 1 << 20, false);

  @Test
  void aTokenSignsOnlyWhatItWasGrantedFor() {
    BlockToken t = BlockToken.sign(3, SECRET, BLOCK, BlockToken.READ, 1000, "alice");
    assertTrue(t.signs(SECRET, 17, 9, 5L, 1 << 20, "alice"));
    assertFalse(t.signs(SECRET, 18, 9, 5L, 1 << 20, "alice"), "another block");
    assertFalse(t.signs(SECRET, 17, 10, 5L, 1 << 20, "alice"), "another generation");
    assertFalse(t.signs(SECRET, 17, 9, 6L, 1 << 20, "alice"), "another data node's contents");
    assertFalse(t.signs(SECRET, 17, 9, 5L, 2 << 20, "alice"), "another slot");
    assertFalse(t.signs(SECRET, 17, 9, 5L, 1 << 20, "bob"), "another caller");
    byte[] other = SECRET.clone();
    other[0] ^= 1;
    assertFalse(t.signs(other, 17, 9, 5L, 1 << 20, "alice"), "another key");
    // The MAC covers the token's own fields too: widening its modes or expiry breaks it.
    assertFalse(
        new BlockToken(3, 1000, BlockToken.READ | BlockToken.WRITE, t.mac())
            .signs(SECRET, 17, 9, 5L, 1 << 20, "alice"));
    assertFalse(
        new BlockToken(3, 2000, BlockToken.READ, t.mac())
            .signs(SECRET, 17, 9, 5L, 1 << 20, "alice"));
  }

  @Test
  void tokensTakeFixedRoomAndRefuseNonsense() throws Exception {
    BlockToken t = BlockToken.sign(3, SECRET, BLOCK, BlockToken.WRITE, 1000, "a-much-longer-name");
    ByteBuf buf = Unpooled.buffer();
    t.encode(buf);
    assertEquals(BlockToken.BYTES, buf.readableBytes());
    assertEquals(t, BlockToken.decode(buf));
    buf.clear();
    BlockToken.NONE.encode(buf);
    assertEquals(BlockToken.BYTES, buf.readableBytes());
    assertTrue(BlockToken.decode(buf).isNone());
    buf.clear();
    t.encode(buf);
    buf.setByte(12, 8); // modes: none of read, write or length
    assertThrows(MalformedFrameException.class, () -> BlockToken.decode(buf));
    ByteBuf cut = Unpooled.wrappedBuffer(Arrays.copyOf(new byte[BlockToken.BYTES], 20));
    assertThrows(MalformedFrameException.class, () -> BlockToken.decode(cut));
    assertFalse(new BlockKey(1, 5, SECRET).toString().contains("0123"), "keys never print");
  }

  @Test
  void aMaskedKeyComesBackOnlyWithTheSameWrapKey() {
    BlockKey key = new BlockKey(4, 123_456L, SECRET);
    byte[] wrap = new byte[32];
    wrap[0] = 7;
    BlockKey masked = key.masked(wrap);
    assertFalse(Arrays.equals(SECRET, masked.secret()), "masking changes the secret");
    assertEquals(4, masked.id());
    assertEquals(123_456L, masked.expiresMillis());
    assertEquals(key, masked.masked(wrap), "masking twice gives the key back");
    byte[] otherWrap = wrap.clone();
    otherWrap[31] ^= 1;
    assertFalse(Arrays.equals(SECRET, masked.masked(otherWrap).secret()), "another password's");
    // The pad depends on the key's id: two keys with one secret do not mask alike.
    assertFalse(
        Arrays.equals(masked.secret(), new BlockKey(5, 123_456L, SECRET).masked(wrap).secret()));
  }
}
