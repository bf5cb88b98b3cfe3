package io.ember.protocol;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

class RpcClientsTest {
  @Test
  void closingFailsAConnectionStillBeingOpenedAtOnce() throws Exception {
    // A listener that never accepts, with its accept queue filled: the kernel drops further
    // connection attempts, so a connect hangs until its (five minute) timeout.
    try (ServerSocket silent = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
      List<Socket> filler = new ArrayList<>();
      try {
        HostPort address = new HostPort("127.0.0.1", silent.getLocalPort());
        EmberConfig config = EmberConfig.defaults().with(EmberKeys.CONNECT_TIMEOUT, "5m");
        // Raw connections fill the accept queue until one hangs: then the kernel drops every
        // further attempt, the client's included.
        boolean full = false;
        for (int i = 0; i < 16 && !full; i++) {
          Socket s = new Socket();
          filler.add(s);
          try {
            s.connect(new InetSocketAddress(silent.getInetAddress(), silent.getLocalPort()), 3000);
          } catch (java.net.SocketTimeoutException hung) {
            full = true;
          }
        }
        assumeTrue(full, "the accept queue never filled here");
        RpcClients clients = new RpcClients(config, "test", 1);
        CompletableFuture<RpcClient> hanging = clients.open(address, "silent server");
        assertFalse(hanging.isDone());
        clients.close();
        ExecutionException e =
            assertThrows(ExecutionException.class, () -> hanging.get(60, TimeUnit.SECONDS));
        assertEquals(ErrorCode.CLOSED, ((EmberException) e.getCause()).code(), e.toString());
      } finally {
        for (Socket s : filler) {
          s.close();
        }
      }
    }
  }
}
