package io.ember.nvmf.target;

import java.util.List;

/**
 * What one controller of the target has served since its host connected: I/O commands by kind,
 * bytes, failed commands, the I/O commands outstanding now (its queue depth), and how long the
 * target took from a command's arrival to its completion, as a histogram. Counted are the I/O
 * commands that reach the namespaces' dispatch; a command refused before it (a data digest error, a
 * controller not ready, fused operations) is not.
 *
 * @param cntlid the controller's id
 * @param hostNqn the host that connected it
 * @param subsystemNqn the subsystem it serves
 * @param ioQueues its connected I/O queues
 * @param outstanding I/O commands received and not yet answered, over all its queues
 * @param reads Read commands completed
 * @param writes Write commands completed
 * @param others other I/O commands completed (Flush, Dataset Management, Write Zeroes, and opcodes
 *     the target does not know)
 * @param failed I/O commands answered with an error status (counted in their kind too)
 * @param bytesRead bytes returned by successful Reads
 * @param bytesWritten bytes taken by successful Writes
 * @param latencyBoundsSeconds the histogram's upper bounds, the last {@code +Inf}
 * @param latencyCounts commands per bucket (not cumulative), one per bound
 * @param latencySumSeconds the sum of every command's latency
 */
public record ControllerStats(
    int cntlid,
    String hostNqn,
    String subsystemNqn,
    int ioQueues,
    int outstanding,
    long reads,
    long writes,
    long others,
    long failed,
    long bytesRead,
    long bytesWritten,
    List<Double> latencyBoundsSeconds,
    List<Long> latencyCounts,
    double latencySumSeconds) {

  /** I/O commands completed, of every kind. */
  public long commands() {
    return reads + writes + others;
  }
}
