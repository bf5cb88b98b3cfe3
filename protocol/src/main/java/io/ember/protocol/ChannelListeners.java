package io.ember.protocol;

import io.netty.channel.ChannelFutureListener;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** Listeners for channel operations whose outcome no caller waits for. */
final class ChannelListeners {
  private static final Logger LOG = LoggerFactory.getLogger(ChannelListeners.class);

  /**
   * Logs a close that failed. The connection is gone for Ember either way (Netty marks the channel
   * closed before it closes the socket), but a socket that did not close cleanly is worth a line.
   */
  static final ChannelFutureListener LOG_CLOSE_FAILURE =
      f -> {
        if (!f.isSuccess()) {
          LOG.debug("closing {} failed", f.channel(), f.cause());
        }
      };

  private ChannelListeners() {}
}
