package io.ember.minicluster;

import java.io.IOException;
import java.io.StringWriter;
import java.math.BigInteger;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.GeneralSecurityException;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.PrivateKey;
import java.security.SecureRandom;
import java.security.cert.CertificateFactory;
import java.security.cert.X509Certificate;
import java.security.spec.ECGenParameterSpec;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Date;
import java.util.List;
import java.util.regex.Pattern;
import org.bouncycastle.asn1.pkcs.PrivateKeyInfo;
import org.bouncycastle.asn1.x500.X500Name;
import org.bouncycastle.asn1.x500.X500NameBuilder;
import org.bouncycastle.asn1.x500.style.BCStyle;
import org.bouncycastle.asn1.x509.BasicConstraints;
import org.bouncycastle.asn1.x509.ExtendedKeyUsage;
import org.bouncycastle.asn1.x509.Extension;
import org.bouncycastle.asn1.x509.GeneralName;
import org.bouncycastle.asn1.x509.GeneralNames;
import org.bouncycastle.asn1.x509.KeyPurposeId;
import org.bouncycastle.asn1.x509.KeyUsage;
import org.bouncycastle.cert.X509v3CertificateBuilder;
import org.bouncycastle.cert.jcajce.JcaX509CertificateConverter;
import org.bouncycastle.cert.jcajce.JcaX509ExtensionUtils;
import org.bouncycastle.cert.jcajce.JcaX509v3CertificateBuilder;
import org.bouncycastle.openssl.PEMParser;
import org.bouncycastle.openssl.jcajce.JcaPEMKeyConverter;
import org.bouncycastle.openssl.jcajce.JcaPEMWriter;
import org.bouncycastle.openssl.jcajce.JcaPKCS8Generator;
import org.bouncycastle.operator.OperatorCreationException;
import org.bouncycastle.operator.jcajce.JcaContentSignerBuilder;

/**
 * A certificate authority for tests and local clusters, kept as PEM files in a directory: {@code
 * ca.pem} and {@code ca.key}, and for each name it certifies {@code NAME.pem} (the certificate,
 * then the CA's) and {@code NAME.key} (PKCS#8, readable by its owner only). Certificates carry both
 * server and client use, so one serves a data node that is also the name node's client. Keys are EC
 * P-256. Not for production: the CA's key sits beside what it signs.
 *
 * <pre>{@code
 * DevCertificates ca = DevCertificates.openOrCreate(dir);
 * ca.issue("namenode", List.of("nn.example.net", "127.0.0.1"));  // a server's hosts
 * ca.issue("alice", List.of());                                  // a user's client certificate
 * }</pre>
 */
public final class DevCertificates {
  /** How long certificates last: a local cluster's lifetime, with room to spare. */
  private static final Duration VALIDITY = Duration.ofDays(365);

  private static final Pattern NAME = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._-]{0,63}");
  private static final SecureRandom RANDOM = new SecureRandom();

  private final Path dir;
  private final X509Certificate caCert;
  private final PrivateKey caKey;

  private DevCertificates(Path dir, X509Certificate caCert, PrivateKey caKey) {
    this.dir = dir;
    this.caCert = caCert;
    this.caKey = caKey;
  }

  /**
   * The CA in {@code dir}: loaded from its {@code ca.pem} and {@code ca.key}, or made and written
   * there (the directory too) when there is none.
   *
   * @throws IOException when the directory or its files cannot be read or written
   */
  public static DevCertificates openOrCreate(Path dir) throws IOException {
    Path certFile = dir.resolve("ca.pem");
    Path keyFile = dir.resolve("ca.key");
    try {
      if (Files.exists(certFile)) {
        CertificateFactory cf = CertificateFactory.getInstance("X.509");
        X509Certificate cert =
            (X509Certificate)
                cf.generateCertificate(
                    new java.io.ByteArrayInputStream(Files.readAllBytes(certFile)));
        PrivateKey key = readKey(keyFile);
        return new DevCertificates(dir, cert, key);
      }
      Files.createDirectories(dir);
      KeyPair pair = newKeyPair();
      // A name of its own: two development CAs must never pass for each other.
      X500Name subject = name("Ember development CA " + Long.toHexString(RANDOM.nextLong()));
      Instant now = Instant.now();
      JcaX509ExtensionUtils ext = new JcaX509ExtensionUtils();
      X509v3CertificateBuilder b =
          new JcaX509v3CertificateBuilder(
                  subject,
                  serial(),
                  Date.from(now.minus(Duration.ofHours(1))),
                  Date.from(now.plus(VALIDITY.multipliedBy(5))),
                  subject,
                  pair.getPublic())
              .addExtension(Extension.basicConstraints, true, new BasicConstraints(0))
              .addExtension(
                  Extension.keyUsage, true, new KeyUsage(KeyUsage.keyCertSign | KeyUsage.cRLSign))
              .addExtension(
                  Extension.subjectKeyIdentifier,
                  false,
                  ext.createSubjectKeyIdentifier(pair.getPublic()));
      X509Certificate cert = sign(b, pair.getPrivate());
      writeKey(keyFile, pair.getPrivate());
      Files.writeString(certFile, pem(cert));
      return new DevCertificates(dir, cert, pair.getPrivate());
    } catch (GeneralSecurityException | OperatorCreationException e) {
      throw new IOException("cannot make or read the development CA in " + dir + ": " + e, e);
    }
  }

  /** The CA's certificate file: what {@code ember.security.tls.ca} names. */
  public Path caFile() {
    return dir.resolve("ca.pem");
  }

  /** The certificate file of {@code name}. */
  public Path certificateFile(String name) {
    return dir.resolve(name + ".pem");
  }

  /** The key file of {@code name}. */
  public Path keyFile(String name) {
    return dir.resolve(name + ".key");
  }

  /**
   * Certifies {@code name} (its certificate's common name: a user, or a node) for {@code hosts}
   * (host names and IP addresses a server is reached at; none for a user), writing {@code NAME.pem}
   * and {@code NAME.key}, replacing earlier ones.
   *
   * @throws IllegalArgumentException for a name that is not letters, digits, '.', '_' and '-'
   * @throws IOException when the files cannot be written
   */
  public void issue(String name, List<String> hosts) throws IOException {
    if (!NAME.matcher(name).matches() || name.equals("ca")) {
      throw new IllegalArgumentException(
          "a certificate's name is 1 to 64 letters, digits, '.', '_' or '-', not 'ca': " + name);
    }
    for (String h : hosts) {
      checkHost(h);
    }
    try {
      KeyPair pair = newKeyPair();
      Instant now = Instant.now();
      JcaX509ExtensionUtils ext = new JcaX509ExtensionUtils();
      List<GeneralName> names = new ArrayList<>();
      for (String h : hosts) {
        names.add(
            isAddress(h)
                ? new GeneralName(GeneralName.iPAddress, h)
                : new GeneralName(GeneralName.dNSName, h));
      }
      X509v3CertificateBuilder b =
          new JcaX509v3CertificateBuilder(
                  caCert,
                  serial(),
                  Date.from(now.minus(Duration.ofHours(1))),
                  Date.from(now.plus(VALIDITY)),
                  new javax.security.auth.x500.X500Principal(name(name).getEncoded()),
                  pair.getPublic())
              .addExtension(Extension.basicConstraints, true, new BasicConstraints(false))
              .addExtension(
                  Extension.keyUsage,
                  true,
                  new KeyUsage(KeyUsage.digitalSignature | KeyUsage.keyAgreement))
              .addExtension(
                  Extension.extendedKeyUsage,
                  false,
                  new ExtendedKeyUsage(
                      new KeyPurposeId[] {
                        KeyPurposeId.id_kp_serverAuth, KeyPurposeId.id_kp_clientAuth
                      }))
              .addExtension(
                  Extension.authorityKeyIdentifier, false, ext.createAuthorityKeyIdentifier(caCert))
              .addExtension(
                  Extension.subjectKeyIdentifier,
                  false,
                  ext.createSubjectKeyIdentifier(pair.getPublic()));
      if (!names.isEmpty()) {
        b.addExtension(
            Extension.subjectAlternativeName,
            false,
            new GeneralNames(names.toArray(new GeneralName[0])));
      }
      X509Certificate cert = sign(b, caKey);
      writeKey(keyFile(name), pair.getPrivate());
      Files.writeString(certificateFile(name), pem(cert, caCert));
    } catch (GeneralSecurityException | OperatorCreationException e) {
      throw new IOException("cannot issue a certificate for " + name + ": " + e, e);
    }
  }

  private static final Pattern IPV4 = Pattern.compile("\\d{1,3}(\\.\\d{1,3}){3}");
  private static final Pattern DNS =
      Pattern.compile(
          "(?=.{1,253}$)[A-Za-z0-9*]([A-Za-z0-9-]*[A-Za-z0-9])?(\\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)*");

  /**
   * Refuses what is neither a host name nor an IP address literal (a port, brackets, a zone), so a
   * bad host fails before any file is written.
   *
   * @throws IllegalArgumentException naming the host
   */
  public static void checkHost(String host) {
    if (isAddress(host)) {
      return;
    }
    if (!DNS.matcher(host).matches() || host.matches("[0-9.]+")) {
      throw new IllegalArgumentException(
          "not a host name or an IP address: '"
              + host
              + "' (write IPv6 addresses without brackets, and no port)");
    }
  }

  private static boolean isAddress(String host) {
    if (IPV4.matcher(host).matches()) {
      for (String part : host.split("\\.", -1)) {
        if (Integer.parseInt(part) > 255) {
          return false;
        }
      }
      return true;
    }
    if (host.contains(":") && host.matches("[0-9A-Fa-f:.]+")) {
      try {
        // A literal with colons is parsed, never looked up.
        return java.net.InetAddress.getByName(host) instanceof java.net.Inet6Address;
      } catch (java.net.UnknownHostException e) {
        return false;
      }
    }
    return false;
  }

  private static X500Name name(String commonName) {
    return new X500NameBuilder(BCStyle.INSTANCE)
        .addRDN(BCStyle.O, "Ember development")
        .addRDN(BCStyle.CN, commonName)
        .build();
  }

  private static KeyPair newKeyPair() throws GeneralSecurityException {
    KeyPairGenerator g = KeyPairGenerator.getInstance("EC");
    g.initialize(new ECGenParameterSpec("secp256r1"), RANDOM);
    return g.generateKeyPair();
  }

  private static BigInteger serial() {
    return new BigInteger(63, RANDOM);
  }

  private static X509Certificate sign(X509v3CertificateBuilder b, PrivateKey key)
      throws OperatorCreationException, GeneralSecurityException {
    return new JcaX509CertificateConverter()
        .getCertificate(b.build(new JcaContentSignerBuilder("SHA256withECDSA").build(key)));
  }

  private static void writeKey(Path file, PrivateKey key) throws IOException {
    Files.deleteIfExists(file);
    try {
      Files.createFile(
          file, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
    } catch (UnsupportedOperationException e) {
      Files.createFile(file); // not a POSIX file system
    } catch (FileAlreadyExistsException e) {
      throw new IOException(file + " appeared while it was written", e);
    }
    Files.writeString(file, pem(new JcaPKCS8Generator(key, null)));
  }

  /** PEM text of each object in turn (certificates, or a PKCS#8 key generator). */
  private static String pem(Object... objects) throws IOException {
    StringWriter text = new StringWriter();
    try (JcaPEMWriter w = new JcaPEMWriter(text)) {
      for (Object o : objects) {
        w.writeObject(o);
      }
    }
    return text.toString();
  }

  private static PrivateKey readKey(Path file) throws IOException {
    try (PEMParser p = new PEMParser(Files.newBufferedReader(file))) {
      if (p.readObject() instanceof PrivateKeyInfo info) {
        return new JcaPEMKeyConverter().getPrivateKey(info);
      }
      throw new IOException(file + " holds no unencrypted PKCS#8 private key");
    }
  }
}
