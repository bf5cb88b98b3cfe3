#!/bin/sh
# The Linux kernel's NVMe/TCP host (nvme-tcp, 6.1) against the embedded target.
#
# The kernel-nvmet VM cannot reach the host, so the embedded target runs inside the VM (the host's JDK and
# Maven repository through --host-root) and the guest kernel connects to it over the VM's loopback with
# /dev/nvme-fabrics (what `nvme connect -t tcp` writes). Checks in-capsule (4 KiB) and R2T (128 KiB) writes,
# reads, DSM deallocate, Write Zeroes, header+data digests and a clean disconnect.
#
# Usage (from /work/main, after `mvn -q -pl nvmf-target -am install -DskipTests`):
#   sh nvmf-target/src/test/scripts/kernel-host-interop.sh
set -eu
K=${KNVMET:-../shared/tools/kernel-nvmet/kernel-nvmet}
PORT=${PORT:-4430}
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
(cd "$ROOT" && mvn -q dependency:build-classpath -Dmdep.includeScope=runtime -Dmdep.outputFile=/tmp/nvmf-interop.cp >/dev/null)
CP="$ROOT/target/classes:$(cat /tmp/nvmf-interop.cp):$(ls ~/.m2/repository/org/slf4j/slf4j-simple/2.0.17/slf4j-simple-2.0.17.jar)"
NQN=nqn.2024-01.io.ember:kernel-host
HOSTNQN=nqn.2014-08.org.nvmexpress:uuid:00000000-0000-0000-0000-00000000abcd
"$K" start --port "$PORT" --host-root >/dev/null
trap '"$K" stop --port "$PORT" >/dev/null' EXIT
KV=$(ls ~/.cache/kernel-nvmet/kernel/)
M=/host/root/.cache/kernel-nvmet/kernel/$KV/lib/modules/$KV/kernel
"$K" exec --port "$PORT" -- "for m in drivers/nvme/host/nvme-core drivers/nvme/host/nvme-fabrics drivers/nvme/host/nvme-tcp; do insmod $M/\$m.ko 2>/dev/null || true; done
chroot /host sh -c 'nohup java -Xmx200m -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -cp $CP io.ember.nvmf.target.NvmfTargetMain --listen 127.0.0.1:4421 --nqn $NQN --memory 67108864 > /tmp/target.log 2>&1 &'
i=0; until grep -q READY /host/tmp/target.log 2>/dev/null; do i=\$((i+1)); [ \$i -gt 180 ] && { cat /host/tmp/target.log; exit 1; }; sleep 1; done"
"$K" exec --port "$PORT" -- "set -e
for opts in '' ',hdr_digest,data_digest'; do
  echo \"transport=tcp,traddr=127.0.0.1,trsvcid=4421,nqn=$NQN,hostnqn=$HOSTNQN\$opts\" > /dev/nvme-fabrics
  sleep 2
  chroot /host sh -c '
    set -e
    head -c 8388608 /dev/urandom > /tmp/pat
    dd if=/tmp/pat of=/dev/nvme0n1 bs=128k oflag=direct 2>/dev/null
    dd if=/tmp/pat of=/dev/nvme0n1 bs=4k seek=4096 count=512 oflag=direct 2>/dev/null
    dd if=/dev/nvme0n1 of=/tmp/back bs=1M count=8 iflag=direct 2>/dev/null
    cmp /tmp/pat /tmp/back
    dd if=/dev/nvme0n1 of=/tmp/back2 bs=4k skip=4096 count=512 iflag=direct 2>/dev/null
    head -c 2097152 /tmp/pat | cmp - /tmp/back2
    /usr/sbin/blkdiscard -o 0 -l 1048576 /dev/nvme0n1
    test \"\$(dd if=/dev/nvme0n1 bs=1M count=1 iflag=direct 2>/dev/null | od -An -tx1 | sort -u | tr -d \" \\n*\")\" = 00000000000000000000000000000000
    /usr/sbin/blkdiscard -z -o 1048576 -l 1048576 /dev/nvme0n1
    test \"\$(dd if=/dev/nvme0n1 bs=1M skip=1 count=1 iflag=direct 2>/dev/null | od -An -tx1 | sort -u | tr -d \" \\n*\")\" = 00000000000000000000000000000000
  '
  echo 1 > /sys/class/nvme/nvme0/delete_controller
  echo \"kernel host OK (options: \${opts:-none})\"
done
dmesg | grep 'nvme nvme0' | tail -4"
