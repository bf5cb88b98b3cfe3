package io.ember.protocol;

import java.util.concurrent.CompletableFuture;

/**
 * What a new name node connection says before it carries anything else: a delegation token, or a
 * SCRAM exchange. {@link RpcClients#greet} and {@link DirectConnection} run it on each connection
 * they open, and hand the connection out only once it succeeds.
 */
@FunctionalInterface
public interface Greeting {
  /**
   * Greets over {@code exchange}, the new connection.
   *
   * @return completes when the server took the greeting; fails with the server's refusal (an {@link
   *     EmberException}, {@link ErrorCode#UNAUTHENTICATED} for a refused identity)
   */
  CompletableFuture<Void> greet(Exchange exchange);

  /** Calls on the connection being greeted. */
  interface Exchange {
    /** One call, as {@link RpcClient#call}. */
    <T> CompletableFuture<T> call(MessageType type, Message body, ResponseDecoder<T> decoder);
  }

  /** Shows a delegation token ({@link MessageType#AUTHENTICATE}). */
  static Greeting token(DelegationToken token) {
    Message body = new Messages.TokenMessage(token.encode());
    return exchange ->
        exchange.call(MessageType.AUTHENTICATE, body, ResponseDecoder.EMPTY).thenApply(v -> null);
  }

  /**
   * Proves {@code user}'s password with SCRAM-SHA-256 ({@link MessageType#SCRAM_FIRST}, then {@link
   * MessageType#SCRAM_LAST}), and checks that the server proves it holds the user's verifier.
   */
  static Password scram(String user, String password) {
    return new Password(user, password);
  }

  /**
   * A SCRAM-SHA-256 greeting, which also keeps what the last exchange agreed to unmask block keys
   * with ({@link #blockKeyWrap}).
   */
  final class Password implements Greeting {
    private final String user;
    private final String password;
    private final Scram.SaltedPasswords salted = new Scram.SaltedPasswords();
    private volatile byte[] blockKeyWrap;

    private Password(String user, String password) {
      this.user = user;
      this.password = password;
    }

    @Override
    public CompletableFuture<Void> greet(Exchange exchange) {
      ResponseDecoder<String> text =
          in -> Wire.readString(in, "SCRAM message", Scram.MAX_MESSAGE_BYTES);
      Scram.Client client = new Scram.Client(user, password, salted);
      String first = client.first();
      return exchange
          .call(MessageType.SCRAM_FIRST, out -> Wire.writeString(out, first), text)
          .thenCompose(
              serverFirst -> {
                java.util.function.Supplier<String> proof =
                    () -> {
                      try {
                        return client.last(serverFirst);
                      } catch (EmberException e) {
                        throw new java.util.concurrent.CompletionException(e);
                      }
                    };
                // The iterated hash takes milliseconds: not on an event loop, where it would hold
                // up every other connection's traffic. A direct connection's caller computes it.
                return Thread.currentThread()
                        instanceof io.netty.util.concurrent.FastThreadLocalThread
                    ? CompletableFuture.supplyAsync(proof)
                    : CompletableFuture.completedFuture(proof.get());
              })
          .thenCompose(
              last ->
                  exchange.call(MessageType.SCRAM_LAST, out -> Wire.writeString(out, last), text))
          .thenCompose(
              serverLast -> {
                try {
                  client.check(serverLast);
                  blockKeyWrap = client.blockKeyWrap();
                  return CompletableFuture.completedFuture(null);
                } catch (EmberException e) {
                  return CompletableFuture.failedFuture(e);
                }
              });
    }

    /**
     * The key block keys come masked with ({@link BlockKey#masked}) on a connection this greeting
     * authenticated without TLS; null until an exchange has passed. It depends only on the user's
     * verifier, so every connection this greeting opens agrees on it until the password changes.
     */
    public byte[] blockKeyWrap() {
      byte[] wrap = blockKeyWrap;
      return wrap == null ? null : wrap.clone();
    }
  }
}
