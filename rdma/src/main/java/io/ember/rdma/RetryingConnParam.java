package io.ember.rdma;

import com.ibm.disni.verbs.RdmaConnParam;

/**
 * Connection parameters that retry lost packets. DiSNI 2.1 sets the read depths to the device's
 * maximum itself but leaves the transport retry count at 0, and its setter refuses to change it:
 * with no retries, one lost packet (common on soft-RoCE under load) kills the queue pair with
 * IBV_WC_RETRY_EXC_ERR. Its fields are protected, so a subclass sets them, to the largest values
 * (7; 7 for RNR means retry forever), as Linux's host does.
 */
public final class RetryingConnParam extends RdmaConnParam {
  /** Parameters with the retry and RNR retry counts at 7 and everything else DiSNI's. */
  public RetryingConnParam() {
    retry_count = 7;
    rnr_retry_count = 7;
  }
}
