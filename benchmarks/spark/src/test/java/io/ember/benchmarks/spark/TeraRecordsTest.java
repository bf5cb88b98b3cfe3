package io.ember.benchmarks.spark;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.SplittableRandom;
import java.util.zip.CRC32C;
import org.junit.jupiter.api.Test;

class TeraRecordsTest {
  @Test
  void recordHasHadoopsLayout() {
    byte[] buf = new byte[TeraRecords.RECORD];
    TeraRecords.generate(buf, 0, 0x1234ABCDL, TeraRecords.randomFrom(1, 0));
    assertArrayEquals(new byte[] {0x00, 0x11}, Arrays.copyOfRange(buf, 10, 12));
    assertEquals(
        "000000000000000000000001234ABCD", new String(buf, 13, 31, StandardCharsets.US_ASCII));
    assertArrayEquals(
        new byte[] {(byte) 0x88, (byte) 0x99, (byte) 0xAA, (byte) 0xBB},
        Arrays.copyOfRange(buf, 44, 48));
    for (int group = 0; group < 12; group++) {
      byte b = buf[48 + 4 * group];
      assertTrue((b >= '0' && b <= '9') || (b >= 'A' && b <= 'F'), "filler is a hex digit");
      for (int i = 1; i < 4; i++) {
        assertEquals(b, buf[48 + 4 * group + i], "filler groups repeat one digit");
      }
    }
    assertArrayEquals(
        new byte[] {(byte) 0xCC, (byte) 0xDD, (byte) 0xEE, (byte) 0xFF},
        Arrays.copyOfRange(buf, 96, 100));
  }

  @Test
  void sameRowsFromTheSameSeedAndStart() {
    byte[] a = new byte[TeraRecords.RECORD];
    byte[] b = new byte[TeraRecords.RECORD];
    TeraRecords.generate(a, 0, 7, TeraRecords.randomFrom(42, 7));
    TeraRecords.generate(b, 0, 7, TeraRecords.randomFrom(42, 7));
    assertArrayEquals(a, b);
    TeraRecords.generate(b, 0, 7, TeraRecords.randomFrom(43, 7));
    assertNotEquals(
        TeraRecords.checksum(new CRC32C(), a, 0), TeraRecords.checksum(new CRC32C(), b, 0));
  }

  @Test
  void keyOrderIsUnsignedByteOrder() {
    Random random = new Random(5);
    for (int i = 0; i < 10_000; i++) {
      byte[] x = new byte[TeraRecords.KEY];
      byte[] y = new byte[TeraRecords.KEY];
      random.nextBytes(x);
      random.nextBytes(y);
      if (i % 3 == 0) {
        System.arraycopy(x, 0, y, 0, 8); // equal high parts: the low two bytes decide
      }
      TeraKey kx = TeraKey.of(x, 0);
      assertEquals(
          Integer.signum(TeraRecords.compareKeys(x, 0, y, 0)),
          Integer.signum(kx.compareTo(TeraKey.of(y, 0))));
      byte[] back = new byte[TeraRecords.KEY];
      kx.writeTo(back, 0);
      assertArrayEquals(x, back);
    }
  }

  @Test
  void partitionerCutsTheKeySpaceIntoOrderedRanges() {
    SplittableRandom rng = new SplittableRandom(3);
    List<TeraKey> sample = new ArrayList<>();
    for (int i = 0; i < 1000; i++) {
      sample.add(new TeraKey(rng.nextLong(), (short) rng.nextInt()));
    }
    TeraPartitioner p = new TeraPartitioner(sample, 8);
    assertEquals(8, p.numPartitions());
    List<TeraKey> keys = new ArrayList<>();
    for (int i = 0; i < 20_000; i++) {
      keys.add(new TeraKey(rng.nextLong(), (short) rng.nextInt()));
    }
    keys.sort(TeraKey.ORDER);
    int[] counts = new int[8];
    int last = 0;
    for (TeraKey k : keys) {
      int part = p.getPartition(k);
      assertTrue(part >= last, "a larger key went to an earlier range");
      last = part;
      counts[part]++;
    }
    for (int c : counts) {
      assertTrue(c > 20_000 / 8 / 2, "ranges are uneven: " + Arrays.toString(counts));
    }
    assertThrows(IllegalArgumentException.class, () -> new TeraPartitioner(sample, 0));
  }
}
