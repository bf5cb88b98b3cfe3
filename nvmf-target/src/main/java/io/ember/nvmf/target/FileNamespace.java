package io.ember.nvmf.target;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.PooledByteBufAllocator;
import java.io.EOFException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.OpenOption;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A namespace backed by a file through {@link FileChannel} positional I/O. With {@code direct} it
 * asks for O_DIRECT ({@code com.sun.nio.file.ExtendedOpenOption.DIRECT}) and falls back to buffered
 * I/O where the file system refuses it (tmpfs does); with O_DIRECT, I/O goes through an aligned
 * bounce buffer because network buffers have no alignment guarantee. Flush is {@code force(false)}.
 */
public final class FileNamespace implements Namespace {
  private static final Logger LOG = LoggerFactory.getLogger(FileNamespace.class);
  private static final ByteBuffer ZEROES = ByteBuffer.allocateDirect(1 << 20).asReadOnlyBuffer();

  private final FileChannel fc;
  private final long blocks;
  private final int blockSize;
  private final boolean direct;
  private final int align;

  /**
   * Opens (creating if needed) {@code file} and sets its length to {@code sizeBytes}.
   *
   * @param direct try O_DIRECT
   * @throws IOException when the file cannot be opened or sized
   * @throws IllegalArgumentException on a bad size
   */
  public FileNamespace(Path file, long sizeBytes, int blockSize, boolean direct)
      throws IOException {
    if (blockSize < 512 || blockSize > 65536 || Integer.bitCount(blockSize) != 1) {
      throw new IllegalArgumentException(
          "block size must be a power of two in 512..65536, got " + blockSize);
    }
    if (sizeBytes <= 0 || sizeBytes % blockSize != 0) {
      throw new IllegalArgumentException(
          "size " + sizeBytes + " is not a positive multiple of " + blockSize);
    }
    List<OpenOption> opts =
        new ArrayList<>(
            List.of(StandardOpenOption.CREATE, StandardOpenOption.READ, StandardOpenOption.WRITE));
    FileChannel ch = null;
    boolean isDirect = false;
    int al = 1;
    if (direct) {
      try {
        Class<?> ext = Class.forName("com.sun.nio.file.ExtendedOpenOption");
        @SuppressWarnings({"unchecked", "rawtypes"})
        OpenOption d = (OpenOption) Enum.valueOf((Class) ext, "DIRECT");
        List<OpenOption> withDirect = new ArrayList<>(opts);
        withDirect.add(d);
        ch = FileChannel.open(file, withDirect.toArray(new OpenOption[0]));
        al = (int) Math.max(512, Files.getFileStore(file).getBlockSize());
        isDirect = blockSize % al == 0;
        if (!isDirect) {
          ch.close();
          ch = null;
          LOG.info(
              "{}: block size {} is not a multiple of the file system's {}; using buffered I/O",
              file,
              blockSize,
              al);
        }
      } catch (IOException
          | UnsupportedOperationException
          | ReflectiveOperationException
          | IllegalArgumentException e) {
        LOG.info("{}: O_DIRECT not available ({}); using buffered I/O", file, e.toString());
        if (ch != null) {
          ch.close();
        }
        ch = null;
      }
    }
    if (ch == null) {
      ch = FileChannel.open(file, opts.toArray(new OpenOption[0]));
      isDirect = false;
      al = 1;
    }
    this.fc = ch;
    this.direct = isDirect;
    this.align = al;
    if (fc.size() != sizeBytes) {
      if (fc.size() > sizeBytes) {
        fc.truncate(sizeBytes);
      } else {
        // Extend sparsely by writing the last block.
        ByteBuffer last = ByteBuffer.allocateDirect(blockSize + align);
        ByteBuffer b = align > 1 ? last.alignedSlice(align) : last;
        b.limit(blockSize);
        fc.write(b, sizeBytes - blockSize);
      }
    }
    this.blocks = sizeBytes / blockSize;
    this.blockSize = blockSize;
  }

  /** Whether O_DIRECT is in effect. */
  public boolean direct() {
    return direct;
  }

  @Override
  public long blockCount() {
    return blocks;
  }

  @Override
  public int blockSize() {
    return blockSize;
  }

  @Override
  public boolean blocking() {
    return true;
  }

  /**
   * An O_DIRECT-aligned view of {@code len} bytes in a pooled direct buffer; close it after the
   * I/O. Pooled because this is every command's path: a fresh direct buffer per command costs a
   * zeroed allocation and waits for the GC to be freed.
   */
  private Bounce bounce(int len) {
    ByteBuf owner = PooledByteBufAllocator.DEFAULT.directBuffer(len + align);
    ByteBuffer view = owner.nioBuffer(0, len + align).alignedSlice(align);
    view.limit(len);
    return new Bounce(owner, view);
  }

  private record Bounce(ByteBuf owner, ByteBuffer view) implements AutoCloseable {
    @Override
    public void close() {
      owner.release();
    }
  }

  @Override
  public ByteBuf read(ByteBufAllocator alloc, long offset, int len) throws IOException {
    ByteBuf out = alloc.directBuffer(len);
    try {
      if (direct) {
        try (Bounce b = bounce(len)) {
          readFully(b.view(), offset);
          b.view().flip();
          out.writeBytes(b.view());
        }
      } else {
        ByteBuffer b = out.nioBuffer(0, len);
        readFully(b, offset);
        out.writerIndex(len);
      }
      return out;
    } catch (IOException | RuntimeException e) {
      out.release();
      throw e;
    }
  }

  private void readFully(ByteBuffer b, long offset) throws IOException {
    long pos = offset;
    while (b.hasRemaining()) {
      int n = fc.read(b, pos);
      if (n < 0) {
        throw new EOFException("file shorter than the namespace at byte " + pos);
      }
      pos += n;
    }
  }

  @Override
  public void write(long offset, ByteBuf src) throws IOException {
    int len = src.readableBytes();
    if (!direct) {
      // A PDU's data may span several socket reads' buffers: write each, rather than have
      // nioBuffer() merge them into a copy first.
      long pos = offset;
      for (ByteBuffer part : src.nioBuffers(src.readerIndex(), len)) {
        int n = part.remaining();
        writeFully(part, pos);
        pos += n;
      }
      return;
    }
    try (Bounce b = bounce(len)) {
      src.getBytes(src.readerIndex(), b.view());
      b.view().flip();
      writeFully(b.view(), offset);
    }
  }

  private void writeFully(ByteBuffer b, long offset) throws IOException {
    long pos = offset;
    while (b.hasRemaining()) {
      pos += fc.write(b, pos);
    }
  }

  @Override
  public void flush() throws IOException {
    fc.force(false);
  }

  @Override
  public void deallocate(long offset, long len) throws IOException {
    // Java cannot punch holes; writing zeroes keeps DLFEAT's "reads as zeroes" promise.
    long pos = offset;
    long end = offset + len;
    // One aligned copy of the zeroes serves every piece (O_DIRECT needs aligned memory).
    try (Bounce zeroes = direct ? bounce(ZEROES.capacity()) : null) {
      if (zeroes != null) {
        zeroes.view().put(ZEROES.duplicate()).flip();
      }
      ByteBuffer source = zeroes != null ? zeroes.view() : ZEROES;
      while (pos < end) {
        ByteBuffer z = source.duplicate();
        z.limit((int) Math.min(z.capacity(), end - pos));
        writeFully(z, pos);
        pos += z.limit();
      }
    }
  }

  @Override
  public void close() throws IOException {
    if (!fc.isOpen()) {
      return;
    }
    // Written blocks reach the disk before the file is let go: a stopped target loses nothing.
    try {
      fc.force(true);
    } finally {
      fc.close();
    }
  }
}
