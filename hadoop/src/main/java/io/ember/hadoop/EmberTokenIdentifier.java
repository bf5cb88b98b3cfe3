package io.ember.hadoop;

import io.ember.protocol.DelegationToken;
import java.io.DataInput;
import java.io.DataOutput;
import java.io.IOException;
import org.apache.hadoop.io.Text;
import org.apache.hadoop.security.UserGroupInformation;
import org.apache.hadoop.security.token.Token;
import org.apache.hadoop.security.token.TokenIdentifier;

/**
 * An Ember delegation token's identifier as Hadoop's credentials hold it: {@link
 * Token#decodeIdentifier} finds this class by the token's kind, {@link #KIND}, through {@code
 * META-INF/services}.
 */
public final class EmberTokenIdentifier extends TokenIdentifier {
  /** The kind of every Ember delegation token. */
  public static final Text KIND = new Text(DelegationToken.KIND);

  private DelegationToken.Identifier identifier;

  /** An empty identifier, for {@link #readFields}. */
  public EmberTokenIdentifier() {}

  /** The identifier of {@code token}. */
  public EmberTokenIdentifier(DelegationToken.Identifier identifier) {
    this.identifier = identifier;
  }

  /** The Ember identifier; null until read. */
  public DelegationToken.Identifier identifier() {
    return identifier;
  }

  @Override
  public Text getKind() {
    return KIND;
  }

  @Override
  public UserGroupInformation getUser() {
    return identifier == null ? null : UserGroupInformation.createRemoteUser(identifier.owner());
  }

  @Override
  public void write(DataOutput out) throws IOException {
    identifier.write(out);
  }

  @Override
  public void readFields(DataInput in) throws IOException {
    identifier = DelegationToken.Identifier.read(in);
  }

  /** The identifier without any secret, as Hadoop's {@code Token.toString} prints it. */
  @Override
  public String toString() {
    return identifier == null
        ? "an empty Ember delegation token identifier"
        : identifier.toString();
  }

  /** The Hadoop token for an Ember one, filed under {@code service} ("host:port"). */
  static Token<EmberTokenIdentifier> toHadoop(DelegationToken token, String service) {
    return new Token<>(token.identifier().bytes(), token.password(), KIND, new Text(service));
  }

  /**
   * The Ember token a Hadoop one holds.
   *
   * @throws IOException when it is not an Ember delegation token
   */
  static DelegationToken fromHadoop(Token<?> token) throws IOException {
    if (!KIND.equals(token.getKind())) {
      throw new IOException("not an Ember delegation token: its kind is " + token.getKind());
    }
    return new DelegationToken(
        DelegationToken.Identifier.fromBytes(token.getIdentifier()), token.getPassword());
  }
}
