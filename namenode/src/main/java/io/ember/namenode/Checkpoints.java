package io.ember.namenode;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.zip.CRC32C;
import java.util.zip.CheckedOutputStream;

/**
 * Checkpoint files: the whole namespace as of one journal record, named after that record's
 * sequence number. Written to a temporary file, forced and renamed, so a crash leaves either the
 * old checkpoint or the new one whole; a CRC32C of everything before it ends the file.
 */
final class Checkpoints {
  private Checkpoints() {}

  static final byte[] MAGIC = {'E', 'M', 'B', 'R', 'C', 'K', 'P', '1'};
  private static final String PREFIX = "checkpoint-";

  /** Writes a checkpoint's body. */
  interface Body {
    void write(DataOutputStream out) throws IOException;
  }

  /** Reads a checkpoint's body. */
  interface Reader {
    void read(DataInputStream in) throws IOException;
  }

  static String name(long seq) {
    return numberedName(PREFIX, seq);
  }

  /** A file named {@code prefix} and {@code number} in 20 digits, so names sort as numbers. */
  static String numberedName(String prefix, long number) {
    return String.format(Locale.ROOT, "%s%020d", prefix, number);
  }

  /** Whether {@code file} is a checkpoint being written, left behind if the writer died. */
  static boolean isTemporary(Path file) {
    String n = file.getFileName().toString();
    return n.startsWith(PREFIX) && n.endsWith(TEMPORARY);
  }

  private static final String TEMPORARY = ".tmp";

  /** The sequence number a checkpoint file is of, or -1 when it is not a checkpoint. */
  static long seqOf(Path file) {
    return numberOf(file, PREFIX);
  }

  /** Checkpoints in {@code dir}, newest first. */
  static List<Path> list(Path dir) throws IOException {
    List<Path> out = numbered(dir, PREFIX);
    java.util.Collections.reverse(out);
    return out;
  }

  /**
   * The number a file named {@code prefix} and 20 digits is named after, or -1 for another name.
   */
  static long numberOf(Path file, String prefix) {
    String name = file.getFileName().toString();
    if (!name.startsWith(prefix) || name.length() != prefix.length() + 20) {
      return -1;
    }
    try {
      return Long.parseLong(name.substring(prefix.length()));
    } catch (NumberFormatException e) {
      return -1;
    }
  }

  /** The files of {@code dir} named {@code prefix} and a number, lowest number first. */
  static List<Path> numbered(Path dir, String prefix) throws IOException {
    List<Path> out = new ArrayList<>();
    try (var files = Files.list(dir)) {
      files.filter(p -> numberOf(p, prefix) >= 0).forEach(out::add);
    }
    out.sort((a, b) -> Long.compare(numberOf(a, prefix), numberOf(b, prefix)));
    return out;
  }

  /**
   * Creates (or truncates) {@code path} for writing, readable by this process's user alone where
   * the file system has POSIX modes: checkpoints and journal segments hold the keys that sign
   * delegation tokens.
   */
  static FileChannel createOwnerOnly(Path path) throws IOException {
    java.util.Set<StandardOpenOption> options =
        java.util.EnumSet.of(
            StandardOpenOption.CREATE,
            StandardOpenOption.WRITE,
            StandardOpenOption.TRUNCATE_EXISTING);
    if (path.getFileSystem().supportedFileAttributeViews().contains("posix")) {
      return FileChannel.open(
          path,
          options,
          java.nio.file.attribute.PosixFilePermissions.asFileAttribute(
              java.nio.file.attribute.PosixFilePermissions.fromString("rw-------")));
    }
    return FileChannel.open(path, options);
  }

  /** Writes the checkpoint of record {@code seq} atomically; returns its path. */
  static Path write(Path dir, long seq, Body body) throws IOException {
    Path target = dir.resolve(name(seq));
    Path tmp = dir.resolve(name(seq) + TEMPORARY);
    try (FileChannel ch = createOwnerOnly(tmp);
        OutputStream raw = java.nio.channels.Channels.newOutputStream(ch)) {
      CRC32C crc = new CRC32C();
      DataOutputStream out =
          new DataOutputStream(
              new CheckedOutputStream(new BufferedOutputStream(raw, 1 << 16), crc));
      out.write(MAGIC);
      out.writeLong(seq);
      body.write(out);
      out.flush();
      // The CRC is of every byte before it, so it is written past the checked stream.
      DataOutputStream tail = new DataOutputStream(raw);
      tail.writeInt((int) crc.getValue());
      tail.flush();
      ch.force(true);
    } catch (IOException | RuntimeException e) {
      Files.deleteIfExists(tmp);
      throw e;
    }
    Files.move(tmp, target, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
    syncDirectory(dir);
    return target;
  }

  /**
   * Checks a checkpoint's CRC32C, then reads its body.
   *
   * @return the sequence number it is of
   * @throws IOException when it is damaged or cannot be read
   */
  static long read(Path file, Reader reader) throws IOException {
    long size = Files.size(file);
    if (size < MAGIC.length + 8 + 4) {
      throw new IOException("checkpoint " + file + " is cut short (" + size + " bytes)");
    }
    CRC32C crc = new CRC32C();
    int stored;
    try (InputStream in = new BufferedInputStream(Files.newInputStream(file), 1 << 16)) {
      byte[] buf = new byte[1 << 16];
      long left = size - 4;
      while (left > 0) {
        int n = in.read(buf, 0, (int) Math.min(buf.length, left));
        if (n < 0) {
          throw new IOException("checkpoint " + file + " changed while read");
        }
        crc.update(buf, 0, n);
        left -= n;
      }
      stored = new DataInputStream(in).readInt();
    }
    if ((int) crc.getValue() != stored) {
      throw new IOException("checkpoint " + file + " fails its CRC32C");
    }
    // Read again only once the whole file checks out, so the loader never sees damaged bytes.
    try (DataInputStream in =
        new DataInputStream(new BufferedInputStream(Files.newInputStream(file), 1 << 16))) {
      byte[] magic = new byte[MAGIC.length];
      in.readFully(magic);
      if (!Arrays.equals(magic, MAGIC)) {
        throw new IOException(file + " is not an Ember checkpoint");
      }
      long seq = in.readLong();
      if (seq != seqOf(file)) {
        throw new IOException(
            "checkpoint " + file + " holds record " + seq + ", not the one its name says");
      }
      reader.read(in);
      return seq;
    }
  }

  /** Forces a directory's entries (a created or renamed file) to disk. */
  static void syncDirectory(Path dir) throws IOException {
    try (FileChannel ch = FileChannel.open(dir, StandardOpenOption.READ)) {
      ch.force(true);
    }
  }
}
