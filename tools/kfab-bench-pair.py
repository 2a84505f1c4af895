# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# make bench's two-node section, a tools/kfab-vm-pair scenario: kfab's
# transport against libfabric's tcp provider (tcp;ofi_rxm) over the same
# link between the two guests, in the same run.  Servers on a, clients on
# b; every program under timeout(1).  Prints the lines tools/kfab-bench
# turns into its table:
#
#   BENCH NAME METRIC SIZE VALUE REP   one run's result, in repetition REP
#   BENCH-NA NAME METRIC SIZE REASON   a point that could not be measured
#   BENCH-INFO turns NAME...           these took turns at every point
#   BENCH-INFO ...                     what ran where
#
# Arguments (after --): REPS SCALE PROVIDERS...  (kfab-2n, tcp-2n,
# kfab-rdma-2n: kfab over its RDMA engine, soft-RoCE on the link; needs
# kfab_rdma.ko loaded, and comes after the others, which go by TCP)
#
# Every repetition is a sweep over all points, the providers taking turns
# at each (kfab-2n, tcp-2n, kfab-2n, ...), so that the table can pair each
# kfab run with tcp's run of the same point seconds later.  kfab-rdma-2n
# runs its own sweeps after the others: soft-RoCE, once on the link, takes
# every kfab peer of the run.
#
# Bandwidth points also report "cpu": the CPU time both guests spent per
# MB moved (busy time in /proc/stat, kernel and user, soft-RoCE's own
# work included), each run's start included.
import json
import os

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

REPS, SCALE = int(args[0]), int(args[1])
PROVIDERS = args[2:] or ["kfab-2n", "tcp-2n"]
KFABCTL = os.path.join(TOP, "tools/kfabctl")
RATE = os.path.join(TOP, "tools/kfab-bench-rate")
A4 = pair.addr("a")
LAT_POINTS = [(8, 500), (64, 500), (4096, 500)]
BW_POINTS = [(65536, 200), (1048576, 50), (16777216, 5)]
RATE_MSGS = 20000
PP_TIMEOUT = 90
port = [47900]

# name -> (libfabric provider, environment)
SETUP = {
    "kfab-2n": ("kfab", {}),
    "tcp-2n": ("tcp", {"FI_TCP_IFACE": "kfab0"}),
    "kfab-rdma-2n": ("kfab", {}),
}


def busy_usec(g):
    """CPU time guest g spent busy so far, in usec (/proc/stat)."""
    f = pair.run(g, "head -1 /proc/stat", check=True).out.split()
    # user nice system idle iowait irq softirq steal: all but idle, iowait
    ticks = sum(int(v) for i, v in enumerate(f[1:9]) if i not in (3, 4))
    return ticks * 10000		# USER_HZ is 100


def to_rdma():
    """Soft-RoCE on both guests' link, and their listeners again, so that
    the RDMA engine listens too: peers go by RDMA from now on."""
    for g in "ab":
        pair.run(g, "rdma link add rxe0 type rxe netdev kfab0", check=True)
        pair.run(g, [KFABCTL, "net", "unlisten", pair.addr(g)], check=True)
        pair.run(g, [KFABCTL, "net", "listen", pair.addr(g)], check=True)


def engines(g):
    r = pair.run(g, [KFABCTL, "-j", "peer", "show"], check=True)
    return sorted({o.get("engine") for o in json.loads(r.out)})


def listening(p):
    """Wait until the server's control socket listens on a."""
    pair.run("a", "for i in $(seq 300); do ss -Hltn 'sport = :%s' | "
                  "grep -q . && exit 0; sleep 0.1; done; exit 1" % p,
             check=True)


def one_pair(prog, env, to):
    """Server on a, client on b; return (rc, client output)."""
    port[0] += 1
    p = str(port[0])
    srv = pair.spawn("a", ["timeout", "-k", "3", str(to)] + prog +
                     ["-B", p], env=env)
    listening(p)
    cli = pair.run("b", ["timeout", "-k", "3", str(to)] + prog +
                   ["-P", p, A4], timeout=to + 30, env=env)
    pair.wait(srv, 30)
    return cli.rc, cli.out


def last_line(out):
    lines = [line for line in out.splitlines() if line.strip()]
    return (lines[-1] if lines else "no output")[:160]


def pingpong(name, prov, env, metric, size, iters, rep):
    """One run of fi_pingpong; False if it failed (and was reported)."""
    col = 6 if metric == "bw" else 7	# MB/sec, usec/xfer (1-based)
    cpu0 = busy_usec("a") + busy_usec("b")
    rc, out = one_pair(["fi_pingpong", "-p", prov, "-e", "rdm", "-I",
                        str(iters), "-S", str(size)], env, PP_TIMEOUT)
    cpu = busy_usec("a") + busy_usec("b") - cpu0
    val = None
    for line in out.splitlines():
        f = line.split()
        if len(f) == 8 and f[0] != "bytes":
            val = f[col - 1]
    if rc != 0 or val is None:
        print("BENCH-NA %s %s %d client exited %s: %s" %
              (name, metric, size, rc, last_line(out)), flush=True)
        return False
    print("BENCH %s %s %d %s %d" % (name, metric, size, val, rep), flush=True)
    if metric == "bw" and size >= 1 << 20:
        # Each iteration is a message each way.
        mb = 2.0 * size * iters / 1e6
        print("BENCH %s cpu %d %.0f %d" % (name, size, cpu / mb, rep),
              flush=True)
    return True


def rate(name, prov, env, metric, extra, rep):
    """One run of kfab-bench-rate; False if it failed (and was reported)."""
    rc, out = one_pair([RATE, "-p", prov, "-S", "8", "-W", "64", "-n",
                        str(RATE_MSGS // SCALE), "-r", "1", "-t",
                        "120"] + extra, env, 150)
    vals = [line.split()[1] for line in out.splitlines()
            if line.startswith("rate: ")]
    if rc != 0 or not vals:
        print("BENCH-NA %s %s 8 rate exited %s: %s" %
              (name, metric, rc, last_line(out)), flush=True)
        return False
    print("BENCH %s %s 8 %s %d" % (name, metric, vals[0], rep), flush=True)
    return True


# The points of a sweep: (metric, size, run(name, prov, env, rep)).
POINTS = (
    [("lat", size, lambda n, p, e, r, s=size, i=iters:
      pingpong(n, p, e, "lat", s, i // SCALE, r))
     for size, iters in LAT_POINTS] +
    [("bw", size, lambda n, p, e, r, s=size, i=iters:
      pingpong(n, p, e, "bw", s, (i + SCALE - 1) // SCALE, r))
     for size, iters in BW_POINTS] +
    [("rate", 8, lambda n, p, e, r: rate(n, p, e, "rate", [], r)),
     ("rate-nomore", 8,
      lambda n, p, e, r: rate(n, p, e, "rate-nomore", ["--no-more"], r))])


def sweeps(names):
    """REPS sweeps over POINTS, NAMES taking turns at each point; a
    provider that fails a point is not asked for it again."""
    failed = set()
    print("BENCH-INFO turns %s" % " ".join(names), flush=True)
    for rep in range(1, REPS + 1):
        for metric, size, run in POINTS:
            for name in names:
                if (name, metric, size) in failed:
                    continue
                prov, env = SETUP[name]
                ok = False
                with pair.test("bench: %s %s %d, run %d" %
                               (name, metric, size, rep)):
                    ok = run(name, prov, env, rep)
                if not ok:
                    failed.add((name, metric, size))
    for name in names:
        if name.startswith("kfab"):
            print("BENCH-INFO engine %s %s" % (name, ",".join(engines("b"))),
                  flush=True)


with pair.test("bench: a kfab listener on each guest"):
    pair.run("a", [KFABCTL, "net", "listen", A4], check=True)
    pair.run("b", [KFABCTL, "net", "listen", pair.addr("b")], check=True)

info = pair.run("a", "echo $(uname -r), $(nproc) CPUs").out.strip()
print("BENCH-INFO guest %s (each of two guests)" % info, flush=True)
print("BENCH-INFO reps %d scale %d" % (REPS, SCALE), flush=True)
sweeps([n for n in PROVIDERS if n != "kfab-rdma-2n"])
if "kfab-rdma-2n" in PROVIDERS:
    with pair.test("bench: soft-RoCE on the link, listeners with RDMA"):
        to_rdma()
    sweeps(["kfab-rdma-2n"])
load = pair.run("b", "cut -d' ' -f1-3 /proc/loadavg").out.strip()
print("BENCH-INFO load %s" % load, flush=True)
print("BENCH-DONE", flush=True)
