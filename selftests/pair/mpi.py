# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Open MPI between the two guests: tools/kfab-rsh as mpirun's remote-shell
# agent; mpi_ring over Open MPI's own tcp btl as the baseline; then Open
# MPI's mtl ofi on kfab's transport (Documentation/net.rst), kfab the only
# provider it may take: selftests/mpi/mpi_check on 2 ranks across and on 4
# ranks (2 per guest: local and remote peers at once), NetPIPE's integrity
# check and NetPIPE across.  make test-pair builds build/mpi first (make
# mpi).
# Run: tools/kfab-vm-pair --script selftests/pair/mpi.py
import json
import os
from common import TOP, listener

RSH = os.path.join(TOP, "tools/kfab-rsh")
KFABCTL = os.path.join(TOP, "tools/kfabctl")
RING = os.path.join(TOP, "build/mpi/mpi_ring")
CHECK = os.path.join(TOP, "build/mpi/mpi_check")
# The runtime's own connections on the test link; --allow-run-as-root:
# everything in the guests runs as root.
LAUNCH = ("mpirun --allow-run-as-root --mca plm_rsh_agent %s "
          "--mca oob_tcp_if_include kfab0 " % RSH)
# ob1 with the tcp btl on the test link.
TCP = LAUNCH + ("--mca pml ob1 --mca btl self,tcp "
                "--mca btl_tcp_if_include kfab0 ")
# cm with the mtl ofi, kfab the only provider; the provider's path goes to
# the ranks on the other guest too.
KFAB = LAUNCH + ("--mca pml cm --mca mtl ofi "
                 "--mca mtl_ofi_provider_include kfab -x FI_PROVIDER_PATH ")
ACROSS = "-np 2 --host kfab-a,kfab-b "
ACROSS4 = "-np 4 --host kfab-a:2,kfab-b:2 --oversubscribe "


def need(path):
    if not os.path.exists(path):
        pair.skip("no %s (make mpi builds it)" % path)


def wire_bytes(g):
    """Bytes g's kfab peers sent and received (kfabctl -j peer show)."""
    r = pair.run(g, [KFABCTL, "-j", "peer", "show"], check=True)
    return sum(p["tx_bytes"] + p["rx_bytes"] for p in json.loads(r.out))


def netpipe(opts, out):
    """NPopenmpi on kfab across the guests: what it printed, and the rows
    of its output file."""
    r = pair.run("a", "cd /tmp && " + KFAB + ACROSS + "NPopenmpi " + opts +
                 " -o " + out, timeout=600, check=True)
    lines = pair.run("a", "cat " + out, check=True).out.split("\n")
    return r.out, [ln.split() for ln in lines if ln.strip()]


pair.start_rsh()

with pair.test("mpi: kfab-rsh runs a command on the other guest"):
    r = pair.run("a", [RSH, "kfab-b", "hostname;", "exit", "3"])
    assert r.rc == 3 and r.out.strip() == "kfab-b", (r.rc, r.out)
with pair.test("mpi: kfab-rsh listener refuses other addresses"):
    # b's own address is not a's: b's listener is for a only.
    r = pair.run("b", "cd /tmp && %s 10.77.0.2 true" % RSH)
    assert r.rc == 255, (r.rc, r.out)
with pair.test("mpi: mpirun -np 2 across the guests, hostname"):
    r = pair.run("a", TCP + ACROSS + "hostname", timeout=180, check=True)
    assert sorted(r.out.split()) == ["kfab-a", "kfab-b"], r.out
with pair.test("mpi: mpi_ring, 2 ranks across the guests, tcp btl"):
    need(RING)
    r = pair.run("a", TCP + ACROSS + RING, timeout=180, check=True)
    assert "mpi_ring: 2 ranks on 2 hosts ok" in r.out, r.out

# Endpoints get node addresses only once their namespace listens: before
# the ranks start.
with pair.test("mpi: a kfab listener on each guest's link address"):
    listener(pair, "a")
    listener(pair, "b")
with pair.test("mpi: mpi_check, 2 ranks across the guests on kfab"):
    need(CHECK)
    before = wire_bytes("a")
    r = pair.run("a", KFAB + ACROSS + CHECK, timeout=900, check=True)
    pair.log(r.out.strip().split("\n")[-1])
    assert "mpi_check: 2 ranks on 2 hosts, " in r.out, r.out
    # Its sizes alone are 2 x 96 MiB on the wire: through kfab's peers.
    moved = wire_bytes("a") - before
    pair.log("kfab peers of a: %d MiB sent and received" % (moved >> 20))
    assert moved >= 128 << 20, moved
with pair.test("mpi: mpi_check, 4 ranks on both guests on kfab"):
    need(CHECK)
    r = pair.run("a", KFAB + ACROSS4 + CHECK + " -m 4194304 -n 50",
                 timeout=900, check=True)
    pair.log(r.out.strip().split("\n")[-1])
    assert "mpi_check: 4 ranks on 2 hosts, " in r.out, r.out
with pair.test("mpi: NetPIPE integrity check across the guests on kfab"):
    out, rows = netpipe("-i -p 0 -n 5 -u 1048576", "/tmp/npi.out")
    passed = out.count("Integrity check passed")
    assert passed >= 30 and "failed" not in out.lower(), out
    assert int(rows[-1][0]) >= 786432, rows
with pair.test("mpi: NetPIPE across the guests on kfab"):
    out, rows = netpipe("-p 0 -n 10 -u 1048576", "/tmp/np.out")
    assert rows and int(rows[-1][0]) >= 1048576, rows
    for row in rows[-3:]:
        pair.log("NetPIPE, kfab: %s B at %s Mbps" % (row[0], row[1]))
