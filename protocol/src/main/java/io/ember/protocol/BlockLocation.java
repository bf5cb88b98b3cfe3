package io.ember.protocol;

import io.netty.buffer.ByteBuf;
import java.time.Duration;

/**
 * Where one block of a file lives.
 *
 * @param index the block's position in its file
 * @param blockId the cluster-wide block id
 * @param generation the block's generation stamp, new at each allocation: a data node that can
 *     check it refuses a read or write that names another generation than the one it holds, so a
 *     location kept past its file's delete never reaches the file that reused the block
 * @param datanodeId the data node that registered the block
 * @param incarnation names the contents of the data node's storage when it registered (0 for none);
 *     an NVMf target records it, so a client can tell a target that came back empty
 * @param storageClass the block's storage class
 * @param tier the kind of data node, which picks the client endpoint ("dram", "nvmf")
 * @param endpoint the tier-specific address the client talks to (for DRAM, {@code host:port})
 * @param address the block's offset in the data node's region, in bytes
 * @param length the block's size in bytes
 * @param lost true when the data node has stopped heartbeating
 * @param token the name node's grant of access to the block for the caller it answered ({@link
 *     BlockToken#NONE} on a cluster without TLS); a DRAM data node under TLS refuses a read or
 *     write without a valid one
 */
public record BlockLocation(
    int index,
    long blockId,
    long generation,
    int datanodeId,
    long incarnation,
    StorageClass storageClass,
    String tier,
    String endpoint,
    long address,
    int length,
    boolean lost,
    BlockToken token)
    implements Message {

  /** Smallest encoded size (empty strings). */
  public static final int MIN_BYTES = 4 + 8 + 8 + 4 + 8 + 1 + 4 + 4 + 8 + 4 + 1 + BlockToken.BYTES;

  /** A location without a token. */
  public BlockLocation(
      int index,
      long blockId,
      long generation,
      int datanodeId,
      long incarnation,
      StorageClass storageClass,
      String tier,
      String endpoint,
      long address,
      int length,
      boolean lost) {
    this(
        index,
        blockId,
        generation,
        datanodeId,
        incarnation,
        storageClass,
        tier,
        endpoint,
        address,
        length,
        lost,
        BlockToken.NONE);
  }

  /** This location, carrying {@code grant}. */
  public BlockLocation withToken(BlockToken grant) {
    return new BlockLocation(
        index,
        blockId,
        generation,
        datanodeId,
        incarnation,
        storageClass,
        tier,
        endpoint,
        address,
        length,
        lost,
        grant);
  }

  /**
   * How long a client uses a location whose storage cannot check generations (an NVMf target)
   * before it asks the name node again whether the block still belongs to the file.
   */
  public static final Duration UNCHECKED_TRUST = Duration.ofSeconds(1);

  /**
   * How long the name node keeps a freed block of such storage from reuse: longer than {@link
   * #UNCHECKED_TRUST}, so a location a client checked just before the block was freed is no longer
   * used by the time another file can hold it.
   */
  public static final Duration UNCHECKED_REUSE_DELAY = UNCHECKED_TRUST.multipliedBy(2);

  @Override
  public void encode(ByteBuf out) {
    out.writeInt(index);
    out.writeLong(blockId);
    out.writeLong(generation);
    out.writeInt(datanodeId);
    out.writeLong(incarnation);
    out.writeByte(storageClass.id());
    Wire.writeString(out, tier);
    Wire.writeString(out, endpoint);
    out.writeLong(address);
    out.writeInt(length);
    out.writeBoolean(lost);
    token.encode(out);
  }

  /** Reads a location written by {@link #encode}. */
  public static BlockLocation decode(ByteBuf in) throws MalformedFrameException {
    int index = Wire.readInt(in, "block index", 0, Integer.MAX_VALUE);
    long blockId = Wire.readLong(in, "block id");
    long generation = Wire.readLong(in, "generation");
    int dn = Wire.readInt(in, "data node id");
    long incarnation = Wire.readLong(in, "incarnation", Long.MIN_VALUE, Long.MAX_VALUE);
    StorageClass sc = new StorageClass(Wire.readByte(in, "storage class") & 0xff);
    String tier = Wire.readString(in, "tier", 64);
    String endpoint = Wire.readString(in, "endpoint", 1024);
    long address = Wire.readLong(in, "block address", 0, Long.MAX_VALUE);
    int length = Wire.readInt(in, "block length", 1, Integer.MAX_VALUE);
    boolean lost = Wire.readBoolean(in, "lost");
    BlockToken token = BlockToken.decode(in);
    return new BlockLocation(
        index,
        blockId,
        generation,
        dn,
        incarnation,
        sc,
        tier,
        endpoint,
        address,
        length,
        lost,
        token);
  }

  /**
   * The host that holds the block's bytes, for locality: the host of a {@code host:port} endpoint
   * (DRAM) or of a URI endpoint ({@code nvmf+tcp://host:port/...}).
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

  /** "block 17 (generation 4)", for error messages. */
  public String describeBlock() {
    return "block " + blockId + " (generation " + generation + ")";
  }

  /** "data node 3 (127.0.0.1:4000)", for error messages. */
  public String describeNode() {
    return "data node " + datanodeId + " (" + endpoint + ")";
  }
}
