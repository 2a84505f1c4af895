# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# kfab_blk between two guests (Documentation/kfab_blk.rst): the driver on
# a, tools/kfab-blk-server on b's service 9, over whichever engine the
# bed loaded (pair_stock: TCP; pair_rdma: RDMA over soft-RoCE, after
# rdma.py):
#   - attach (insmod kfab_blk server=fi_kfab://B:7471/9)
#   - direct-I/O writes and reads at 4 KiB, 64 KiB and 1 MiB, data checked
#   - a 3 s link cut in the middle of a 32 MiB write: it completes, intact
#   - detach (rmmod kfab_blk), the server stopped, nothing left holding
#     kfab but the engines' modules
# Run: tools/kfab-vm-pair --script selftests/pair/blk.py (pair_stock),
#      and in pair_rdma after rdma.py.
import os
import time
from common import KFABCTL, TOP, listener
from rdma_common import engines

SERVER = os.path.join(TOP, "tools/kfab-blk-server")
B4 = pair.addr("b")
IMG, OUT = "/tmp/kfab-blk-pair.img", "/tmp/kfab-blk-pair.out"
DEV = "/dev/kfab_blk0"
KO = os.path.join(os.path.dirname(pair.modules[0]), "kfab_blk.ko")
rdma = pair.run("a", "test -d /sys/module/kfab_rdma").rc == 0
srv = None

# dd_rw BS COUNT: random data written O_DIRECT, read back O_DIRECT, same.
DD_RW = r"""
set -e
bs=$1 count=$2 off=$3
n=$(( $(numfmt --from=iec "${bs^^}") * count ))
head -c $n /dev/urandom > /tmp/pat
dd if=/tmp/pat of=%(dev)s bs=$bs count=$count seek=$off oflag=direct \
    conv=notrunc status=none
dd if=%(dev)s of=/tmp/back bs=$bs count=$count skip=$off iflag=direct \
    status=none
cmp /tmp/back /tmp/pat
""" % {"dev": DEV}


def dd_rw(bs, count, off=0, timeout=300):
    pair.run("a", ["bash", "-c", DD_RW, "dd_rw", bs, str(count), str(off)],
             timeout=timeout, check=True)


with pair.test("blk: listeners, a 64 MiB image served on b's service 9"):
    for g in "ab":
        listener(pair, g)
    pair.run("b", "rm -f %s; truncate -s 64M %s" % (IMG, IMG), check=True)
    srv = pair.spawn("b", ["sh", "-c", "exec %s --service 9 --file %s "
                           "--quiet > %s 2>&1" % (SERVER, IMG, OUT)])
    pair.run("b", "for i in $(seq 200); do grep -q '^kfab-blk-server: ep' "
                  "%s && exit 0; sleep 0.1; done; cat %s; exit 1" % (OUT, OUT),
             check=True)

with pair.test("blk: attach kfab_blk on a to b's server"):
    pair.run("a", ["insmod", KO, "server=fi_kfab://%s:7471/9" % B4,
                   "timeout_ms=3000", "reconnect_delay=1"], check=True)
    pair.run("a", "for i in $(seq 100); do test -b %s && exit 0; "
                  "sleep 0.1; done; exit 1" % DEV, check=True)
    size = int(pair.run("a", "blockdev --getsize64 " + DEV, check=True).out)
    assert size == 64 << 20, "the device has %d bytes" % size

for bs, count in (("4k", 64), ("64k", 32), ("1M", 8)):
    with pair.test("blk: O_DIRECT writes and reads of %s, data intact" % bs):
        dd_rw(bs, count)

with pair.test("blk: the peers go by %s" % ("RDMA" if rdma else "TCP")):
    want = "rdma" if rdma else "tcp"
    for g in "ab":
        e = engines(pair, g, "peer")
        assert e and set(e) == {want}, "%s's peers go by %s" % (g, e)

with pair.test("blk: a 32 MiB write through a 3 s link cut, intact"):
    h = pair.spawn("a", ["bash", "-c", DD_RW, "dd_rw", "1M", "32", "16"])
    time.sleep(3)
    pair.link(False)
    time.sleep(3)
    pair.link(True)
    r = pair.wait(h, 400)
    assert r.rc == 0, "dd through the cut: %s\n%s" % (r.rc, r.out[-800:])

with pair.test("blk: detach: rmmod kfab_blk, the server stopped"):
    pair.run("a", "rmmod kfab_blk", check=True)
    pair.signal(srv)
    pair.wait(srv, 60)
    srv = None
    pair.run("b", "rm -f %s %s" % (IMG, OUT), check=True)
    # kfab is held by the engines' modules only.
    held = int(pair.run("a", "cat /sys/module/kfab/refcnt", check=True).out)
    assert held == (1 if rdma else 0), "kfab still held %d times" % held

if srv is not None:
    pair.run("a", "rmmod kfab_blk 2>/dev/null; true")
    pair.signal(srv)
