# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# A hostile RDMA peer (selftests/kfab-rdma-fuzz through kfab-rdma-peer) on
# b against a's RDMA listener, after rdma.py: malformed frames cut into
# SENDs, descriptors that are wrong in every way, immediate data of no
# kind, floods beyond the 32 receive buffers.  kfab must drop those
# connections and nothing else: no WARN, BUG or KASAN report on a, its
# RDMA connections gone again, fi_pingpong over RDMA working after, and
# (rdma_down.py, next) both modules unloading.
# Run (pair_rdma, pair_rdma_debug): after rdma.py, before rdma_down.py.
import os
import time
from common import TOP
from rdma_common import engines, pingpong

FUZZ = os.path.join(TOP, "selftests/kfab-rdma-fuzz")
A4, B4 = pair.addr("a"), pair.addr("b")
CONNS = "/sys/kernel/debug/kfab_rdma/conns"
REPORT = r"WARNING:|BUG:|KASAN|Oops|refcount_t|list_add corruption|" \
         r"list_del corruption|possible recursive locking|circular locking"


def conns(g):
    out = pair.run(g, "cat " + CONNS, check=True).out
    return [line for line in out.splitlines() if line.strip()]


with pair.test("rdma_fuzz: a's RDMA listener, its connections before"):
    # A user-space RDMA peer on b: librdmacm's and libibverbs' devices.
    # (Modules on the stock kernel, built in on the debug kernel.)
    pair.run("b", "modprobe -a rdma_ucm ib_uverbs 2>/dev/null; "
                  "for i in $(seq 50); do test -c /dev/infiniband/rdma_cm "
                  "&& exit 0; sleep 0.1; done; exit 1", check=True)
    assert "rdma" in engines(pair, "a", "listen")
    before = len(conns("a"))
    mark = int(pair.run("a", "dmesg | wc -l", check=True).out)

with pair.test("rdma_fuzz: hostile RDMA peers on b against a"):
    r = pair.run("b", ["python3", FUZZ, A4, "7471", "--me", B4,
                       "--seed", "1"], timeout=1500)
    pair.log(r.out.strip())
    assert r.rc == 0, "kfab-rdma-fuzz: %s\n%s" % (r.rc, r.out[-1500:])
    dropped = r.out.count(": dropped")
    pair.log("%d connections dropped by a" % dropped)
    assert dropped >= 30, "a dropped only %d connections" % dropped

with pair.test("rdma_fuzz: a's RDMA connections go, memory with them"):
    for _ in range(120):
        now = conns("a")
        if len(now) <= before:
            break
        time.sleep(0.5)
    assert len(now) <= before, "left on a:\n" + "\n".join(now)

with pair.test("rdma_fuzz: no report in a's kernel log"):
    r = pair.run("a", "dmesg | tail -n +%d | grep -E '%s'" % (mark + 1, REPORT))
    assert r.rc == 1, "a's kernel said:\n" + r.out[-3000:]

with pair.test("rdma_fuzz: fi_pingpong b -> a over RDMA after it"):
    pingpong(pair, "-m", "msg", "-S", "65536", "-I", "10", "-c")
    for g in "ab":
        e = engines(pair, g, "peer")
        assert e and set(e) == {"rdma"}, "%s's peers go by %s" % (g, e)
