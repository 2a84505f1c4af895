# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# kfab's RDMA engine (kfab_rdma.ko, Documentation/net.rst "The RDMA
# engine") between two guests, over soft-RoCE (rdma_rxe) on their link:
# listeners open with both engines, peers call with RDMA, fi_pingpong runs
# over it unchanged, large messages are read where they lie.  The
# scenarios that follow (kfab_pingpong.py, mpi.py) then run over RDMA too,
# and rdma_down.py ends: the device goes, TCP takes over.
# Run: tools/kfab-vm-pair --kmod crc32_generic --kmod rdma_rxe --kmod rdma_cm
#      --module build/ktest/kernel/kfab.ko (rxe needs crc32, which nothing
#      loads for it in the guest)
#      --module build/ktest/kernel/kfab_rdma.ko --script selftests/pair/rdma.py
#      [--script ...] --script selftests/pair/rdma_down.py
from common import listener
from rdma_common import engines, pingpong


with pair.test("rdma: soft-RoCE on each guest's link"):
    for g in "ab":
        # A task stuck on a device's removal shows its stack soon.
        pair.run(g, "echo 20 > /proc/sys/kernel/hung_task_timeout_secs",
                 check=True)
        pair.run(g, "rdma link add rxe0 type rxe netdev kfab0", check=True)
        pair.run(g, "rdma link show rxe0/1 | grep -q ACTIVE", check=True)
with pair.test("rdma: listeners open with both engines"):
    for g in "ab":
        listener(pair, g)
        e = engines(pair, g, "listen")
        assert sorted(e) == ["rdma", "tcp"], "%s listens with %s" % (g, e)
with pair.test("rdma: fi_pingpong -m msg -S 64, b -> a, over RDMA"):
    pingpong(pair, "-m", "msg", "-S", "64", "-I", "20")
    for g in "ab":
        e = engines(pair, g, "peer")
        assert e == ["rdma"], "%s's peer goes by %s" % (g, e)
def bulk(g):
    """Bytes guest g read by RDMA READ and copied out of receive buffers,
    over its RDMA connections (debugfs kfab_rdma/conns)."""
    r = pair.run(g, "cat /sys/kernel/debug/kfab_rdma/conns", check=True)
    read = copied = 0
    for line in r.out.splitlines():
        f = line.split()
        read += int(f[f.index("rx_bulk") + 1].split("/")[1])
        copied += int(f[f.index("rx_copied") + 1])
    return read, copied


with pair.test("rdma: fi_pingpong -m tagged -S 1048576 -c, b -> a, "
               "read where it lies"):
    before = {g: bulk(g) for g in "ab"}
    pingpong(pair, "-m", "tagged", "-S", "1048576", "-I", "3", "-c")
    for g in "ab":
        read = bulk(g)[0] - before[g][0]
        copied = bulk(g)[1] - before[g][1]
        # 3 messages (and a warm-up) of 1 MiB each way: read, not copied.
        assert read >= 3 << 20, "%s read %d bytes by RDMA READ" % (g, read)
        assert copied < 1 << 20, "%s copied %d bytes" % (g, copied)
with pair.test("rdma: fi_pingpong -S all -c, b -> a"):
    # Every size, twice over: minutes on the debug kernel's KASAN (and
    # soft-RoCE's own checks) under TCG; the 1 MiB run above covers it.
    if "-amd64" not in pair.run("a", "uname -r", check=True).out:
        pair.skip("every size is too slow on the debug kernel")
    pingpong(pair, "-m", "msg", "-S", "all", "-I", "5", "-c")
