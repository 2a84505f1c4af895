# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# kfab's RDMA engine (kfab_rdma.ko, Documentation/net.rst "The RDMA
# engine") between two guests, over soft-RoCE (rdma_rxe) on their link:
# listeners open with both engines, peers call with RDMA, fi_pingpong runs
# over it unchanged, and TCP takes over when the device goes.
# Run: tools/kfab-vm-pair --kmod crc32_generic --kmod rdma_rxe --kmod rdma_cm
#      --module build/ktest/kernel/kfab.ko (rxe needs crc32, which nothing
#      loads for it in the guest)
#      --module build/ktest/kernel/kfab_rdma.ko --script selftests/pair/rdma.py
import json
from common import KFABCTL, listener

A4 = pair.addr("a")
port = [47900]


def engines(g, what):
    """The engine of each listener or peer of guest g (kfabctl -j)."""
    r = pair.run(g, [KFABCTL, "-j", what, "show"], check=True)
    return [o.get("engine") for o in json.loads(r.out)]


def pingpong(*opts):
    """fi_pingpong server on a, client on b, over kfab."""
    port[0] += 1
    p = str(port[0])
    srv = pair.spawn("a", ["timeout", "240", "fi_pingpong", "-p", "kfab",
                           "-e", "rdm", "-B", p] + list(opts))
    pair.run("a", "for i in $(seq 200); do ss -Hltn 'sport = :%s' | "
                  "grep -q . && exit 0; sleep 0.1; done; exit 1" % p,
             check=True)
    cli = pair.spawn("b", ["timeout", "240", "fi_pingpong", "-p", "kfab",
                           "-e", "rdm", "-P", p] + list(opts) + [A4])
    rc = pair.wait(cli, 300, check=True)
    pair.wait(srv, 60, check=True)
    pair.log(rc.out.strip(), verbose_only=True)


with pair.test("rdma: soft-RoCE on each guest's link"):
    for g in "ab":
        pair.run(g, "rdma link add rxe0 type rxe netdev kfab0", check=True)
        pair.run(g, "rdma link show rxe0/1 | grep -q ACTIVE", check=True)
with pair.test("rdma: listeners open with both engines"):
    for g in "ab":
        listener(pair, g)
        e = engines(g, "listen")
        assert sorted(e) == ["rdma", "tcp"], "%s listens with %s" % (g, e)
with pair.test("rdma: fi_pingpong -m msg -S 64, b -> a, over RDMA"):
    pingpong("-m", "msg", "-S", "64", "-I", "20")
    for g in "ab":
        e = engines(g, "peer")
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
    pingpong("-m", "tagged", "-S", "1048576", "-I", "3", "-c")
    for g in "ab":
        read = bulk(g)[0] - before[g][0]
        copied = bulk(g)[1] - before[g][1]
        # 3 messages (and a warm-up) of 1 MiB each way: read, not copied.
        assert read >= 3 << 20, "%s read %d bytes by RDMA READ" % (g, read)
        assert copied < 1 << 20, "%s copied %d bytes" % (g, copied)
with pair.test("rdma: fi_pingpong -S all -c, b -> a"):
    pingpong("-m", "msg", "-S", "all", "-I", "5", "-c")
with pair.test("rdma: the device goes, TCP takes over"):
    pair.run("b", "rdma link delete rxe0", check=True)
    pingpong("-m", "msg", "-S", "4096", "-I", "20", "-c")
    e = engines("b", "peer")
    assert e == ["tcp"], "b's peer goes by %s" % e
with pair.test("rdma: rmmod kfab_rdma, then kfab, in both"):
    pair.run("a", "rdma link delete rxe0", check=True)
    for g in "ab":
        pair.run(g, "rmmod kfab_rdma && rmmod kfab", check=True)
