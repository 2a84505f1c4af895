# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# make bench's NetPIPE curve between two nodes, a tools/kfab-vm-pair
# scenario: NetPIPE (NPopenmpi) over Open MPI, one rank on each guest,
# over the same link and in the same run, three ways (Documentation/
# bench.rst):
#
#   kfab      pml cm + mtl ofi, kfab the only provider (kfab's transport)
#   ofi-tcp   pml cm + mtl ofi, libfabric's tcp provider (tcp;ofi_rxm)
#   btl-tcp   pml ob1 + Open MPI's own tcp btl (what MPI uses by default)
#
# Prints one line per NetPIPE point, which tools/kfab-bench turns into
# results-netpipe-2n.txt and netpipe-2n.png:
#
#   NETPIPE NAME BYTES MBPS USEC       (USEC: one-way, NetPIPE's half RTT)
#   NETPIPE-NA NAME REASON
#
#   tools/kfab-vm-pair --module build/ktest/kernel/kfab.ko \
#       --script tools/kfab-netpipe-pair.py -- UPTO [NAME...]
import os

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
UPTO = int(args[0]) if args else 16777216
NAMES = args[1:] or ["kfab", "ofi-tcp", "btl-tcp"]
KFABCTL = os.path.join(TOP, "tools/kfabctl")
RSH = os.path.join(TOP, "tools/kfab-rsh")
LAUNCH = ("mpirun --allow-run-as-root --mca plm_rsh_agent %s "
          "--mca oob_tcp_if_include kfab0 -np 2 --host kfab-a,kfab-b " % RSH)
OFI = "--mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include "
WAYS = {
    "kfab": OFI + "kfab -x FI_PROVIDER_PATH ",
    "ofi-tcp": OFI + "tcp -x FI_TCP_IFACE=kfab0 -x FI_PROVIDER=tcp ",
    "btl-tcp": ("--mca pml ob1 --mca btl self,tcp "
                "--mca btl_tcp_if_include kfab0 "),
}
OUT = "/tmp/kfab-netpipe.out"	# the guest's /tmp


def netpipe(name):
    """NPopenmpi across the guests; its rows, or the reason there are
    none."""
    pair.run("a", "rm -f " + OUT)
    # -p 0: powers of two and their neighbours only (no perturbed sizes).
    r = pair.run("a", "cd /tmp && " + LAUNCH + WAYS[name] +
                 "NPopenmpi -p 0 -u %d -o %s" % (UPTO, OUT), timeout=1500)
    rows = []
    for ln in pair.run("a", "cat " + OUT).out.split("\n"):
        f = ln.split()
        if len(f) == 3:
            rows.append((int(f[0]), float(f[1]), float(f[2]) * 1e6))
    if r.rc != 0 or not rows:
        tail = [ln for ln in r.out.split("\n") if ln.strip()][-1:]
        return None, "exit %d: %s" % (r.rc, (tail or ["no output"])[0][:160])
    return rows, None


pair.start_rsh()
with pair.test("netpipe: a kfab listener on each guest"):
    for g in ("a", "b"):
        pair.run(g, [KFABCTL, "net", "listen", pair.addr(g)], check=True)

for name in NAMES:
    with pair.test("netpipe: %s" % name):
        rows, why = netpipe(name)
        if rows is None:
            print("NETPIPE-NA %s %s" % (name, why), flush=True)
            continue
        for size, mbps, usec in rows:
            print("NETPIPE %s %d %.3f %.2f" % (name, size, mbps, usec),
                  flush=True)
print("NETPIPE-DONE", flush=True)
