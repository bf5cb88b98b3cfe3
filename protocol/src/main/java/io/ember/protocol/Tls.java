package io.ember.protocol;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.handler.codec.DecoderException;
import io.netty.handler.ssl.ClientAuth;
import io.netty.handler.ssl.NotSslRecordException;
import io.netty.handler.ssl.OpenSsl;
import io.netty.handler.ssl.SslContext;
import io.netty.handler.ssl.SslContextBuilder;
import io.netty.handler.ssl.SslHandler;
import io.netty.handler.ssl.SslProvider;
import io.netty.util.AttributeKey;
import java.io.File;
import java.security.cert.Certificate;
import java.security.cert.CertificateException;
import java.security.cert.X509Certificate;
import java.util.Locale;
import javax.naming.ldap.LdapName;
import javax.naming.ldap.Rdn;
import javax.net.ssl.SSLException;
import javax.net.ssl.SSLHandshakeException;
import javax.net.ssl.SSLPeerUnverifiedException;
import javax.net.ssl.SSLSession;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * TLS 1.3 with certificates on both sides (mutual TLS) for Ember's connections, from {@link
 * EmberKeys#TLS} and the PEM files it names. A client whose certificate a CA in {@link
 * EmberKeys#TLS_CA} signed is that certificate's common name ({@link #peerIdentity}); a client
 * without one has no identity, and servers serve it only what needs none (the name node: to
 * authenticate with a delegation token; a data node: the blocks its block tokens grant). A client
 * refuses a server whose certificate is not so signed or does not name the host it connected to, so
 * a peer that only knows the cluster's address cannot stand in for a server.
 *
 * <p>OpenSSL (BoringSSL through netty-tcnative) is used where it loads, the JDK's engine otherwise
 * ({@link EmberKeys#TLS_PROVIDER}).
 */
public final class Tls {
  private static final Logger LOG = LoggerFactory.getLogger(Tls.class);

  /** The pipeline name of the TLS handler, first in every secured connection's pipeline. */
  public static final String HANDLER = "tls";

  /**
   * The identity of the peer at the other end of a server's connection, once it has shaken hands.
   */
  public static final AttributeKey<String> PEER_IDENTITY = AttributeKey.valueOf("ember.identity");

  private static final String PROTOCOL = "TLSv1.3";

  private final SslContext server;
  private final SslContext client;
  private final SslContext http;
  private final String provider;

  private Tls(SslContext server, SslContext client, SslContext http, String provider) {
    this.server = server;
    this.client = client;
    this.http = http;
    this.provider = provider;
  }

  /**
   * TLS as {@code config} asks for it.
   *
   * @return null when {@link EmberKeys#TLS} is off
   * @throws EmberException {@link ErrorCode#INVALID_ARGUMENT} naming the key whose file is missing
   *     or unreadable, or the provider that cannot be had
   */
  public static Tls from(EmberConfig config) throws EmberException {
    if (!EmberKeys.secured(config)) {
      return null;
    }
    return of(config);
  }

  /**
   * TLS for a client's connections only, as {@code config} asks for it: as {@link #from}, except
   * that with neither {@link EmberKeys#TLS_CERTIFICATE} nor {@link EmberKeys#TLS_KEY} set the
   * client shows no certificate (it authenticates with a delegation token instead), and checks the
   * server's against {@link EmberKeys#TLS_CA} all the same.
   *
   * @return null when {@link EmberKeys#TLS} is off
   * @throws EmberException as {@link #from}
   */
  public static Tls forClient(EmberConfig config) throws EmberException {
    if (!EmberKeys.secured(config)) {
      return null;
    }
    if (!config.get(EmberKeys.TLS_CERTIFICATE).isEmpty()
        || !config.get(EmberKeys.TLS_KEY).isEmpty()) {
      return of(config);
    }
    File ca = file(config, EmberKeys.TLS_CA);
    SslProvider provider = provider(config.get(EmberKeys.TLS_PROVIDER));
    try {
      SslContext client =
          SslContextBuilder.forClient()
              .trustManager(ca)
              .protocols(PROTOCOL)
              .endpointIdentificationAlgorithm("HTTPS")
              .sslProvider(provider)
              .build();
      return new Tls(null, client, null, provider.name().toLowerCase(Locale.ROOT));
    } catch (SSLException | IllegalArgumentException e) {
      throw new EmberException(
          ErrorCode.INVALID_ARGUMENT,
          "cannot set up TLS from " + EmberKeys.TLS_CA.name() + "=" + ca + ": " + rootMessage(e),
          e);
    }
  }

  private static Tls of(EmberConfig config) throws EmberException {
    File cert = file(config, EmberKeys.TLS_CERTIFICATE);
    File key = file(config, EmberKeys.TLS_KEY);
    File ca = file(config, EmberKeys.TLS_CA);
    checkKeyBelongsToCertificate(cert, key);
    SslProvider provider = provider(config.get(EmberKeys.TLS_PROVIDER));
    try {
      SslContext server =
          SslContextBuilder.forServer(cert, key)
              .trustManager(ca)
              // A client without a certificate gets as far as the handshake; each server then
              // serves it only what a delegation or block token lets it have.
              .clientAuth(ClientAuth.OPTIONAL)
              .protocols(PROTOCOL)
              .sslProvider(provider)
              .build();
      SslContext client =
          SslContextBuilder.forClient()
              .keyManager(cert, key)
              .trustManager(ca)
              .protocols(PROTOCOL)
              .endpointIdentificationAlgorithm("HTTPS")
              .sslProvider(provider)
              .build();
      // Status pages: browsers and Prometheus bring no client certificate, and the pages show
      // only what is open to everyone, so TLS there authenticates the server and encrypts.
      SslContext http =
          SslContextBuilder.forServer(cert, key).protocols(PROTOCOL).sslProvider(provider).build();
      return new Tls(server, client, http, provider.name().toLowerCase(Locale.ROOT));
    } catch (SSLException | IllegalArgumentException e) {
      throw new EmberException(
          ErrorCode.INVALID_ARGUMENT,
          "cannot set up TLS from "
              + EmberKeys.TLS_CERTIFICATE.name()
              + "="
              + cert
              + ", "
              + EmberKeys.TLS_KEY.name()
              + "="
              + key
              + " and "
              + EmberKeys.TLS_CA.name()
              + "="
              + ca
              + ": "
              + rootMessage(e)
              + " (PEM files: a certificate chain, its unencrypted PKCS#8 key, the CA certificates)",
          e);
    }
  }

  /**
   * Refuses a key that is not the certificate's own. TLS would refuse it too, but only at the peer,
   * whose alert reads as if the peer were at fault; here the mistake is named where it is. Keys in
   * other forms than unencrypted PKCS#8 are left to the TLS engine, which names them.
   */
  private static void checkKeyBelongsToCertificate(File cert, File key) throws EmberException {
    java.security.PrivateKey privateKey;
    java.security.PublicKey publicKey;
    String otherKind = null;
    try {
      String pem =
          java.nio.file.Files.readString(key.toPath(), java.nio.charset.StandardCharsets.US_ASCII);
      java.util.regex.Matcher m =
          java.util.regex.Pattern.compile(
                  "-----BEGIN PRIVATE KEY-----([A-Za-z0-9+/=\\s]+)-----END PRIVATE KEY-----")
              .matcher(pem);
      Certificate first;
      try (java.io.InputStream in = java.nio.file.Files.newInputStream(cert.toPath())) {
        first = java.security.cert.CertificateFactory.getInstance("X.509").generateCertificate(in);
      }
      if (!m.find() || first == null) {
        return;
      }
      publicKey = first.getPublicKey();
      byte[] der = java.util.Base64.getMimeDecoder().decode(m.group(1));
      try {
        privateKey =
            java.security.KeyFactory.getInstance(publicKey.getAlgorithm())
                .generatePrivate(new java.security.spec.PKCS8EncodedKeySpec(der));
      } catch (java.security.spec.InvalidKeySpecException notThisKind) {
        // An RSA key beside an EC certificate, say: as much a mismatch as another EC key.
        otherKind = kindOf(der);
        if (otherKind == null) {
          return;
        }
        privateKey = null;
      }
    } catch (java.io.IOException
        | java.security.GeneralSecurityException
        | IllegalArgumentException unreadable) {
      return; // The engine names what it cannot read.
    }
    if (otherKind != null) {
      throw keyMismatch(
          cert, key, otherKind + " key, " + publicKey.getAlgorithm() + " certificate");
    }
    String algorithm =
        switch (publicKey.getAlgorithm()) {
          case "EC" -> "SHA256withECDSA";
          case "RSA" -> "SHA256withRSA";
          case "Ed25519", "Ed448", "EdDSA" -> publicKey.getAlgorithm();
          default -> null;
        };
    if (algorithm == null) {
      return;
    }
    boolean matches;
    try {
      byte[] probe = new byte[32];
      new java.security.SecureRandom().nextBytes(probe);
      java.security.Signature sign = java.security.Signature.getInstance(algorithm);
      sign.initSign(privateKey);
      sign.update(probe);
      byte[] signature = sign.sign();
      java.security.Signature verify = java.security.Signature.getInstance(algorithm);
      verify.initVerify(publicKey);
      verify.update(probe);
      matches = verify.verify(signature);
    } catch (java.security.GeneralSecurityException differentKind) {
      matches = false;
    }
    if (!matches) {
      throw keyMismatch(cert, key, null);
    }
  }

  /** The algorithm of a PKCS#8 key, or null when none of the usual ones reads it. */
  private static String kindOf(byte[] der) {
    for (String kind : java.util.List.of("RSA", "EC", "Ed25519", "Ed448")) {
      try {
        java.security.KeyFactory.getInstance(kind)
            .generatePrivate(new java.security.spec.PKCS8EncodedKeySpec(der));
        return kind;
      } catch (java.security.GeneralSecurityException notThisOne) {
        // the next
      }
    }
    return null;
  }

  private static EmberException keyMismatch(File cert, File key, String kinds) {
    return new EmberException(
        ErrorCode.INVALID_ARGUMENT,
        EmberKeys.TLS_KEY.name()
            + " does not belong to the certificate in "
            + EmberKeys.TLS_CERTIFICATE.name()
            + " ("
            + key
            + " is not the key of "
            + cert
            + (kinds == null ? "" : "; " + kinds)
            + "): name the key that was made with this certificate");
  }

  private static File file(EmberConfig config, ConfigKey<String> key) throws EmberException {
    String path = config.get(key);
    if (path.isEmpty()) {
      throw new EmberException(
          ErrorCode.INVALID_ARGUMENT,
          EmberKeys.TLS.name()
              + "=true needs "
              + key.name()
              + " (a PEM file); `ember security dev-ca` writes them for tests and local clusters");
    }
    File f = new File(path);
    if (!f.canRead()) {
      throw new EmberException(
          ErrorCode.INVALID_ARGUMENT,
          key.name() + ": cannot read " + path + (f.exists() ? " (permission denied)" : ""));
    }
    return f;
  }

  private static SslProvider provider(String choice) throws EmberException {
    return switch (choice) {
      case "jdk" -> SslProvider.JDK;
      case "openssl" -> {
        if (!OpenSsl.isAvailable()) {
          throw new EmberException(
              ErrorCode.INVALID_ARGUMENT,
              EmberKeys.TLS_PROVIDER.name()
                  + "=openssl, but OpenSSL does not load here: "
                  + OpenSsl.unavailabilityCause());
        }
        yield SslProvider.OPENSSL;
      }
      default -> OpenSsl.isAvailable() ? SslProvider.OPENSSL : SslProvider.JDK;
    };
  }

  /** "openssl" or "jdk": the engine in use. */
  public String provider() {
    return provider;
  }

  /**
   * Secures a server's new connection: a TLS handler first in its pipeline, ahead of a check that
   * answers a client speaking plain Ember with a plain error frame it can read ("this server
   * requires TLS") before closing.
   */
  public void secureServer(Channel ch) {
    SslHandler tls = server.newHandler(ch.alloc());
    ch.pipeline().addFirst(HANDLER, tls);
    ch.pipeline().addFirst("plain-refusal", plainEmberRefusal());
    tls.handshakeFuture()
        .addListener(
            f -> {
              if (f.isSuccess()) {
                ch.attr(PEER_IDENTITY).set(commonName(tls.engine().getSession()));
              } else if (f.cause() instanceof SSLException
                  || f.cause() instanceof DecoderException) {
                LOG.warn(
                    "refused a connection from {}: TLS handshake failed: {}",
                    ch.remoteAddress(),
                    rootMessage(f.cause()));
              } else {
                // Closed before it shook hands: a plain client refused, or a reachability probe.
                LOG.debug("connection from {} closed unsecured", ch.remoteAddress(), f.cause());
              }
            });
  }

  /**
   * Secures a status-page connection: HTTPS with this node's certificate and no client certificate,
   * behind a check that answers a plain HTTP request with a readable 400 saying to use https.
   */
  public void secureHttpServer(Channel ch) {
    ch.pipeline().addFirst(HANDLER, http.newHandler(ch.alloc()));
    ch.pipeline().addFirst("plain-http-refusal", plainHttpRefusal());
  }

  /**
   * Secures a client's new connection to {@code peer}: the server's certificate must name {@code
   * peer.host()}.
   *
   * @return the handshake: the connection is usable once it succeeds
   */
  public io.netty.util.concurrent.Future<Channel> secureClient(Channel ch, HostPort peer) {
    SslHandler tls = client.newHandler(ch.alloc(), peer.host(), peer.port());
    ch.pipeline().addFirst(HANDLER, tls);
    return tls.handshakeFuture();
  }

  /**
   * Whether {@code cause} is TLS refusing the peer (a certificate, an alert, bytes that are not
   * TLS) rather than a connection that merely closed.
   */
  public static boolean refusedByTls(Throwable cause) {
    return cause instanceof SSLException || cause instanceof DecoderException;
  }

  /** The caller's identity on a server's connection: its certificate's common name, or null. */
  public static String peerIdentity(Channel ch) {
    return ch.attr(PEER_IDENTITY).get();
  }

  private static String commonName(SSLSession session) {
    try {
      Certificate[] chain = session.getPeerCertificates();
      if (chain.length > 0 && chain[0] instanceof X509Certificate x) {
        return identityOf(x);
      }
    } catch (SSLPeerUnverifiedException | javax.naming.InvalidNameException e) {
      LOG.debug("no peer identity", e);
    }
    return null;
  }

  private static String identityOf(X509Certificate x) throws javax.naming.InvalidNameException {
    for (Rdn rdn : new LdapName(x.getSubjectX500Principal().getName()).getRdns()) {
      if (rdn.getType().equalsIgnoreCase("CN")) {
        return rdn.getValue().toString();
      }
    }
    return x.getSubjectX500Principal().getName();
  }

  /**
   * The identity this process shows its peers under TLS: the common name of the first certificate
   * in {@link EmberKeys#TLS_CERTIFICATE}, as a server finds it in {@link #peerIdentity}.
   *
   * @throws EmberException INVALID_ARGUMENT when the file holds no certificate that can be read
   */
  public static String ownIdentity(EmberConfig config) throws EmberException {
    File cert = file(config, EmberKeys.TLS_CERTIFICATE);
    try (java.io.InputStream in = new java.io.FileInputStream(cert)) {
      for (Certificate c :
          java.security.cert.CertificateFactory.getInstance("X.509").generateCertificates(in)) {
        if (c instanceof X509Certificate x) {
          return identityOf(x);
        }
      }
    } catch (java.io.IOException
        | java.security.cert.CertificateException
        | javax.naming.InvalidNameException e) {
      throw new EmberException(
          ErrorCode.INVALID_ARGUMENT,
          "cannot read a certificate from "
              + cert
              + " ("
              + EmberKeys.TLS_CERTIFICATE.name()
              + "): "
              + e.getMessage(),
          e);
    }
    throw new EmberException(
        ErrorCode.INVALID_ARGUMENT,
        cert + " (" + EmberKeys.TLS_CERTIFICATE.name() + ") holds no certificate");
  }

  /**
   * Why a TLS handshake with {@code peer} failed, in words a person can act on.
   *
   * @param peer how to name the server, e.g. "name node 10.0.0.1:9060"
   */
  public static String whyHandshakeFailed(Throwable cause, String peer) {
    Throwable c =
        cause instanceof DecoderException && cause.getCause() != null ? cause.getCause() : cause;
    String m = rootMessage(c).toLowerCase(Locale.ROOT);
    if (c instanceof NotSslRecordException || m.contains("not an ssl/tls record")) {
      return peer
          + " does not speak TLS (this client has "
          + EmberKeys.TLS.name()
          + "=true; is it set on the server?)";
    }
    if (m.contains("subject alternative name")
        || m.contains("no name matching")
        || m.contains("hostname")) {
      return peer + "'s certificate does not name the host connected to: " + rootMessage(c);
    }
    if (m.contains("pkix")
        || m.contains("unable to find valid certification path")
        || m.contains("signature does not match")
        || m.contains("signature check failed")
        || (m.contains("certificate_unknown") && hasCause(c, CertificateException.class))) {
      return peer
          + "'s certificate is not signed by a CA in "
          + EmberKeys.TLS_CA.name()
          + ": "
          + rootMessage(c);
    }
    if (m.contains("bad_certificate")
        || m.contains("certificate_required")
        || m.contains("unknown_ca")
        || m.contains("certificate_unknown")
        || m.contains("access_denied")) {
      return peer + " refused this client's certificate (" + rootMessage(c) + ")";
    }
    if (c instanceof SSLHandshakeException || c instanceof SSLException) {
      return "TLS handshake with " + peer + " failed: " + rootMessage(c);
    }
    return "TLS handshake with " + peer + " failed: " + c;
  }

  private static boolean hasCause(Throwable t, Class<? extends Throwable> type) {
    for (Throwable c = t; c != null; c = c.getCause()) {
      if (type.isInstance(c)) {
        return true;
      }
    }
    return false;
  }

  static String rootMessage(Throwable t) {
    Throwable c = t;
    while (c.getCause() != null && c.getCause() != c) {
      c = c.getCause();
    }
    String m = c.getMessage();
    return m == null ? c.toString() : m;
  }

  /**
   * The first handler of a secured server's connection: a client whose first byte cannot begin a
   * TLS record (22, a handshake) speaks plain, and gets {@code answer} in plain saying why, then
   * the close. A TLS client passes, and this handler leaves the pipeline.
   */
  private static final class PlainRefusal extends ChannelInboundHandlerAdapter {
    private final String why;
    private final java.util.function.Function<ByteBufAllocator, ByteBuf> answer;

    PlainRefusal(String why, java.util.function.Function<ByteBufAllocator, ByteBuf> answer) {
      this.why = why;
      this.answer = answer;
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
      ByteBuf in = (ByteBuf) msg;
      if (!in.isReadable()) {
        ctx.fireChannelRead(msg);
        return;
      }
      if (in.getUnsignedByte(in.readerIndex()) == 22) {
        ctx.pipeline().remove(this);
        ctx.fireChannelRead(msg);
        return;
      }
      in.release();
      LOG.warn("refused a connection from {}: {}", ctx.channel().remoteAddress(), why);
      // Written and closed from this context, the answer and the close skip the TLS handler behind
      // it: the client reads the answer, and no TLS record follows it.
      ctx.writeAndFlush(answer.apply(ctx.alloc()))
          .addListener(f -> ctx.close().addListener(ChannelListeners.LOG_CLOSE_FAILURE));
    }
  }

  /** Plain Ember at a TLS server: an error frame the client can read. */
  private static PlainRefusal plainEmberRefusal() {
    return new PlainRefusal(
        "it does not speak TLS, and this server has " + EmberKeys.TLS.name() + "=true",
        alloc -> {
          ByteBuf refusal = alloc.buffer();
          Frame.encode(
              refusal,
              0,
              Frame.FLAG_RESPONSE | Frame.FLAG_ERROR,
              0,
              new Messages.ErrorReply(
                  ErrorCode.UNAUTHENTICATED,
                  "this server requires TLS: set "
                      + EmberKeys.TLS.name()
                      + "=true and a certificate ("
                      + EmberKeys.TLS_CERTIFICATE.name()
                      + ", "
                      + EmberKeys.TLS_KEY.name()
                      + ", "
                      + EmberKeys.TLS_CA.name()
                      + ") on the client"),
              0);
          return refusal;
        });
  }

  /** Plain HTTP at an HTTPS status page: a 400 a person can act on. */
  private static PlainRefusal plainHttpRefusal() {
    return new PlainRefusal(
        "a plain HTTP request, and the status pages are HTTPS",
        alloc -> {
          byte[] body =
              ("This status page is served over HTTPS ("
                      + EmberKeys.TLS.name()
                      + "=true): open it with https:// instead of http://\n")
                  .getBytes(java.nio.charset.StandardCharsets.UTF_8);
          ByteBuf out = alloc.buffer();
          out.writeCharSequence(
              "HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\n"
                  + "Connection: close\r\nContent-Length: "
                  + body.length
                  + "\r\n\r\n",
              java.nio.charset.StandardCharsets.US_ASCII);
          return out.writeBytes(body);
        });
  }
}
