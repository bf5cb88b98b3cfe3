package io.ember.protocol;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;

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
        RpcClients clients = new RpcClients(config, "test", 1);
        CompletableFuture<RpcClient> hanging = null;
        for (int i = 0; i < 16 && hanging == null; i++) {
          CompletableFuture<RpcClient> attempt = clients.open(address, "silent server");
          try {
            attempt.get(2, TimeUnit.SECONDS).close(); // the queue still had room
            Socket s = new Socket();
            s.connect(new InetSocketAddress(silent.getInetAddress(), silent.getLocalPort()), 2000);
            filler.add(s);
          } catch (java.util.concurrent.TimeoutException stillConnecting) {
            hanging = attempt;
          }
        }
        if (hanging == null) {
          clients.close();
          throw new org.opentest4j.TestAbortedException("no connect attempt hung here");
        }
        assertFalse(hanging.isDone());
        clients.close();
        CompletableFuture<RpcClient> f = hanging;
        ExecutionException e =
            assertThrows(ExecutionException.class, () -> f.get(60, TimeUnit.SECONDS));
        assertEquals(ErrorCode.CLOSED, ((EmberException) e.getCause()).code(), e.toString());
      } finally {
        for (Socket s : filler) {
          s.close();
        }
      }
    }
  }
}
