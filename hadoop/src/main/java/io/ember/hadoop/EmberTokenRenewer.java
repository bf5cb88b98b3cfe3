package io.ember.hadoop;

import io.ember.client.EmberClient;
import io.ember.protocol.EmberConfig;
import io.ember.protocol.EmberException;
import io.ember.protocol.EmberKeys;
import java.io.IOException;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.io.Text;
import org.apache.hadoop.security.token.Token;
import org.apache.hadoop.security.token.TokenRenewer;

/**
 * Renews and cancels Ember delegation tokens for Hadoop ({@link Token#renew} and {@link
 * Token#cancel}, as YARN's and Spark's token renewers call them): it connects to the name node the
 * token's service names, with the {@code ember.*} settings of the configuration it is given, so it
 * needs a certificate of the token's renewer (renewing) or owner (cancelling).
 */
public final class EmberTokenRenewer extends TokenRenewer {
  @Override
  public boolean handleKind(Text kind) {
    return EmberTokenIdentifier.KIND.equals(kind);
  }

  @Override
  public boolean isManaged(Token<?> token) {
    return true;
  }

  @Override
  public long renew(Token<?> token, Configuration conf) throws IOException {
    try (EmberClient client = EmberClient.connect(configFor(token, conf))) {
      return client.renewDelegationToken(EmberTokenIdentifier.fromHadoop(token));
    } catch (EmberException e) {
      throw EmberFileSystem.translate(e);
    }
  }

  @Override
  public void cancel(Token<?> token, Configuration conf) throws IOException {
    try (EmberClient client = EmberClient.connect(configFor(token, conf))) {
      client.cancelDelegationToken(EmberTokenIdentifier.fromHadoop(token));
    } catch (EmberException e) {
      throw EmberFileSystem.translate(e);
    }
  }

  /** The configuration to reach the token's name node with, as the caller itself (no token). */
  private static EmberConfig configFor(Token<?> token, Configuration conf) throws IOException {
    String service = token.getService().toString();
    if (service.isEmpty()) {
      throw new IOException("the Ember delegation token names no name node (its service is empty)");
    }
    return EmberFileSystem.emberConfig(conf, service).with(EmberKeys.DELEGATION_TOKEN, "");
  }
}
