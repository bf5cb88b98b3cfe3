package io.ember.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ember.protocol.BlockLocation;
import io.ember.protocol.EmberConfig;
import io.ember.protocol.EmberException;
import io.ember.protocol.EmberKeys;
import io.ember.protocol.ErrorCode;
import io.ember.protocol.MessageType;
import io.ember.protocol.Messages;
import io.ember.protocol.RpcServer;
import io.ember.protocol.StorageClass;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A writer trusts the blocks a run of {@code ALLOCATE_BLOCKS} gives to be the ones it asked for, in
 * order: a name node (a faulty build, another version) that answers otherwise is refused as a
 * malformed answer, and the connection serves the next call. The name node here is a real server on
 * loopback that answers with whatever the test sets.
 */
class AllocateBlocksAnswerTest {
  private static final long PATIENCE_SECONDS = 60;

  private final AtomicReference<List<BlockLocation>> answer = new AtomicReference<>();
  private RpcServer namenode;
  private EmberClient client;

  @BeforeEach
  void start() throws Exception {
    EmberConfig config = EmberConfig.defaults();
    namenode =
        new RpcServer(
            "fake name node",
            config,
            (ch, type, in) -> {
              if (type != MessageType.ALLOCATE_BLOCKS) {
                throw new EmberException(ErrorCode.UNKNOWN_MESSAGE, "not faked: " + type);
              }
              Messages.AllocateBlocksRequest.decode(in);
              return new Messages.BlocksResponse(answer.get());
            });
    int port = namenode.start("127.0.0.1", 0).getPort();
    client = EmberClient.connect(config.with(EmberKeys.NAMENODE_ADDRESS, "127.0.0.1:" + port));
  }

  @AfterEach
  void stop() {
    client.close();
    namenode.close();
  }

  private static BlockLocation block(int index) {
    return new BlockLocation(
        index, 100 + index, 1, 1, 0, StorageClass.DRAM, "dram", "nowhere:1", 0, 4096, false);
  }

  private static List<BlockLocation> blocks(int... indexes) {
    return IntStream.of(indexes).mapToObj(AllocateBlocksAnswerTest::block).toList();
  }

  /** Asks for {@code count} blocks from {@code index}; the answer, or its failure. */
  private List<BlockLocation> ask(int index, int count) throws Exception {
    return client.allocateBlocks(7, index, count).get(PATIENCE_SECONDS, TimeUnit.SECONDS);
  }

  private EmberException refused(int index, int count) {
    Exception e = assertThrows(Exception.class, () -> ask(index, count));
    EmberException cause = EmberException.of(e);
    assertEquals(ErrorCode.MALFORMED_FRAME, cause.code(), cause.toString());
    return cause;
  }

  @Test
  void anAnswerOfTheBlocksAskedOrFewerInOrderIsTaken() throws Exception {
    answer.set(blocks(4, 5, 6, 7));
    assertEquals(blocks(4, 5, 6, 7), ask(4, 4));
    answer.set(blocks(4, 5));
    assertEquals(blocks(4, 5), ask(4, 4));
  }

  @Test
  void anEmptyAnswerIsRefused() throws Exception {
    answer.set(List.of());
    assertTrue(refused(4, 4).getMessage().contains("holds 0 blocks; 1 to 4 asked"));
    answer.set(blocks(4));
    assertEquals(blocks(4), ask(4, 4), "the connection serves the next call");
  }

  @Test
  void anAnswerLongerThanAskedIsRefused() throws Exception {
    answer.set(blocks(4, 5, 6));
    assertTrue(refused(4, 2).getMessage().contains("holds 3 blocks; 1 to 2 asked"));
    answer.set(blocks(4, 5));
    assertEquals(blocks(4, 5), ask(4, 2), "the connection serves the next call");
  }

  @Test
  void anAnswerThatSkipsOrReordersBlocksIsRefused() throws Exception {
    answer.set(blocks(5, 6));
    assertTrue(refused(4, 2).getMessage().contains("gives block 5 where block 4 was due"));
    answer.set(blocks(4, 6));
    assertTrue(refused(4, 2).getMessage().contains("gives block 6 where block 5 was due"));
    answer.set(blocks(4, 4));
    assertTrue(refused(4, 2).getMessage().contains("gives block 4 where block 5 was due"));
    answer.set(blocks(4, 5));
    assertEquals(blocks(4, 5), ask(4, 2), "the connection serves the next call");
  }
}
