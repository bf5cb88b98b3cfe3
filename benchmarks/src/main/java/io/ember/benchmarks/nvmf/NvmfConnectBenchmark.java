package io.ember.benchmarks.nvmf;

import io.ember.nvmf.NvmfController;
import io.ember.nvmf.NvmfHost;
import io.ember.nvmf.NvmfHostOptions;
import io.ember.nvmf.auth.DhGroup;
import io.ember.nvmf.auth.DhchapHash;
import io.ember.nvmf.auth.DhchapSecret;
import io.ember.nvmf.target.HostKeys;
import io.ember.nvmf.target.MemoryNamespace;
import io.ember.nvmf.target.NvmfTarget;
import io.ember.nvmf.target.Subsystem;
import java.security.SecureRandom;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * Time to connect a controller (admin queue and one I/O queue: Connect, enable, Identify) and close
 * it, against the embedded target on loopback, without in-band authentication ({@code auth=none})
 * and with DH-HMAC-CHAP on every queue, both ways, in the group named: {@code null} (no
 * Diffie-Hellman) or an FFDHE group, whose exponentiations dominate. Run the params in one trial to
 * read them as ratios of {@code none}: {@code ember bench jmh NvmfConnectBenchmark}.
 */
@State(Scope.Benchmark)
@Fork(
    value = 1,
    jvmArgsAppend = {"-Xms512m", "-Xmx512m"})
@Warmup(iterations = 2, time = 2)
@Measurement(iterations = 3, time = 3)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
public class NvmfConnectBenchmark {
  private static final String NQN = "nqn.2024-01.io.ember:connect-bench";
  private static final String HOST = "nqn.2024-01.io.ember:connect-bench-host";

  /** none, or the DH group of DH-HMAC-CHAP (SHA-256, bidirectional). */
  @Param({"none", "null", "ffdhe2048", "ffdhe4096"})
  public String auth;

  private NvmfTarget target;
  private NvmfHostOptions options;

  @Setup(Level.Trial)
  public void start() throws Exception {
    Subsystem s = new Subsystem(NQN);
    s.addNamespace(new MemoryNamespace(1 << 20, 512));
    NvmfHostOptions.Builder b = NvmfHostOptions.builder().hostNqn(HOST).ioQueues(1);
    if (auth.equals("none")) {
      s.allowHost(HOST);
    } else {
      SecureRandom random = new SecureRandom();
      DhchapSecret hostKey = DhchapSecret.generate(DhchapHash.SHA256, 32, random);
      DhchapSecret ctrlKey = DhchapSecret.generate(DhchapHash.SHA256, 32, random);
      s.allowHost(
          HOST,
          new HostKeys(
              hostKey, ctrlKey, List.of(DhchapHash.SHA256), List.of(DhGroup.byName(auth))));
      b.dhchapSecret(hostKey.encoded()).dhchapControllerSecret(ctrlKey.encoded());
    }
    options = b.build();
    target = NvmfTarget.builder().listen("127.0.0.1", 0).subsystem(s).build().start();
  }

  @TearDown(Level.Trial)
  public void stop() {
    target.close();
  }

  @Benchmark
  public int connectAndClose() throws Exception {
    try (NvmfController c = NvmfHost.connect(target.uri(NQN), options)) {
      return c.ioQueueCount();
    }
  }
}
