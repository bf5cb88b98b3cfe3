package io.ember.protocol;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

class ContiguousPrefixTest {
  @Test
  void rangesInOrderGrowThePrefix() {
    ContiguousPrefix p = new ContiguousPrefix();
    assertEquals(100, p.add(0, 100));
    assertEquals(250, p.add(100, 250));
    assertEquals(250, p.prefix());
  }

  @Test
  void rangesPastAGapCountOnlyOnceTheGapFills() {
    ContiguousPrefix p = new ContiguousPrefix();
    assertEquals(0, p.add(200, 300));
    assertEquals(0, p.add(100, 150));
    assertEquals(50, p.add(0, 50));
    assertEquals(50, p.add(160, 200), "150..160 is still missing");
    assertEquals(300, p.add(50, 160));
  }

  @Test
  void overlappingAndRepeatedRangesCountOnce() {
    ContiguousPrefix p = new ContiguousPrefix();
    assertEquals(100, p.add(0, 100));
    assertEquals(100, p.add(20, 80));
    assertEquals(120, p.add(90, 120));
    assertEquals(0, new ContiguousPrefix().add(10, 20));
    ContiguousPrefix q = new ContiguousPrefix();
    q.add(10, 40);
    q.add(30, 60);
    assertEquals(60, q.add(0, 10), "overlapping ranges ahead merge once the gap fills");
  }
}
