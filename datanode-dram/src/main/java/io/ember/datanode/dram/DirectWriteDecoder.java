package io.ember.datanode.dram;

import io.ember.protocol.Frame;
import io.ember.protocol.FrameDecoder;
import io.ember.protocol.MessageType;
import io.ember.protocol.Messages;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelConfig;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.RecvByteBufAllocator;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.unix.IntegerUnixChannelOption;
import io.netty.util.UncheckedBooleanSupplier;
import java.nio.ByteBuffer;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Frames a DRAM data node's connection, and lands the bytes of a large {@code BLOCK_WRITE} in the
 * block itself: once the request's fields have arrived and the write is allowed, the connection's
 * next socket reads are handed the block's memory as their buffer, so the kernel copies the bytes
 * there and nothing copies them again. Every other frame is gathered whole, as {@link FrameDecoder}
 * does.
 *
 * <p>While such a write arrives, the socket's receive low-water mark is its remaining bytes (up to
 * {@link #MAX_LOW_WATER}), so the node wakes once per write or megabyte rather than per segment
 * (with the epoll transport on Linux 5.10 or later; see {@link #RECEIVE_LOW_WATER}).
 *
 * <p>A writer that stops sending in the middle of such a frame holds its block's later writers of
 * another generation back (see {@link BlockGenerations#mustWait}); one that sends nothing between
 * two looks of a check run every half RPC timeout has its connection closed (not while this node
 * itself stopped reading; a look that finds nothing new first lowers the mark to one byte, and the
 * next look decides, so a writer is cut off within two RPC timeouts of its last byte). A writer
 * that goes on sending, however slowly, is not cut off.
 */
final class DirectWriteDecoder extends FrameDecoder {
  private static final Logger LOG = LoggerFactory.getLogger(DirectWriteDecoder.class);

  /**
   * Writes of at most this many bytes are gathered as other frames: their bytes come in a socket
   * read or two, which would be copied whichever way they land.
   */
  static final int MIN_DIRECT_BYTES = 64 << 10;

  /**
   * The fields of a BLOCK_WRITE before its data: incarnation, block, generation, address, length
   * and block token (not checked here: writes land straight from the socket only without TLS, and
   * tokens are handed out only with it).
   */
  private static final int WRITE_FIELDS = Messages.BlockWriteRequest.FIELD_BYTES;

  /**
   * Linux's SO_RCVLOWAT (level SOL_SOCKET, 1; option 18 on the CPUs of {@link
   * #GENERIC_SOCKET_OPTIONS}). While a write lands, its connection's socket wakes this node only
   * once the rest of the write (up to {@link #MAX_LOW_WATER}) waits, not at every segment: on
   * loopback each wake-up is paid by the sender, and a node that reads faster than its writers send
   * sleeps and is woken the more often. Since Linux 4.18 the kernel grows the receive buffer to
   * hold the mark, wakes a reader whose receive window would close, and looks again at once when
   * the mark changes; fixes for hangs under memory pressure followed until 5.10, the first kernel
   * it is used on.
   */
  private static final IntegerUnixChannelOption RECEIVE_LOW_WATER =
      new IntegerUnixChannelOption("SO_RCVLOWAT", 1, 18);

  /** Whether this JVM has said once that the mark could not be set where it was expected to be. */
  private static final AtomicBoolean warnedNoLowWater = new AtomicBoolean();

  /** The highest receive low-water mark set, so a connection's receive buffer grows no further. */
  static final int MAX_LOW_WATER = 1 << 20;

  /** CPUs (as {@code os.arch} names them) whose Linux numbers socket options as asm-generic. */
  private static final Set<String> GENERIC_SOCKET_OPTIONS =
      Set.of("amd64", "x86_64", "aarch64", "riscv64", "s390x", "loongarch64");

  /** Whether this JVM's kernel and CPU take the mark as this decoder sets it. */
  static final boolean LOW_WATER_USABLE =
      lowWaterUsable(
          System.getProperty("os.name", ""),
          System.getProperty("os.version", ""),
          System.getProperty("os.arch", ""));

  /** Linux 5.10 or later on a CPU of {@link #GENERIC_SOCKET_OPTIONS}. */
  static boolean lowWaterUsable(String osName, String osVersion, String osArch) {
    if (!osName.equals("Linux") || !GENERIC_SOCKET_OPTIONS.contains(osArch)) {
      return false;
    }
    Matcher v = Pattern.compile("^(\\d+)\\.(\\d+)").matcher(osVersion);
    if (!v.find()) {
      return false;
    }
    int major = Integer.parseInt(v.group(1));
    int minor = Integer.parseInt(v.group(2));
    return major > 5 || (major == 5 && minor >= 10);
  }

  private final DramDataNode node;
  private final long stallNanos;

  /**
   * The socket's receive low-water mark now, in bytes; 0 where it is not used ({@link
   * #LOW_WATER_USABLE}) or could not be set (a transport other than epoll), and not tried again.
   */
  private int lowWater = LOW_WATER_USABLE ? 1 : 0;

  /** The write whose bytes the socket reads into, or null. */
  private DramDataNode.DirectWrite current;

  /** Bytes of {@link #current} in its block so far. */
  private int filled;

  /** The last buffer handed to the socket for {@link #current}, to know it when it comes back. */
  private ByteBuf handedOut;

  /** Whether the stall check runs (on this connection's thread, as everything here does). */
  private boolean watching;

  /** What the stall check saw when it last looked. */
  private DramDataNode.DirectWrite seenWrite;

  private int seenFilled;

  private DirectWriteDecoder(int maxFrameBytes, DramDataNode node, long stallNanos) {
    super(maxFrameBytes);
    this.node = node;
    this.stallNanos = stallNanos;
  }

  /**
   * Installs the decoder on {@code ch} with the receive buffers that serve it.
   *
   * @param stallNanos how long a direct write may go without a byte before its connection closes
   */
  static void install(SocketChannel ch, int maxFrameBytes, DramDataNode node, long stallNanos) {
    DirectWriteDecoder decoder = new DirectWriteDecoder(maxFrameBytes, node, stallNanos);
    RecvByteBufAllocator usual = ch.config().getRecvByteBufAllocator();
    ch.config().setRecvByteBufAllocator(new IntoBlocks(usual, decoder));
    ch.pipeline().addLast("frames", decoder);
  }

  @Override
  protected Diversion divert(ChannelHandlerContext ctx, ByteBuf in, long length) {
    long dataBytes = length - Frame.HEADER_BYTES - WRITE_FIELDS;
    if (dataBytes <= MIN_DIRECT_BYTES) {
      return Diversion.KEEP;
    }
    if (in.readableBytes() < 4 + Frame.HEADER_BYTES + WRITE_FIELDS) {
      return Diversion.ASK_AGAIN;
    }
    int header = in.readerIndex() + 4;
    if (in.getUnsignedByte(header) != Frame.VERSION
        || in.getUnsignedByte(header + 1) != MessageType.BLOCK_WRITE.code()
        || in.getUnsignedByte(header + 2) != 0) {
      // Gathered whole, the frame gets the server's usual error.
      return Diversion.KEEP;
    }
    long requestId = in.getLong(header + 3);
    int fields = header + Frame.HEADER_BYTES;
    int declared = in.getInt(fields + 32);
    if (declared != dataBytes) {
      return Diversion.KEEP;
    }
    DramDataNode.DirectWrite w =
        node.beginDirectWrite(
            ctx.channel(),
            requestId,
            in.getLong(fields),
            in.getLong(fields + 8),
            in.getLong(fields + 16),
            in.getLong(fields + 24),
            declared);
    if (w == null) {
      // Refused or must wait: the usual path checks it again and answers.
      return Diversion.KEEP;
    }
    in.skipBytes(4 + Frame.HEADER_BYTES + WRITE_FIELDS);
    filled = in.readableBytes();
    ByteBuffer start = w.window().duplicate();
    start.limit(filled);
    in.readBytes(start);
    current = w;
    waitForMore(ctx);
    watchForStall(ctx);
    return Diversion.TAKEN;
  }

  /** The block's memory from the first byte not yet received, for the next socket read. */
  private ByteBuf nextBuffer() {
    ByteBuffer rest = current.window().duplicate();
    rest.position(filled);
    handedOut = Unpooled.wrappedBuffer(rest).clear();
    return handedOut;
  }

  @Override
  public void channelRead(ChannelHandlerContext ctx, Object msg) throws Exception {
    if (current == null || msg != handedOut) {
      super.channelRead(ctx, msg);
      return;
    }
    ByteBuf landed = (ByteBuf) msg;
    filled += landed.readableBytes();
    landed.release();
    handedOut = null;
    if (filled == current.length()) {
      DramDataNode.DirectWrite done = current;
      current = null;
      setLowWater(ctx, 1);
      done.finish();
    } else {
      waitForMore(ctx);
    }
  }

  /** Wakes this node when the rest of the current write has arrived, or a good part of it. */
  private void waitForMore(ChannelHandlerContext ctx) {
    setLowWater(ctx, Math.min(current.length() - filled, MAX_LOW_WATER));
  }

  private void setLowWater(ChannelHandlerContext ctx, int bytes) {
    if (lowWater == 0 || lowWater == bytes) {
      return;
    }
    boolean set;
    try {
      set = ctx.channel().config().setOption(RECEIVE_LOW_WATER, bytes);
    } catch (RuntimeException e) {
      LOG.debug("{}: receive low-water mark not set: {}", ctx.channel(), e.toString());
      set = false;
    }
    if (set) {
      lowWater = bytes;
      return;
    }
    if (lowWater == 1 && !warnedNoLowWater.getAndSet(true)) {
      LOG.warn(
          "{}: the socket's receive low-water mark cannot be set, so large writes wake this node at"
              + " every segment; set {}=false if they cost the writers more than they save",
          ctx.channel(),
          DramDataNodeKeys.DIRECT_WRITES.name());
    }
    if (lowWater > 1) {
      // The socket keeps a mark that may be more than is left to come, and would wait for it.
      LOG.warn(
          "{}: closing connection from {}: its receive low-water mark could not be changed",
          ctx.channel(),
          ctx.channel().remoteAddress());
      var unused = ctx.channel().close();
    }
    lowWater = 0;
  }

  @Override
  public void channelInactive(ChannelHandlerContext ctx) throws Exception {
    abandon();
    super.channelInactive(ctx);
  }

  @Override
  protected void handlerRemoved0(ChannelHandlerContext ctx) {
    abandon();
  }

  private void abandon() {
    if (current != null) {
      DramDataNode.DirectWrite w = current;
      current = null;
      w.abandon();
    }
  }

  /**
   * Closes the connection when a write is arriving and got no byte since the last look; looks every
   * stall period from this connection's first direct write on, until it closes.
   */
  private void watchForStall(ChannelHandlerContext ctx) {
    if (watching) {
      return;
    }
    watching = true;
    Runnable look =
        new Runnable() {
          @Override
          public void run() {
            if (!ctx.channel().isActive()) {
              return;
            }
            if (!ctx.channel().config().isAutoRead()) {
              // This node stopped reading (its answers back up, or it is paused): the writer is
              // not the one stalling.
              seenWrite = null;
            } else if (current != null
                && current == seenWrite
                && filled == seenFilled
                && lowWater > 1) {
              // Bytes below the mark wait in the socket unseen: a slow writer is not a stalled
              // one. Look at them, and cut the writer off only if none came by the next look.
              setLowWater(ctx, 1);
            } else if (current != null && current == seenWrite && filled == seenFilled) {
              LOG.warn(
                  "{}: closing connection from {}: a {}-byte write stopped after {} bytes",
                  current.node(),
                  ctx.channel().remoteAddress(),
                  current.length(),
                  filled);
              var unused = ctx.channel().close();
              return;
            } else {
              seenWrite = current;
              seenFilled = filled;
            }
            var unused = ctx.executor().schedule(this, stallNanos, TimeUnit.NANOSECONDS);
          }
        };
    var unused = ctx.executor().schedule(look, stallNanos, TimeUnit.NANOSECONDS);
  }

  /**
   * The connection's receive buffers: the usual ones, except while a direct write is arriving, when
   * each read gets the block's memory for the rest of that write's bytes and no more (so a read
   * never takes the next frame's bytes into the block).
   */
  private static final class IntoBlocks implements RecvByteBufAllocator {
    private final RecvByteBufAllocator usual;
    private final DirectWriteDecoder decoder;

    IntoBlocks(RecvByteBufAllocator usual, DirectWriteDecoder decoder) {
      this.usual = usual;
      this.decoder = decoder;
    }

    @Override
    @SuppressWarnings("deprecation") // Netty's interface still returns the deprecated type
    public Handle newHandle() {
      return new IntoBlocksHandle((ExtendedHandle) usual.newHandle(), decoder);
    }
  }

  private static final class IntoBlocksHandle extends RecvByteBufAllocator.DelegatingHandle
      implements RecvByteBufAllocator.ExtendedHandle {
    private final RecvByteBufAllocator.ExtendedHandle usual;
    private final DirectWriteDecoder decoder;

    IntoBlocksHandle(RecvByteBufAllocator.ExtendedHandle usual, DirectWriteDecoder decoder) {
      super(usual);
      this.usual = usual;
      this.decoder = decoder;
    }

    @Override
    public ByteBuf allocate(ByteBufAllocator alloc) {
      return decoder.current != null ? decoder.nextBuffer() : usual.allocate(alloc);
    }

    @Override
    public void reset(ChannelConfig config) {
      usual.reset(config);
    }

    @Override
    public boolean continueReading(UncheckedBooleanSupplier maybeMoreDataSupplier) {
      return usual.continueReading(maybeMoreDataSupplier);
    }
  }
}
