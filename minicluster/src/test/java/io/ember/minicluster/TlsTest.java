package io.ember.minicluster;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.ember.client.CreateOptions;
import io.ember.client.EmberClient;
import io.ember.client.EmberInputStream;
import io.ember.client.EmberOutputStream;
import io.ember.protocol.DirectConnection;
import io.ember.protocol.EmberConfig;
import io.ember.protocol.EmberException;
import io.ember.protocol.EmberKeys;
import io.ember.protocol.ErrorCode;
import io.ember.protocol.Futures;
import io.ember.protocol.HostPort;
import io.ember.protocol.Message;
import io.ember.protocol.MessageType;
import io.ember.protocol.RpcClients;
import io.ember.protocol.RpcServer;
import io.ember.protocol.RpcService;
import io.ember.protocol.Tls;
import io.ember.protocol.Wire;
import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import io.netty.handler.ssl.OpenSsl;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Mutual TLS on real loopback sockets: a cluster whose every connection is secured, and each way a
 * connection is refused (a plain peer on either side, a certificate from another CA on either side,
 * a server certificate for another host, missing files), each with an error that says what to fix;
 * a replayed or truncated handshake gets nothing served.
 */
class TlsTest {
  @TempDir static Path tmp;
  private static DevCertificates ca;
  private static DevCertificates otherCa;

  private final List<AutoCloseable> toClose = new ArrayList<>();

  @BeforeAll
  static void certificates() throws Exception {
    ca = DevCertificates.openOrCreate(tmp.resolve("ca"));
    ca.issue("node", List.of("localhost", "127.0.0.1"));
    ca.issue("alice", List.of());
    ca.issue("elsewhere", List.of("elsewhere.example", "10.99.99.99"));
    otherCa = DevCertificates.openOrCreate(tmp.resolve("other-ca"));
    otherCa.issue("mallory", List.of("localhost", "127.0.0.1"));
  }

  @AfterEach
  void closeAll() throws Exception {
    for (AutoCloseable c : toClose) {
      c.close();
    }
  }

  /** The TLS engine of every process of the running test: "auto" unless it names one. */
  private String engine = "auto";

  /**
   * TLS settings presenting {@code name}'s certificate from {@code issuer}, trusting {@code ca}.
   */
  private EmberConfig tls(DevCertificates issuer, String name) {
    return EmberConfig.defaults()
        .with(EmberKeys.TLS_PROVIDER, engine)
        .with(EmberKeys.TLS, "true")
        .with(EmberKeys.TLS_CERTIFICATE, issuer.certificateFile(name).toString())
        .with(EmberKeys.TLS_KEY, issuer.keyFile(name).toString())
        .with(EmberKeys.TLS_CA, ca.caFile().toString());
  }

  /** Answers any call with the caller's identity as the server saw it. */
  private static final class WhoAmI implements RpcService {
    @Override
    public Message handle(Channel ch, MessageType type, ByteBuf in) {
      String who = String.valueOf(Tls.peerIdentity(ch));
      return out -> Wire.writeString(out, who);
    }
  }

  private int server(EmberConfig config) throws EmberException {
    RpcServer s = new RpcServer("test server", config, new WhoAmI());
    toClose.add(s);
    return s.start("127.0.0.1", 0).getPort();
  }

  private String call(EmberConfig config, int port) throws EmberException {
    RpcClients clients = new RpcClients(config, "test-client");
    toClose.add(clients);
    HostPort at = new HostPort("127.0.0.1", port);
    return Futures.await(
        clients
            .get(at, "test server")
            .thenCompose(
                c ->
                    c.call(
                        MessageType.LOOKUP,
                        Message.EMPTY,
                        b -> Wire.readString(b, "identity", 1024))));
  }

  /** Runs the test's processes with {@code engine}, skipping OpenSSL where it does not load. */
  private void useEngine(String engine) {
    assumeTrue(engine.equals("jdk") || OpenSsl.isAvailable(), "OpenSSL does not load here");
    this.engine = engine;
  }

  /** A client of {@code client} settings calling a server of {@code server} settings is refused. */
  private void assertRefused(EmberConfig server, EmberConfig client, String why) throws Exception {
    int port = server(server);
    EmberException e = assertThrows(EmberException.class, () -> call(client, port));
    assertEquals(ErrorCode.UNAUTHENTICATED, e.code(), e.getMessage());
    assertTrue(e.getMessage().contains(why), e.getMessage());
  }

  @Test
  void securityEnabledTurnsOnTheSameTlsAsTheTlsKey() throws Exception {
    java.util.function.BiFunction<DevCertificates, String, EmberConfig> enabled =
        (issuer, name) ->
            tls(issuer, name).with(EmberKeys.TLS, "false").with(EmberKeys.SECURITY_ENABLED, "true");
    int port = server(enabled.apply(ca, "node"));
    assertEquals("alice", call(enabled.apply(ca, "alice"), port));
    assertEquals("alice", call(tls(ca, "alice"), port));
    EmberException plain =
        assertThrows(EmberException.class, () -> call(EmberConfig.defaults(), port));
    assertEquals(ErrorCode.UNAUTHENTICATED, plain.code(), plain.getMessage());
    assertTrue(plain.getMessage().contains("this server requires TLS"), plain.getMessage());
  }

  @Test
  void aSecuredCallCarriesTheCallersIdentity() throws Exception {
    int port = server(tls(ca, "node"));
    assertEquals("alice", call(tls(ca, "alice"), port));
    assertEquals("node", call(tls(ca, "node"), port));
  }

  @Test
  void openSslAndTheJdksEngineTalkToEachOther() throws Exception {
    assumeTrue(
        OpenSsl.isAvailable(),
        "netty-tcnative does not load here: " + OpenSsl.unavailabilityCause());
    for (String[] pair : new String[][] {{"openssl", "jdk"}, {"jdk", "openssl"}}) {
      int port = server(tls(ca, "node").with(EmberKeys.TLS_PROVIDER, pair[0]));
      assertEquals("alice", call(tls(ca, "alice").with(EmberKeys.TLS_PROVIDER, pair[1]), port));
    }
    assertEquals("openssl", Tls.from(tls(ca, "alice")).provider(), "auto picks OpenSSL");
  }

  @Test
  void aClusterServesFilesWhenEveryConnectionIsSecured() throws Exception {
    byte[] data = new byte[3 * 1024 * 1024 + 17];
    new Random(7).nextBytes(data);
    try (MiniCluster cluster =
            MiniCluster.builder()
                .dramDatanodes(2)
                .set(io.ember.datanode.nvmf.NvmfDataNodeKeys.EMBEDDED_SIZE, "16m")
                .nvmfDatanode("")
                .config(tls(ca, "node"))
                .build();
        EmberClient client = cluster.newClient(tls(ca, "alice"))) {
      try (EmberOutputStream out = client.create("/secured.bin", CreateOptions.DEFAULT)) {
        out.write(data);
      }
      byte[] back;
      try (EmberInputStream in = client.open("/secured.bin")) {
        back = in.readAllBytes();
      }
      assertArrayEquals(data, back);
      // The NVMf data node registered too: the name node reached its NVMe/TCP target unsecured.
      try (EmberOutputStream out =
          client.create(
              "/secured-nvmf.bin",
              CreateOptions.DEFAULT.withStorageClass(io.ember.protocol.StorageClass.NVMF))) {
        out.write(data);
      }
      try (EmberInputStream in = client.open("/secured-nvmf.bin")) {
        back = in.readAllBytes();
      }
      assertArrayEquals(data, back);
      assertEquals(3, client.datanodes().size(), "every data node registered over TLS");
    }
  }

  @ParameterizedTest
  @ValueSource(strings = {"jdk", "openssl"})
  void aPlainClientAtATlsServerIsToldToTurnTlsOn(String engine) throws Exception {
    useEngine(engine);
    int port = server(tls(ca, "node"));
    EmberException shared =
        assertThrows(EmberException.class, () -> call(EmberConfig.defaults(), port));
    assertEquals(ErrorCode.UNAUTHENTICATED, shared.code(), shared.getMessage());
    assertTrue(shared.getMessage().contains("this server requires TLS"), shared.getMessage());
    assertTrue(shared.getMessage().contains("ember.security.tls=true"), shared.getMessage());

    // A caller making its own plain call gets the same words.
    DirectConnection direct =
        new DirectConnection(new HostPort("127.0.0.1", port), "name node", EmberConfig.defaults());
    toClose.add(direct);
    EmberException e =
        assertThrows(
            EmberException.class,
            () ->
                Futures.await(
                    direct.callOr(
                        MessageType.NOOP,
                        Message.EMPTY,
                        b -> null,
                        () -> {
                          throw new AssertionError("the shared path was taken");
                        })));
    assertEquals(ErrorCode.UNAUTHENTICATED, e.code(), e.getMessage());
    assertTrue(e.getMessage().contains("this server requires TLS"), e.getMessage());
  }

  @ParameterizedTest
  @ValueSource(strings = {"jdk", "openssl"})
  void aTlsClientAtAPlainServerIsToldTheServerDoesNotSpeakTls(String engine) throws Exception {
    useEngine(engine);
    assertRefused(EmberConfig.defaults(), tls(ca, "alice"), "does not speak TLS");
  }

  @ParameterizedTest
  @ValueSource(strings = {"jdk", "openssl"})
  void aClientCertificateFromAnotherCaGivesNoIdentityAndTheNameNodeServesNothing(String engine)
      throws Exception {
    useEngine(engine);
    // Servers take clients without a certificate (they may hold a delegation token), so the
    // handshake passes, but the foreign certificate names nobody.
    int port = server(tls(ca, "node"));
    assertEquals("null", call(tls(otherCa, "mallory"), port));
    try (MiniCluster cluster = MiniCluster.builder().config(tls(ca, "node")).build()) {
      EmberClient mallory = cluster.newClient(tls(otherCa, "mallory"));
      String why = TlsUsers.refused(ErrorCode.UNAUTHENTICATED, () -> mallory.lookup("/"));
      assertTrue(why.contains("no certificate signed by a CA in ember.security.tls.ca"), why);
      TlsUsers.refused(ErrorCode.UNAUTHENTICATED, () -> mallory.list("/"));
      TlsUsers.refused(ErrorCode.UNAUTHENTICATED, () -> mallory.df());
    }
  }

  @ParameterizedTest
  @ValueSource(strings = {"jdk", "openssl"})
  void aServerCertificateFromAnotherCaIsRefused(String engine) throws Exception {
    useEngine(engine);
    // A server that knows the cluster's address but holds no certificate from its CA.
    assertRefused(
        tls(otherCa, "mallory"),
        tls(ca, "alice"),
        "is not signed by a CA in ember.security.tls.ca");
  }

  @ParameterizedTest
  @ValueSource(strings = {"jdk", "openssl"})
  void aServerCertificateForAnotherHostIsRefused(String engine) throws Exception {
    useEngine(engine);
    assertRefused(tls(ca, "elsewhere"), tls(ca, "alice"), "does not name the host");
  }

  /**
   * A client that presents {@code name}'s certificate chain from {@code ca} but signs the handshake
   * with {@code keyOf}'s key, as someone holding only another's (public) certificate would: no
   * local check stands between it and the server.
   */
  private static javax.net.ssl.SSLSocket forgedClient(String name, String keyOf, int port)
      throws Exception {
    java.security.KeyStore keys = java.security.KeyStore.getInstance("PKCS12");
    keys.load(null, null);
    java.security.cert.CertificateFactory x509 =
        java.security.cert.CertificateFactory.getInstance("X.509");
    java.security.cert.Certificate[] chain;
    try (java.io.InputStream in = java.nio.file.Files.newInputStream(ca.certificateFile(name))) {
      chain = x509.generateCertificates(in).toArray(new java.security.cert.Certificate[0]);
    }
    java.security.PrivateKey wrongKey;
    try (java.io.Reader r = java.nio.file.Files.newBufferedReader(ca.keyFile(keyOf));
        org.bouncycastle.openssl.PEMParser pem = new org.bouncycastle.openssl.PEMParser(r)) {
      wrongKey =
          new org.bouncycastle.openssl.jcajce.JcaPEMKeyConverter()
              .getPrivateKey((org.bouncycastle.asn1.pkcs.PrivateKeyInfo) pem.readObject());
    }
    keys.setKeyEntry("forged", wrongKey, new char[0], chain);
    javax.net.ssl.KeyManagerFactory kmf =
        javax.net.ssl.KeyManagerFactory.getInstance(
            javax.net.ssl.KeyManagerFactory.getDefaultAlgorithm());
    kmf.init(keys, new char[0]);
    java.security.KeyStore trust = java.security.KeyStore.getInstance("PKCS12");
    trust.load(null, null);
    try (java.io.InputStream in = java.nio.file.Files.newInputStream(ca.caFile())) {
      trust.setCertificateEntry("ca", x509.generateCertificate(in));
    }
    javax.net.ssl.TrustManagerFactory tmf =
        javax.net.ssl.TrustManagerFactory.getInstance(
            javax.net.ssl.TrustManagerFactory.getDefaultAlgorithm());
    tmf.init(trust);
    javax.net.ssl.SSLContext ssl = javax.net.ssl.SSLContext.getInstance("TLSv1.3");
    ssl.init(kmf.getKeyManagers(), tmf.getTrustManagers(), null);
    javax.net.ssl.SSLSocket s =
        (javax.net.ssl.SSLSocket)
            ssl.getSocketFactory().createSocket(java.net.InetAddress.getLoopbackAddress(), port);
    s.setSoTimeout(120_000);
    return s;
  }

  /**
   * Sends one well-formed call on {@code tls} and reads its answer's first byte: 1 when the server
   * answered, -1 when it refused the handshake or closed without an answer.
   */
  private static int rawCalls(javax.net.ssl.SSLSocket tls) throws Exception {
    try (tls) {
      java.io.DataOutputStream out = new java.io.DataOutputStream(tls.getOutputStream());
      out.writeInt(io.ember.protocol.Frame.HEADER_BYTES);
      out.writeByte(io.ember.protocol.Frame.VERSION);
      out.writeByte(MessageType.LOOKUP.code());
      out.writeByte(0);
      out.writeLong(1);
      out.flush();
      // Under TLS 1.3 a client finishes its side before the server has judged its certificate,
      // so a refusal shows when the answer is read.
      return tls.getInputStream().read() < 0 ? -1 : 1;
    } catch (javax.net.ssl.SSLException | java.net.SocketException refused) {
      return -1;
    }
  }

  @ParameterizedTest
  @ValueSource(strings = {"jdk", "openssl"})
  void aCertificateWithoutItsKeyGetsNothingServed(String engine) throws Exception {
    // Mutual TLS's wrong password: a certificate is public, its key is what proves the name.
    useEngine(engine);
    EmberConfig mismatched =
        tls(ca, "alice").with(EmberKeys.TLS_KEY, ca.keyFile("elsewhere").toString());
    IllegalArgumentException client =
        assertThrows(
            IllegalArgumentException.class, () -> new RpcClients(mismatched, "test-client"));
    assertTrue(
        client.getMessage().contains("ember.security.tls.key does not belong to"),
        client.getMessage());
    EmberException server =
        assertThrows(
            EmberException.class,
            () -> server(tls(ca, "node").with(EmberKeys.TLS_KEY, ca.keyFile("alice").toString())));
    assertEquals(ErrorCode.INVALID_ARGUMENT, server.code(), server.getMessage());
    assertTrue(
        server.getMessage().contains("ember.security.tls.key does not belong to"),
        server.getMessage());
    // A key of another kind than the certificate's is named as such.
    java.security.KeyPairGenerator rsa = java.security.KeyPairGenerator.getInstance("RSA");
    rsa.initialize(2048);
    java.nio.file.Path rsaKey = tmp.resolve("rsa-" + engine + ".key");
    java.nio.file.Files.writeString(
        rsaKey,
        "-----BEGIN PRIVATE KEY-----\n"
            + java.util.Base64.getMimeEncoder(64, new byte[] {'\n'})
                .encodeToString(rsa.generateKeyPair().getPrivate().getEncoded())
            + "\n-----END PRIVATE KEY-----\n");
    EmberException otherKind =
        assertThrows(
            EmberException.class,
            () -> server(tls(ca, "node").with(EmberKeys.TLS_KEY, rsaKey.toString())));
    assertTrue(
        otherKind.getMessage().contains("does not belong to")
            && otherKind.getMessage().contains("RSA key, EC certificate"),
        otherKind.getMessage());

    Counting service = new Counting();
    RpcServer real = new RpcServer("test server", tls(ca, "node"), service);
    toClose.add(real);
    int port = real.start("127.0.0.1", 0).getPort();
    // The same raw client with alice's own key is served, so a refusal below is the server's.
    assertEquals(1, rawCalls(forgedClient("alice", "alice", port)));
    assertEquals(1, service.served.get());
    assertEquals(-1, rawCalls(forgedClient("alice", "elsewhere", port)));
    assertEquals(1, service.served.get(), "a call was served to a forged certificate");
    // The real alice still gets in.
    assertEquals("alice", call(tls(ca, "alice"), port));
  }

  @Test
  void missingOrUnreadableFilesAreNamed() {
    EmberConfig noKey = tls(ca, "alice").with(EmberKeys.TLS_KEY, "");
    IllegalArgumentException e =
        assertThrows(IllegalArgumentException.class, () -> new RpcClients(noKey, "test-client"));
    assertTrue(e.getMessage().contains("needs ember.security.tls.key"), e.getMessage());

    EmberConfig missing =
        tls(ca, "node").with(EmberKeys.TLS_CA, tmp.resolve("no-such.pem").toString());
    EmberException s = assertThrows(EmberException.class, () -> server(missing));
    assertEquals(ErrorCode.INVALID_ARGUMENT, s.code());
    assertTrue(s.getMessage().contains("ember.security.tls.ca: cannot read"), s.getMessage());

    EmberConfig notPem =
        tls(ca, "node").with(EmberKeys.TLS_KEY, ca.certificateFile("node").toString());
    EmberException p = assertThrows(EmberException.class, () -> server(notPem));
    assertEquals(ErrorCode.INVALID_ARGUMENT, p.code());
    assertTrue(p.getMessage().contains("cannot set up TLS"), p.getMessage());
    assertTrue(p.getMessage().contains("ember.security.tls.key="), p.getMessage());
  }

  /** A service that counts the calls it served, each answered with the caller's identity. */
  private static final class Counting implements RpcService {
    final java.util.concurrent.atomic.AtomicInteger served =
        new java.util.concurrent.atomic.AtomicInteger();

    @Override
    public Message handle(Channel ch, MessageType type, ByteBuf in) {
      served.incrementAndGet();
      String who = String.valueOf(Tls.peerIdentity(ch));
      return out -> Wire.writeString(out, who);
    }
  }

  /**
   * Relays one connection from a loopback port to {@code port} and keeps every byte the client
   * sent, as an eavesdropper on the wire would.
   */
  private static final class Recorder implements AutoCloseable {
    final java.net.ServerSocket listener =
        new java.net.ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress());
    final java.io.ByteArrayOutputStream fromClient = new java.io.ByteArrayOutputStream();
    private final List<java.net.Socket> sockets = new java.util.concurrent.CopyOnWriteArrayList<>();

    Recorder(int port) throws java.io.IOException {
      Thread relay =
          new Thread(
              () -> {
                try {
                  java.net.Socket client = listener.accept();
                  java.net.Socket server =
                      new java.net.Socket(java.net.InetAddress.getLoopbackAddress(), port);
                  sockets.add(client);
                  sockets.add(server);
                  Thread back = new Thread(() -> pump(server, client, null));
                  back.setDaemon(true);
                  back.start();
                  pump(client, server, fromClient);
                } catch (java.io.IOException e) {
                  // The test closed the relay.
                }
              },
              "tls-recorder");
      relay.setDaemon(true);
      relay.start();
    }

    private static void pump(
        java.net.Socket from, java.net.Socket to, java.io.ByteArrayOutputStream keep) {
      byte[] buf = new byte[16384];
      try {
        int n;
        while ((n = from.getInputStream().read(buf)) > 0) {
          if (keep != null) {
            synchronized (keep) {
              keep.write(buf, 0, n);
            }
          }
          to.getOutputStream().write(buf, 0, n);
        }
      } catch (java.io.IOException e) {
        // One side went away: the session is over.
      }
    }

    byte[] recorded() {
      synchronized (fromClient) {
        return fromClient.toByteArray();
      }
    }

    @Override
    public void close() throws java.io.IOException {
      listener.close();
      for (java.net.Socket s : sockets) {
        s.close();
      }
    }
  }

  /**
   * Sends {@code bytes} on a new connection to {@code port}, then reads until the server closes.
   */
  private static void sendAndAwaitClose(int port, byte[] bytes, boolean keepOpen) throws Exception {
    try (java.net.Socket s = new java.net.Socket(java.net.InetAddress.getLoopbackAddress(), port)) {
      s.setSoTimeout(120_000); // the server's handshake timeout is what ends a stalled handshake
      s.getOutputStream().write(bytes);
      s.getOutputStream().flush();
      if (!keepOpen) {
        s.shutdownOutput();
      }
      byte[] sink = new byte[4096];
      try {
        while (s.getInputStream().read(sink) >= 0) {
          // The server's half of a handshake that goes nowhere.
        }
      } catch (java.net.SocketException reset) {
        // A server that resets is closing too.
      }
    }
  }

  @ParameterizedTest
  @ValueSource(strings = {"jdk", "openssl"})
  void aReplayedOrTruncatedHandshakeGetsNothingServed(String engine) throws Exception {
    useEngine(engine);
    Counting service = new Counting();
    RpcServer server = new RpcServer("test server", tls(ca, "node"), service);
    toClose.add(server);
    int port = server.start("127.0.0.1", 0).getPort();
    byte[] session;
    try (Recorder recorder = new Recorder(port)) {
      assertEquals("alice", call(tls(ca, "alice"), recorder.listener.getLocalPort()));
      session = recorder.recorded();
    }
    assertEquals(1, service.served.get());
    assertTrue(session.length > 100 && session[0] == 0x16, "a TLS session was recorded");

    // The whole session again, request included: the server's new handshake keys do not match the
    // recorded Finished, so nothing after it is read.
    sendAndAwaitClose(port, session, false);
    // The first record cut in half, then the connection closed.
    sendAndAwaitClose(port, java.util.Arrays.copyOf(session, 40), false);
    // Half a hello and then silence: the server ends the handshake itself, holding nothing.
    sendAndAwaitClose(port, java.util.Arrays.copyOf(session, 40), true);
    assertEquals(1, service.served.get(), "a call was served without a handshake of its own");

    // The server is unharmed: a real client is served.
    assertEquals("alice", call(tls(ca, "alice"), port));
    assertEquals(2, service.served.get());
  }
}
