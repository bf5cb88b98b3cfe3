package io.ember.protocol;

import io.netty.buffer.ByteBuf;

/**
 * Where one block of a file lives.
 *
 * @param index the block's position in its file
 * @param blockId the cluster-wide block id
 * @param datanodeId the data node that registered the block
 * @param incarnation names the contents of the data node's storage when it registered (0 for
 *     none); an NVMf target records it, so a client can tell a target that came back empty
 * @param storageClass the block's storage class
 * @param tier the kind of data node, which picks the client endpoint ("dram", "nvmf")
 * @param endpoint the tier-specific address the client talks to (for DRAM, {@code host:port})
 * @param address the block's offset in the data node's region, in bytes
 * @param length the block's size in bytes
 * @param lost true when the data node has stopped heartbeating
 */
public record BlockLocation(
    int index,
    long blockId,
    int datanodeId,
    long incarnation,
    StorageClass storageClass,
    String tier,
    String endpoint,
    long address,
    int length,
    boolean lost)
    implements Message {

  /** Smallest encoded size (empty strings). */
  public static final int MIN_BYTES = 4 + 8 + 4 + 8 + 1 + 4 + 4 + 8 + 4 + 1;

  @Override
  public void encode(ByteBuf out) {
    out.writeInt(index);
    out.writeLong(blockId);
    out.writeInt(datanodeId);
    out.writeLong(incarnation);
    out.writeByte(storageClass.id());
    Wire.writeString(out, tier);
    Wire.writeString(out, endpoint);
    out.writeLong(address);
    out.writeInt(length);
    out.writeBoolean(lost);
  }

  /** Reads a location written by {@link #encode}. */
  public static BlockLocation decode(ByteBuf in) throws MalformedFrameException {
    int index = Wire.readInt(in, "block index", 0, Integer.MAX_VALUE);
    long blockId = Wire.readLong(in, "block id");
    int dn = Wire.readInt(in, "data node id");
    long incarnation = Wire.readLong(in, "incarnation", Long.MIN_VALUE, Long.MAX_VALUE);
    StorageClass sc = new StorageClass(Wire.readByte(in, "storage class") & 0xff);
    String tier = Wire.readString(in, "tier", 64);
    String endpoint = Wire.readString(in, "endpoint", 1024);
    long address = Wire.readLong(in, "block address", 0, Long.MAX_VALUE);
    int length = Wire.readInt(in, "block length", 1, Integer.MAX_VALUE);
    boolean lost = Wire.readBoolean(in, "lost");
    return new BlockLocation(index, blockId, dn, incarnation, sc, tier, endpoint, address, length,
        lost);
  }

  /**
   * The host that holds the block's bytes, for locality: the host of a {@code host:port}
   * endpoint (DRAM) or of a URI endpoint ({@code nvmf+tcp://host:port/...}).
   *
   * @throws IllegalArgumentException when the endpoint is neither
   */
  public String host() {
    int scheme = endpoint.indexOf("://");
    if (scheme >= 0) {
      String host = java.net.URI.create(endpoint).getHost();
      if (host == null) {
        throw new IllegalArgumentException("endpoint " + endpoint + " names no host");
      }
      return host.startsWith("[") ? host.substring(1, host.length() - 1) : host;
    }
    return HostPort.parse(endpoint, 0).host();
  }

  /** "data node 3 (127.0.0.1:4000)", for error messages. */
  public String describeNode() {
    return "data node " + datanodeId + " (" + endpoint + ")";
  }
}
