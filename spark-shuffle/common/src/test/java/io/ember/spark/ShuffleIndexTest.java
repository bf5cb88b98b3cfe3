package io.ember.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.io.IOException;
import java.nio.ByteBuffer;
import org.junit.jupiter.api.Test;

class ShuffleIndexTest {
  private static final ShuffleIndex INDEX =
      new ShuffleIndex(new long[] {0, 10, 10, 25}, new long[] {7, 0, 42});

  /** Partition bytes, then the trailer, as a map task leaves them. */
  private static byte[] mapOutput() {
    byte[] trailer = INDEX.encodeTrailer();
    byte[] file = new byte[25 + trailer.length];
    System.arraycopy(trailer, 0, file, 25, trailer.length);
    return file;
  }

  @Test
  void trailerReadsBackFromAWholeFileAndFromItsTailAlone() throws IOException {
    byte[] file = mapOutput();
    assertEquals(25 + ShuffleIndex.trailerSize(3), file.length);
    ShuffleIndex whole = ShuffleIndex.decodeTrailer(file);
    byte[] tail = java.util.Arrays.copyOfRange(file, 25, file.length);
    ShuffleIndex fromTail = ShuffleIndex.decodeTrailer(tail);
    assertEquals(INDEX, whole);
    assertEquals(INDEX, fromTail);
    assertEquals(10, whole.offset(2));
    assertEquals(25, whole.offset(whole.partitions()));
    assertEquals(42, whole.checksum(2));
  }

  @Test
  void damagedTrailersAreRefusedNamingWhatIsWrong() {
    byte[] file = mapOutput();
    byte[] badSize = file.clone();
    ByteBuffer.wrap(badSize).putInt(badSize.length - 4, badSize.length);
    assertThrows(IOException.class, () -> ShuffleIndex.decodeTrailer(badSize));

    byte[] badCount = file.clone();
    ByteBuffer.wrap(badCount).putInt(25, 4);
    IOException count = assertThrows(IOException.class, () -> ShuffleIndex.decodeTrailer(badCount));
    assertEquals("shuffle index of 60 bytes claims 4 partitions", count.getMessage());

    byte[] badOrder = file.clone();
    ByteBuffer.wrap(badOrder).putLong(25 + 4 + 8, 11);
    assertThrows(IOException.class, () -> ShuffleIndex.decodeTrailer(badOrder));

    assertThrows(IOException.class, () -> ShuffleIndex.decodeTrailer(new byte[3]));
  }
}
