# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Open MPI between the two guests, over its own tcp btl (not kfab yet):
# tools/kfab-rsh as mpirun's remote-shell agent, hostname and
# selftests/mpi/mpi_ring on 2 ranks across, NetPIPE across, 4 ranks on one
# guest.  make test-pair builds build/mpi/mpi_ring first.
# Run: tools/kfab-vm-pair --script selftests/pair/mpi.py
import os
from common import TOP

RSH = os.path.join(TOP, "tools/kfab-rsh")
RING = os.path.join(TOP, "build/mpi/mpi_ring")
# ob1 with the tcp btl on the test link; the runtime's own connections on
# it too.  --allow-run-as-root: everything in the guests runs as root.
MPIRUN = ("mpirun --allow-run-as-root --mca plm_rsh_agent %s "
          "--mca pml ob1 --mca btl self,tcp --mca btl_tcp_if_include kfab0 "
          "--mca oob_tcp_if_include kfab0 " % RSH)
ACROSS = MPIRUN + "-np 2 --host kfab-a,kfab-b "

pair.start_rsh()

with pair.test("mpi: kfab-rsh runs a command on the other guest"):
    r = pair.run("a", [RSH, "kfab-b", "hostname;", "exit", "3"])
    assert r.rc == 3 and r.out.strip() == "kfab-b", (r.rc, r.out)
with pair.test("mpi: kfab-rsh listener refuses other addresses"):
    # b's own address is not a's: b's listener is for a only.
    r = pair.run("b", "cd /tmp && %s 10.77.0.2 true" % RSH)
    assert r.rc == 255, (r.rc, r.out)
with pair.test("mpi: mpirun -np 2 across the guests, hostname"):
    r = pair.run("a", ACROSS + "hostname", timeout=180, check=True)
    assert sorted(r.out.split()) == ["kfab-a", "kfab-b"], r.out
with pair.test("mpi: mpi_ring, 2 ranks across the guests"):
    if not os.path.exists(RING):
        pair.skip("no %s (make test-pair builds it)" % RING)
    r = pair.run("a", ACROSS + RING, timeout=180, check=True)
    assert "mpi_ring: 2 ranks on 2 hosts ok" in r.out, r.out
with pair.test("mpi: NetPIPE across the guests, tcp btl"):
    r = pair.run("a", "cd /tmp && " + ACROSS +
                 "NPopenmpi -p 0 -u 65536 -o /tmp/np.out", timeout=300,
                 check=True)
    lines = pair.run("a", "cat /tmp/np.out", check=True).out.split("\n")
    rows = [ln.split() for ln in lines if ln.strip()]
    assert rows and int(rows[-1][0]) >= 65536, r.out
    pair.log("NetPIPE, tcp btl: %s B at %s Mbps" % (rows[-1][0], rows[-1][1]))
with pair.test("mpi: mpi_ring, 4 ranks on one guest"):
    if not os.path.exists(RING):
        pair.skip("no %s (make test-pair builds it)" % RING)
    r = pair.run("b", MPIRUN + "-np 4 --oversubscribe " + RING, timeout=180,
                 check=True)
    assert "mpi_ring: 4 ranks on 1 hosts ok" in r.out, r.out
