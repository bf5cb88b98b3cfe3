package io.ember.protocol;

/**
 * {@link RpcServerTest} with the server's network thread polling between requests ({@link
 * EmberKeys#BUSY_POLL}): bad input is handled the same way when the loop never sleeps.
 */
class RpcServerBusyPollTest extends RpcServerTest {
  @Override
  EmberConfig base() {
    return super.base().with(EmberKeys.BUSY_POLL, "5ms");
  }
}
