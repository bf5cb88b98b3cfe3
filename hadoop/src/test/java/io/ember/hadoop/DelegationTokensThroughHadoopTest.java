package io.ember.hadoop;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ember.minicluster.DevCertificates;
import io.ember.minicluster.MiniCluster;
import io.ember.namenode.NameNodeKeys;
import io.ember.protocol.EmberConfig;
import io.ember.protocol.EmberKeys;
import java.net.URI;
import java.nio.file.Path;
import java.security.PrivilegedExceptionAction;
import java.util.List;
import java.util.Random;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.io.IOUtils;
import org.apache.hadoop.io.Text;
import org.apache.hadoop.security.AccessControlException;
import org.apache.hadoop.security.Credentials;
import org.apache.hadoop.security.UserGroupInformation;
import org.apache.hadoop.security.token.Token;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Delegation tokens through Hadoop's API, as a job uses them: the driver (with a certificate) adds
 * the file system's tokens to the job's credentials, the renewer renews them through {@link
 * Token#renew}, and a process with no certificate, only those credentials, reads and writes as the
 * driver's user.
 */
class DelegationTokensThroughHadoopTest {
  @TempDir Path tmp;

  private static Configuration hadoopConf(DevCertificates ca, String user) {
    Configuration conf = new Configuration(false);
    conf.set(EmberKeys.TLS.name(), "true");
    conf.set(EmberKeys.TLS_CA.name(), ca.caFile().toString());
    if (user != null) {
      conf.set(EmberKeys.TLS_CERTIFICATE.name(), ca.certificateFile(user).toString());
      conf.set(EmberKeys.TLS_KEY.name(), ca.keyFile(user).toString());
    }
    conf.setBoolean("fs.ember.impl.disable.cache", true);
    return conf;
  }

  @Test
  void aProcessWithOnlyTheJobsCredentialsActsAsTheDriversUser() throws Exception {
    DevCertificates ca = DevCertificates.openOrCreate(tmp.resolve("ca"));
    ca.issue("node", List.of("localhost", "127.0.0.1"));
    ca.issue("alice", List.of());
    ca.issue("yarn", List.of());
    EmberConfig node =
        EmberConfig.defaults()
            .with(EmberKeys.TLS, "true")
            .with(EmberKeys.TLS_CERTIFICATE, ca.certificateFile("node").toString())
            .with(EmberKeys.TLS_KEY, ca.keyFile("node").toString())
            .with(EmberKeys.TLS_CA, ca.caFile().toString())
            .with(NameNodeKeys.SUPERUSERS, "node");
    byte[] data = new byte[300_000];
    new Random(3).nextBytes(data);
    try (MiniCluster cluster = MiniCluster.builder().dramDatanodes(1).config(node).build()) {
      URI uri = URI.create("ember://" + cluster.namenodeAddress() + "/");
      Credentials credentials = new Credentials();
      try (FileSystem driver = FileSystem.newInstance(uri, hadoopConf(ca, "alice"))) {
        driver.mkdirs(new org.apache.hadoop.fs.Path("/jobs"));
        Token<?>[] added = driver.addDelegationTokens("yarn", credentials);
        assertEquals(1, added.length);
        assertEquals(cluster.namenodeAddress().toString(), driver.getCanonicalServiceName());
      }
      Token<?> token = credentials.getToken(new Text(cluster.namenodeAddress().toString()));
      assertNotNull(token);
      assertEquals("alice", token.decodeIdentifier().getUser().getUserName());
      // Hadoop finds the renewer by the token's kind; only the renewer named may renew.
      assertTrue(token.isManaged());
      AccessControlException notRenewer =
          assertThrows(AccessControlException.class, () -> token.renew(hadoopConf(ca, "alice")));
      assertTrue(notRenewer.getMessage().contains("only yarn may"), notRenewer.getMessage());
      assertTrue(token.renew(hadoopConf(ca, "yarn")) > System.currentTimeMillis());

      // An executor: no certificate, only the credentials.
      UserGroupInformation executor = UserGroupInformation.createRemoteUser("executor");
      executor.addCredentials(credentials);
      executor.doAs(
          (PrivilegedExceptionAction<Void>)
              () -> {
                try (FileSystem fs = FileSystem.newInstance(uri, hadoopConf(ca, null))) {
                  org.apache.hadoop.fs.Path out = new org.apache.hadoop.fs.Path("/jobs/part-0");
                  try (FSDataOutputStream o = fs.create(out)) {
                    o.write(data);
                  }
                  assertEquals("alice", fs.getFileStatus(out).getOwner());
                  byte[] back = new byte[data.length];
                  try (FSDataInputStream in = fs.open(out)) {
                    IOUtils.readFully(in, back, 0, back.length);
                  }
                  assertArrayEquals(data, back);
                }
                return null;
              });

      // Once the job ends and the token is cancelled, the same credentials get nothing.
      token.cancel(hadoopConf(ca, "alice"));
      AccessControlException refused =
          assertThrows(
              AccessControlException.class,
              () ->
                  executor.doAs(
                      (PrivilegedExceptionAction<FileSystem>)
                          () -> FileSystem.newInstance(uri, hadoopConf(ca, null))));
      assertTrue(refused.getMessage().contains("cancelled"), refused.getMessage());
      // Without credentials at all, the file system says what is missing.
      AccessControlException none =
          assertThrows(
              AccessControlException.class,
              () -> FileSystem.newInstance(uri, hadoopConf(ca, null)));
      assertTrue(none.getMessage().contains("delegation token"), none.getMessage());
    }
  }
}
