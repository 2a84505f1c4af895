# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# make bench's block section between two nodes, a tools/kfab-vm-pair
# scenario: kfab_blk against the kernel's NBD over the same link between
# the two guests, in the same run (Documentation/bench.rst).  The servers
# run on a, both from RAM: tools/kfab-blk-server --mem on a kfab service,
# nbd-server on a file of a's tmpfs; the block devices on b.  The same dd
# commands (O_DIRECT, so the page cache stays out; one stream, then four
# at once on quarters of the device) alternate between the two devices,
# and the best of ROUNDS counts for each, as
# tools/kfab-blk-bench does on one node.  Prints its table.
#
#   tools/kfab-vm-pair --module build/ktest/kernel/kfab.ko --kmod nbd \
#       --script tools/kfab-blk-bench-pair.py -- ROUNDS SIZE_MB
import os
import time

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROUNDS = int(args[0]) if args else 3
SIZE_MB = int(args[1]) if len(args) > 1 else 64
KFABCTL = os.path.join(TOP, "tools/kfabctl")
SERVER = os.path.join(TOP, "tools/kfab-blk-server")
BLK_KO = os.path.join(os.path.dirname(pair.modules[0]), "kfab_blk.ko")
A4 = pair.addr("a")
SVC = 9
IMG = "/tmp/kfab-nbd-bench.img"	# the guest's /tmp is RAM
CONF = "/tmp/kfab-nbd-bench.conf"


def dd_kbps(dev, direction, bs, count, streams=1):
    """KB/s of STREAMS dd at once on b, each COUNT blocks of BS bytes,
    O_DIRECT, each on its own stretch of the device."""
    cmds = []
    for i in range(streams):
        if direction == "write":
            cmds.append("dd if=/dev/zero of=%s bs=%d count=%d seek=%d "
                        "oflag=direct status=none" % (dev, bs, count,
                                                      i * count))
        else:
            cmds.append("dd if=%s of=/dev/null bs=%d count=%d skip=%d "
                        "iflag=direct status=none" % (dev, bs, count,
                                                      i * count))
    # Every stream in the background, then wait for each: all must pass.
    run = " ".join("%s & p%d=$!;" % (c, i) for i, c in enumerate(cmds))
    run += " " + " && ".join("wait $p%d" % i for i in range(streams))
    r = pair.run("b", "t0=$(date +%%s%%N); { %s; } || exit 1; "
                      "t1=$(date +%%s%%N); echo $(( %d * 1000000 / "
                      "(t1 - t0) ))" % (run, bs * count * streams),
                 timeout=600)
    if r.rc != 0:
        raise AssertionError("%s on %s: %s" % (direction, dev, r.out))
    return int(r.out.split()[-1])


with pair.test("blk bench: kfab-blk-server and nbd-server on a"):
    pair.run("a", "%s net show | grep -q listen || %s net listen %s" %
             (KFABCTL, KFABCTL, A4), check=True)
    pair.run("b", "%s net show | grep -q listen || %s net listen %s" %
             (KFABCTL, KFABCTL, pair.addr("b")), check=True)
    srv = pair.spawn("a", [SERVER, "--service", str(SVC), "--node", A4,
                           "--mem", "%dM" % SIZE_MB])
    pair.run("a", "truncate -s %dM %s && printf '[generic]\\nuser = root\\n"
                  "group = root\\n[bench]\\nexportname = %s\\n' > %s && "
                  "nbd-server -C %s" % (SIZE_MB, IMG, IMG, CONF, CONF),
             check=True)
    time.sleep(1)

with pair.test("blk bench: kfab_blk and nbd0 on b"):
    pair.run("b", ["insmod", BLK_KO,
                   "server=fi_kfab://%s:7471/%d" % (A4, SVC)], check=True)
    pair.run("b", "modprobe nbd 2>/dev/null; nbd-client %s -N bench "
                  "/dev/nbd0 -b 4096" % A4, check=True)
    pair.run("b", "for i in $(seq 50); do [ -b /dev/kfab_blk0 ] && exit 0;"
                  " sleep 0.1; done; exit 1", check=True)

rows = []
with pair.test("blk bench: dd O_DIRECT, kfab_blk and nbd alternating"):
    for streams in (1, 4):
        for bs in (4096, 61440, 1048576):
            count = SIZE_MB * 1048576 // bs // streams
            if bs == 4096:
                count //= 16	# 4 KiB requests: a 16th will do
            for direction in ("write", "read"):
                best = {"kfab_blk": 0, "nbd": 0}
                for _ in range(ROUNDS):
                    for name, dev in (("kfab_blk", "/dev/kfab_blk0"),
                                      ("nbd", "/dev/nbd0")):
                        best[name] = max(best[name], dd_kbps(
                            dev, direction, bs, count, streams))
                rows.append(("dd %s O_DIRECT bs=%s%s" % (
                    direction,
                    {4096: "4k", 61440: "60k", 1048576: "1M"}[bs],
                    " x%d" % streams if streams > 1 else ""),
                    best["kfab_blk"], best["nbd"]))

print("%-34s %12s %12s %6s" % ("workload", "kfab_blk", "nbd", "ratio"))
for name, a, b in rows:
    print("%-34s %7.1f MB/s %7.1f MB/s %6.2f" %
          (name, a / 1000.0, b / 1000.0, a / b if b else 0))
print("# %d MiB devices served from RAM on guest a, used on guest b; "
      "best of %d alternating runs" % (SIZE_MB, ROUNDS), flush=True)

with pair.test("blk bench: both devices go"):
    pair.run("b", "nbd-client -d /dev/nbd0; rmmod kfab_blk", check=True)
    pair.run("a", "pkill -x nbd-server; rm -f %s %s" % (IMG, CONF))
    pair.signal(srv)
    pair.wait(srv, 30)
