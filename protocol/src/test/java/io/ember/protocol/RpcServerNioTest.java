package io.ember.protocol;

/** {@link RpcServerTest} over Netty's NIO transport, which the shaded Hadoop and Spark jars use. */
class RpcServerNioTest extends RpcServerTest {
  @Override
  String transport() {
    return "nio";
  }
}
