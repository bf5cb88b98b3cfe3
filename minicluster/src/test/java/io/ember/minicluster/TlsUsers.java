package io.ember.minicluster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.ember.protocol.EmberConfig;
import io.ember.protocol.EmberException;
import io.ember.protocol.EmberKeys;
import io.ember.protocol.ErrorCode;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.function.Executable;

/**
 * A development CA for tests of secured clusters: {@code node}, a server certificate for loopback
 * that the name node and data nodes share, and a certificate for each user.
 */
final class TlsUsers {
  private final DevCertificates ca;

  private TlsUsers(DevCertificates ca) {
    this.ca = ca;
  }

  /** A CA in {@code dir} with the {@code node} certificate and one for each of {@code users}. */
  static TlsUsers issue(Path dir, String... users) throws Exception {
    return issue(dir, List.of(), users);
  }

  /**
   * As {@link #issue(Path, String...)}, with the {@code node} certificate also naming {@code
   * moreNodeHosts} (servers that listen on another address than loopback).
   */
  static TlsUsers issue(Path dir, List<String> moreNodeHosts, String... users) throws Exception {
    DevCertificates ca = DevCertificates.openOrCreate(dir);
    List<String> nodeHosts = new java.util.ArrayList<>(List.of("localhost", "127.0.0.1"));
    nodeHosts.addAll(moreNodeHosts);
    ca.issue("node", nodeHosts);
    for (String user : users) {
      ca.issue(user, List.of());
    }
    return new TlsUsers(ca);
  }

  /** Settings of a process that presents {@code name}'s certificate. */
  EmberConfig as(String name) {
    return EmberConfig.defaults()
        .with(EmberKeys.TLS, "true")
        .with(EmberKeys.TLS_CERTIFICATE, ca.certificateFile(name).toString())
        .with(EmberKeys.TLS_KEY, ca.keyFile(name).toString())
        .with(EmberKeys.TLS_CA, ca.caFile().toString());
  }

  /** An HTTP client that trusts this CA, as a browser given the cluster's CA would. */
  java.net.http.HttpClient httpsClient() throws Exception {
    java.security.KeyStore trust = java.security.KeyStore.getInstance("PKCS12");
    trust.load(null, null);
    try (java.io.InputStream in = java.nio.file.Files.newInputStream(ca.caFile())) {
      int i = 0;
      for (java.security.cert.Certificate c :
          java.security.cert.CertificateFactory.getInstance("X.509").generateCertificates(in)) {
        trust.setCertificateEntry("ca" + i++, c);
      }
    }
    javax.net.ssl.TrustManagerFactory tmf =
        javax.net.ssl.TrustManagerFactory.getInstance(
            javax.net.ssl.TrustManagerFactory.getDefaultAlgorithm());
    tmf.init(trust);
    javax.net.ssl.SSLContext ssl = javax.net.ssl.SSLContext.getInstance("TLSv1.3");
    ssl.init(null, tmf.getTrustManagers(), null);
    return java.net.http.HttpClient.newBuilder().sslContext(ssl).build();
  }

  /** Runs {@code op}, which must fail with {@code code}, and returns its message. */
  static String refused(ErrorCode code, Executable op) {
    EmberException e = assertThrows(EmberException.class, op);
    assertEquals(code, e.code(), e.getMessage());
    return e.getMessage();
  }
}
