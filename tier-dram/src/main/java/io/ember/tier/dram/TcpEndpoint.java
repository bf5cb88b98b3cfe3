package io.ember.tier.dram;

import io.ember.client.spi.StorageEndpoint;
import io.ember.protocol.BlockLocation;
import io.ember.protocol.HostPort;
import io.ember.protocol.MessageType;
import io.ember.protocol.Messages;
import io.ember.protocol.ResponseDecoder;
import io.ember.protocol.RpcClient;
import io.ember.protocol.RpcClients;
import io.netty.buffer.ByteBuf;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;

/** BLOCK_WRITE and BLOCK_READ frames to a DRAM data node over the client's RPC connections. */
final class TcpEndpoint implements StorageEndpoint {
  private final RpcClients connections;
  private final Map<String, HostPort> parsed = new ConcurrentHashMap<>();

  TcpEndpoint(RpcClients connections) {
    this.connections = connections;
  }

  @Override
  public boolean checksGenerations() {
    return true; // the data node holds each block's generation
  }

  @Override
  public CompletableFuture<Void> write(BlockLocation block, int offset, ByteBuf data) {
    return connection(block)
        .whenComplete(
            (c, e) -> {
              if (e != null) {
                data.release(); // no call takes it
              }
            })
        .thenCompose(
            c ->
                c.call(
                    MessageType.BLOCK_WRITE,
                    Messages.BlockWriteRequest.of(block, offset, data),
                    ResponseDecoder.EMPTY));
  }

  @Override
  public CompletableFuture<ByteBuf> read(BlockLocation block, int offset, int length) {
    return connection(block)
        .thenCompose(
            c ->
                c.call(
                    MessageType.BLOCK_READ,
                    Messages.BlockReadRequest.of(block, offset, length),
                    ByteBuf::retainedSlice));
  }

  /** The RPC connection to {@code block}'s data node, opened (or reopened) when needed. */
  CompletableFuture<RpcClient> connection(BlockLocation block) {
    return connections.getOrRetry(hostPort(block), "data node " + block.datanodeId());
  }

  /** The host and port of {@code block}'s data node. */
  HostPort hostPort(BlockLocation block) {
    return parsed.computeIfAbsent(block.endpoint(), e -> HostPort.parse(e, 0));
  }

  @Override
  public void close() {}
}
