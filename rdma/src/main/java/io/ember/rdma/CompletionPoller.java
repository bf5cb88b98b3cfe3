package io.ember.rdma;

import com.ibm.disni.verbs.IbvCQ;
import com.ibm.disni.verbs.IbvCompChannel;
import com.ibm.disni.verbs.IbvWC;
import com.ibm.disni.verbs.SVCPollCq;
import com.ibm.disni.verbs.SVCReqNotify;
import java.io.IOException;

/**
 * Reaps a completion queue the way a thread that must not spin does: polls, and when nothing is
 * there arms the queue, polls once more (a completion may have come in between) and sleeps on the
 * completion channel. One thread uses it; {@link #close} frees its stateful calls.
 */
public final class CompletionPoller implements AutoCloseable {
  private final IbvCQ cq;
  private final IbvCompChannel channel;
  private final IbvWC[] completions;
  private final SVCPollCq poll;
  private final SVCReqNotify arm;

  /**
   * A poller of {@code cq}, whose events arrive on {@code channel}, taking up to {@code batch}
   * completions at a time.
   *
   * @throws IOException when DiSNI cannot prepare the calls
   */
  public CompletionPoller(IbvCQ cq, IbvCompChannel channel, int batch) throws IOException {
    this.cq = cq;
    this.channel = channel;
    completions = new IbvWC[batch];
    for (int i = 0; i < batch; i++) {
      completions[i] = new IbvWC();
    }
    poll = cq.poll(completions, batch);
    arm = cq.reqNotification(false);
  }

  /**
   * The number of completions now in {@link #completion}, waiting up to {@code waitMs} for one when
   * there are none; 0 when none came.
   *
   * @throws IOException when the queue or its channel fails
   */
  public int next(int waitMs) throws IOException {
    int n = poll.execute().getPolls();
    if (n == 0) {
      arm.execute();
      n = poll.execute().getPolls();
      if (n == 0 && channel.getCqEvent(cq, waitMs)) {
        cq.ackEvents(1);
      }
    }
    return n;
  }

  /** Completion {@code i} of those {@link #next} counted; reused by the next call. */
  public IbvWC completion(int i) {
    return completions[i];
  }

  @Override
  public void close() {
    poll.free();
    arm.free();
  }
}
