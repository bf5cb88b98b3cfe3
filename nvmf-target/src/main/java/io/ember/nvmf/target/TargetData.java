package io.ember.nvmf.target;

import io.ember.nvmf.spec.Nvme;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.UUID;

/** Builds the data structures the embedded target returns: identify data and log pages. */
final class TargetData {
  static final int VERSION = 0x00010300;
  static final String FIRMWARE = "0.1.0";

  private TargetData() {}

  static long cap(int maxQueueSize) {
    // MQES (0's based), CQR=1, TO=1 (500 ms), CSS bit 37 (NVM command set), MPSMIN=MPSMAX=0 (4
    // KiB).
    return (maxQueueSize - 1) | (1L << 16) | (1L << 24) | (1L << 37);
  }

  static byte[] identifyController(NvmfTarget t, TargetController c) {
    ByteBuffer b = ByteBuffer.allocate(4096).order(ByteOrder.LITTLE_ENDIAN);
    Subsystem s = c.subsystem;
    b.put(4, Nvme.ascii(s == null ? "ember-discovery" : s.serial(), 20, (byte) ' '));
    b.put(24, Nvme.ascii(s == null ? "Ember discovery controller" : s.model(), 40, (byte) ' '));
    b.put(64, Nvme.ascii(FIRMWARE, 8, (byte) ' '));
    b.put(72, (byte) 6); // RAB
    b.put(76, (byte) (s == null ? 0 : 0x03)); // CMIC: multi-port, multi-controller
    b.put(77, (byte) t.mdts); // MDTS
    b.putShort(78, (short) c.cntlid);
    b.putInt(80, VERSION);
    b.put(111, (byte) (s == null ? 2 : 1)); // CNTRLTYPE: 1 I/O, 2 discovery
    b.put(258, (byte) 3); // ACL: 4 aborts
    b.put(259, (byte) 3); // AERL: 4 outstanding AERs
    b.put(261, (byte) 0x04); // LPA: extended data for Get Log Page
    b.putShort(320, (short) 10); // KAS: 1 s granularity
    b.put(512, (byte) 0x66); // SQES
    b.put(513, (byte) 0x44); // CQES
    b.putShort(514, (short) Math.min(0xFFFF, t.maxQueueSize)); // MAXCMD
    b.putInt(516, s == null ? 0 : s.maxNsid()); // NN
    b.putShort(520, (short) (s == null ? 0 : 0x0C)); // ONCS: DSM, Write Zeroes
    b.put(525, (byte) (s == null ? 0 : 1)); // VWC present: Flush does something
    b.putInt(536, 1 | (1 << 20)); // SGLS: SGLs, Offset sub type (in-capsule)
    b.put(768, Nvme.ascii(s == null ? Nvme.DISCOVERY_NQN : s.nqn(), 256, (byte) 0));
    b.putInt(1792, (64 + t.inCapsuleDataSize) / 16); // IOCCSZ
    b.putInt(1796, 1); // IORCSZ
    b.putShort(1800, (short) 0); // ICDOFF
    b.put(1802, (byte) 0); // FCATT: dynamic controller model
    b.put(1803, (byte) 1); // MSDBD
    return b.array();
  }

  static byte[] nguid(Subsystem s, int nsid) {
    UUID u = UUID.nameUUIDFromBytes((s.nqn() + "/" + nsid).getBytes(StandardCharsets.UTF_8));
    return ByteBuffer.allocate(16)
        .putLong(u.getMostSignificantBits())
        .putLong(u.getLeastSignificantBits())
        .array();
  }

  static byte[] identifyNamespace(Subsystem s, int nsid, Namespace ns) {
    ByteBuffer b = ByteBuffer.allocate(4096).order(ByteOrder.LITTLE_ENDIAN);
    b.putLong(0, ns.blockCount()).putLong(8, ns.blockCount()).putLong(16, ns.blockCount());
    b.put(25, (byte) 0); // NLBAF: one format
    b.put(26, (byte) 0); // FLBAS: format 0
    b.put(30, (byte) 1); // NMIC: may be shared
    b.put(33, (byte) 0x09); // DLFEAT: reads zeroes; Write Zeroes can dealloc
    b.put(104, nguid(s, nsid));
    b.putInt(128, Integer.numberOfTrailingZeros(ns.blockSize()) << 16); // LBAF0: LBADS
    return b.array();
  }

  static byte[] nsDescriptors(Subsystem s, int nsid) {
    ByteBuffer b = ByteBuffer.allocate(4096);
    b.put(0, (byte) 2).put(1, (byte) 16); // NIDT NGUID, NIDL 16
    b.put(4, nguid(s, nsid));
    return b.array();
  }

  static byte[] activeNsList(Subsystem s, int after) {
    ByteBuffer b = ByteBuffer.allocate(4096).order(ByteOrder.LITTLE_ENDIAN);
    int i = 0;
    for (int id : s.namespaces().keySet()) {
      if (Integer.compareUnsigned(id, after) > 0 && i < 1024) {
        b.putInt(4 * i++, id);
      }
    }
    return b.array();
  }

  static byte[] discoveryLog(NvmfTarget t, TargetController c, InetSocketAddress local) {
    java.util.List<Subsystem> visible = new java.util.ArrayList<>();
    for (Subsystem s : new java.util.TreeMap<>(t.subsystems).values()) {
      if (s.allows(c.hostNqn)) {
        visible.add(s);
      }
    }
    ByteBuffer b = ByteBuffer.allocate(1024 * (visible.size() + 1)).order(ByteOrder.LITTLE_ENDIAN);
    b.putLong(0, t.discoveryGeneration.get());
    b.putLong(8, visible.size());
    b.putShort(16, (short) 0);
    boolean v6 = local.getAddress() instanceof java.net.Inet6Address;
    String addr = local.getAddress().getHostAddress();
    int off = 1024;
    for (Subsystem s : visible) {
      b.put(off, (byte) 3); // TRTYPE TCP
      b.put(off + 1, (byte) (v6 ? 2 : 1)); // ADRFAM
      b.put(off + 2, (byte) 2); // SUBTYPE NVM subsystem
      b.put(off + 3, (byte) 0x04); // TREQ: SQ flow control disable supported
      b.putShort(off + 4, (short) 1); // PORTID
      b.putShort(off + 6, (short) 0xFFFF); // CNTLID: dynamic
      b.putShort(off + 8, (short) 32); // ASQSZ
      b.put(off + 32, Nvme.ascii(Integer.toString(local.getPort()), 32, (byte) 0));
      b.put(off + 256, Nvme.ascii(s.nqn(), 256, (byte) 0));
      b.put(off + 512, Nvme.ascii(addr, 256, (byte) 0));
      b.put(off + 768, (byte) 0); // TSAS.SECTYPE: none
      off += 1024;
    }
    return b.array();
  }
}
