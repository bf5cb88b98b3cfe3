package io.ember.tier.nvmf;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ember.nvmf.NvmfHostOptions;
import io.ember.nvmf.auth.DhchapHash;
import io.ember.nvmf.auth.DhchapSecret;
import io.ember.protocol.EmberConfig;
import java.security.SecureRandom;
import org.junit.jupiter.api.Test;

/** The NVMf host identity and DH-HMAC-CHAP secrets from configuration. */
class NvmfTierKeysTest {
  @Test
  void secretsReachTheHostOptionsAndABadOneIsRefusedWithoutShowingIt() {
    String secret = DhchapSecret.generate(DhchapHash.SHA256, 32, new SecureRandom()).encoded();
    NvmfHostOptions o =
        NvmfTierKeys.identity(
                NvmfHostOptions.builder(),
                EmberConfig.defaults()
                    .with(NvmfTierKeys.HOST_NQN, "nqn.2024-01.io.ember:h")
                    .with(NvmfTierKeys.DHCHAP_SECRET, secret))
            .build();
    assertEquals("nqn.2024-01.io.ember:h", o.hostNqn());
    assertEquals(secret, o.dhchapSecret().encoded());
    assertNull(o.dhchapControllerSecret());

    String typo =
        secret.substring(0, 20) + (secret.charAt(20) == 'x' ? 'y' : 'x') + secret.substring(21);
    IllegalArgumentException e =
        assertThrows(
            IllegalArgumentException.class,
            () ->
                EmberConfig.defaults()
                    .with(NvmfTierKeys.DHCHAP_SECRET, typo)
                    .get(NvmfTierKeys.DHCHAP_SECRET));
    assertTrue(
        e.getMessage().startsWith("ember.nvmf.dhchap-secret: the value (not shown"),
        e.getMessage());
    assertFalse(e.getMessage().contains(typo.substring(10, 40)), e.getMessage());

    IllegalArgumentException alone =
        assertThrows(
            IllegalArgumentException.class,
            () ->
                NvmfTierKeys.identity(
                    NvmfHostOptions.builder(),
                    EmberConfig.defaults().with(NvmfTierKeys.DHCHAP_CTRL_SECRET, secret)));
    assertEquals(
        "ember.nvmf.dhchap-ctrl-secret needs ember.nvmf.dhchap-secret too", alone.getMessage());
  }
}
