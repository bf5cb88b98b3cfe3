package io.ember.nvmf;

import io.ember.nvmf.spec.Nvme;
import io.ember.nvmf.spec.Sqe;
import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.OutputStream;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.zip.CRC32C;

/** A deliberately dumb NVMe/TCP host on a plain socket, for sending the target things a real host never would. */
final class RawHost implements AutoCloseable {
    final Socket s;
    final DataInputStream in;
    final OutputStream out;

    RawHost(String host, int port) throws IOException {
        s = new Socket(host, port);
        s.setSoTimeout(5000);
        s.setTcpNoDelay(true);
        in = new DataInputStream(s.getInputStream());
        out = s.getOutputStream();
    }

    /** A received PDU: the whole frame, little endian. */
    record Frame(int type, int flags, int hlen, int pdo, ByteBuffer b) {
        int u16(int off) {
            return b.getShort(off) & 0xFFFF;
        }

        int i32(int off) {
            return b.getInt(off);
        }
    }

    void send(byte[] bytes) throws IOException {
        out.write(bytes);
        out.flush();
    }

    static ByteBuffer le(int n) {
        return ByteBuffer.allocate(n).order(ByteOrder.LITTLE_ENDIAN);
    }

    static byte[] icReq(boolean hd, boolean dd) {
        ByteBuffer b = le(128);
        b.put((byte) 0).put((byte) 0).put((byte) 128).put((byte) 0).putInt(128);
        b.putShort((short) 0).put((byte) 0).put((byte) ((hd ? 1 : 0) | (dd ? 2 : 0))).putInt(0);
        return b.array();
    }

    /** A CapsuleCmd PDU without digests. */
    static byte[] capsule(Sqe sqe, byte[] data) {
        int plen = 72 + (data == null ? 0 : data.length);
        ByteBuffer b = le(plen);
        b.put((byte) 4).put((byte) 0).put((byte) 72).put((byte) (data == null ? 0 : 72)).putInt(plen);
        b.put(sqe.array());
        if (data != null) {
            b.put(data);
        }
        return b.array();
    }

    static int crc(byte[] b, int off, int len) {
        CRC32C c = new CRC32C();
        c.update(b, off, len);
        return (int) c.getValue();
    }

    Frame read() throws IOException {
        byte[] ch = new byte[8];
        in.readFully(ch);
        ByteBuffer h = ByteBuffer.wrap(ch).order(ByteOrder.LITTLE_ENDIAN);
        int plen = h.getInt(4);
        if (plen < 8 || plen > (1 << 24)) {
            throw new IOException("target sent PLEN " + plen);
        }
        byte[] all = new byte[plen];
        System.arraycopy(ch, 0, all, 0, 8);
        in.readFully(all, 8, plen - 8);
        return new Frame(ch[0] & 0xFF, ch[1] & 0xFF, ch[2] & 0xFF, ch[3] & 0xFF,
                ByteBuffer.wrap(all).order(ByteOrder.LITTLE_ENDIAN));
    }

    void handshake() throws IOException {
        send(icReq(false, false));
        Frame f = read();
        if (f.type() != 1) {
            throw new IOException("expected ICResp, got type " + f.type());
        }
    }

    /** Connects the admin queue to {@code nqn} and returns the CQE status field. */
    int connectAdmin(String nqn, String hostNqn, int kato) throws IOException {
        byte[] data = new byte[1024];
        ByteBuffer d = ByteBuffer.wrap(data).order(ByteOrder.LITTLE_ENDIAN);
        d.putShort(16, (short) 0xFFFF);
        d.put(256, nqn.getBytes(StandardCharsets.US_ASCII));
        d.put(512, hostNqn.getBytes(StandardCharsets.US_ASCII));
        Sqe sqe = new Sqe().opcode(Nvme.FABRICS).flags(Nvme.PSDT_SGL).cid(1).fctype(Nvme.FCTYPE_CONNECT)
                .shortAt(44, 31).intAt(48, kato).sgl(0, 1024, Nvme.SGL_INCAPSULE);
        send(capsule(sqe, data));
        return responseStatus(read());
    }

    static int responseStatus(Frame f) throws IOException {
        if (f.type() != 5) {
            throw new IOException("expected CapsuleResp, got type " + f.type());
        }
        return f.u16(22) >>> 1;
    }

    /** True when the target closed the connection (EOF or reset) within the socket timeout. */
    boolean closedByPeer() throws IOException {
        try {
            while (true) {
                if (in.read() < 0) {
                    return true;
                }
            }
        } catch (EOFException e) {
            return true;
        } catch (SocketTimeoutException e) {
            return false;
        } catch (IOException e) {
            return true; // connection reset
        }
    }

    @Override
    public void close() throws IOException {
        s.close();
    }
}
