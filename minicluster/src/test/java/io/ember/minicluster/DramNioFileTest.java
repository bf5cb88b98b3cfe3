package io.ember.minicluster;

/**
 * The file behaviour on the DRAM tier over Netty's NIO transport, which the shaded Hadoop and Spark
 * jars use (the native epoll library cannot be relocated).
 */
class DramNioFileTest extends DramFileTest {
  @Override
  String transport() {
    return "nio";
  }
}
