package io.ember.benchmarks;

import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Unmatched;

/**
 * {@code ember bench jmh [JMH options]}: runs the JMH microbenchmarks of this module (the NVMe/TCP
 * path: {@code NvmfBenchmark}, and its floor {@code TcpPingPongBenchmark}). Arguments go to JMH
 * unchanged, e.g. {@code ember bench jmh 'NvmfBenchmark.*Qd32' -p queues=1,4 -rf json}.
 */
@Command(
    name = "jmh",
    mixinStandardHelpOptions = false,
    description = "Run the JMH microbenchmarks; arguments go to JMH (try -h, -l).")
public final class JmhCommand implements Callable<Integer> {
  /** Everything after "jmh", in order, for JMH to parse. */
  @Unmatched List<String> args = new java.util.ArrayList<>();

  @Override
  public Integer call() throws Exception {
    org.openjdk.jmh.Main.main(args.toArray(new String[0]));
    return 0;
  }
}
