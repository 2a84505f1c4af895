# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# kfab's failure model between two guests (Documentation/net.rst,
# "Failures"), with 64 MiB messages from b to a (rendezvous: RTS, CTS,
# DATA straight into the receive's pages):
#   - the link cut for 3 s: invisible, data intact (peer_timeout_ms 30 s,
#     as the guests take long to see a cut end)
#   - the connection reset (ss -K on b) mid-transfer, three times: the
#     session goes on over new connections, invisible, data intact
#   - the link cut for longer: both sides end with errors in bounded
#     time, never hang; the next messages go through on new connections
#   - b killed mid-transfer and booted again: a's side ends with an error,
#     the new b (a new incarnation) is reachable both ways
#   - kfab.ko leaves a with rmmod after all of it (nothing held)
# Over whichever engine the bed loaded: TCP (pair_stock), or RDMA over
# soft-RoCE in pair_rdma (after rdma.py), where the resets are left out
# (nothing outside resets a queue pair as ss -K does a TCP connection; the
# cuts make QPs fail, which kfab_rdma takes as resets), b's device is
# added again after its reboot, and kfab_rdma.ko leaves with kfab.ko.
# Run: tools/kfab-vm-pair --script selftests/pair/kfab_failures.py
import os
import time
from common import TOP, ping
from rdma_common import engines

KFABCTL = os.path.join(TOP, "tools/kfabctl")
A4, B4 = pair.addr("a"), pair.addr("b")
BIG = str(64 << 20)
port = [48100]
RDMA = pair.run("a", "test -d /sys/module/kfab_rdma").rc == 0
ENGINE = "rdma" if RDMA else "tcp"


def reset_b():
    """Reset b's TCP connections to a: how many."""
    r = pair.run("b", "ss -HKtn state established "
                      "'( sport = :7471 or dport = :7471 )' | wc -l",
                 check=True)
    return int(r.out.strip() or 0)


def check_engine():
    for g in ("a", "b"):
        e = engines(pair, g, "peer")
        assert e and set(e) == {ENGINE}, "%s's peers go by %s" % (g, e)


def listen(g):
    pair.run(g, [KFABCTL, "net", "listen", pair.addr(g)], check=True)


def server(opts, to=240):
    """fi_pingpong server on a, listening; its handle and port."""
    port[0] += 1
    p = str(port[0])
    srv = pair.spawn("a", ["timeout", "-k", "3", str(to), "fi_pingpong",
                           "-p", "kfab", "-e", "rdm", "-B", p] + opts)
    pair.run("a", "for i in $(seq 300); do ss -Hltn 'sport = :%s' | "
                  "grep -q . && exit 0; sleep 0.1; done; exit 1" % p,
             check=True)
    return srv, p


def client(p, opts, to=240):
    return pair.spawn("b", ["timeout", "-k", "3", str(to), "fi_pingpong",
                            "-p", "kfab", "-e", "rdm", "-P", p] + opts +
                      [A4])


def pingpong(opts, to=240):
    srv, p = server(opts, to)
    cli = client(p, opts, to)
    pair.wait(cli, to + 30, check=True)
    pair.wait(srv, 60, check=True)


def peer_counts(g, *names):
    """The sum over g's peers of debugfs counters `names` (of "MSGS/BYTES"
    pairs, the messages)."""
    out = pair.run(g, "cat /sys/kernel/debug/kfab/net", check=True).out
    n = 0
    for line in out.splitlines():
        f = line.split()
        if " peer " not in line:
            continue
        for name in names:
            n += int(f[f.index(name) + 1].split("/")[0])
    return n


def messages(g):
    """Messages g's peers have sent and received (debugfs)."""
    return peer_counts(g, "tx", "rx")


def in_flight(before, cli):
    """Wait until kfab carries the test's messages (fi_pingpong's own
    set-up, over its TCP control socket, has no timeout: a cut then would
    test fi_pingpong, not kfab)."""
    for _ in range(600):
        if messages("b") > before:
            return
        assert not cli.done.is_set(), "the client ended before any message"
        time.sleep(0.5)
    raise AssertionError("no message moved in 300 s")


def failures(g):
    """The sum of the failures counters of g's peers (debugfs)."""
    return peer_counts(g, "failures")


def dump():
    """What kfab and the programs were doing, into the log."""
    for g in ("a", "b"):
        r = pair.run(g, "cat /sys/kernel/debug/kfab/net; "
                        "cat /sys/kernel/debug/kfab_rdma/conns 2>/dev/null; "
                        "for p in $(pgrep fi_pingpong); do echo pid $p; "
                        "cat /proc/$p/stack; done; "
                        "for t in $(ps -eLo tid=,comm= | "
                        "awk '/kworker/ { print $1 }'); do "
                        "s=$(cat /proc/$t/stack 2>/dev/null); "
                        "case $s in *kfab*) echo kworker $t; echo \"$s\";; "
                        "esac; done", timeout=60)
        pair.log("%s:\n%s" % (g, r.out))


def wait_or_dump(h, t):
    """pair.wait(), with what hangs in the log first if it would time out."""
    if not h.done.wait(t):
        dump()
    return pair.wait(h, 5)


def timeout_ms():
    return int(pair.run("a", "cat /sys/module/kfab/parameters/"
                             "peer_timeout_ms", check=True).out)


def new_timeout(ms):
    """peer_timeout_ms on both guests, and a new connection between them
    (a's listener goes and comes back) that takes it up."""
    for g in ("a", "b"):
        pair.run(g, "echo %d > /sys/module/kfab/parameters/peer_timeout_ms"
                 % ms, check=True)
    pair.run("a", [KFABCTL, "net", "unlisten", A4], check=True)
    listen("a")
    pair.run("b", "for i in $(seq 100); do grep -q ' in 1' "
                  "/sys/kernel/debug/kfab/net || exit 0; sleep 0.1; done; "
                  "exit 1", check=True)


with pair.test("failures: a listener on each guest"):
    for g in ("a", "b"):
        pair.run(g, "%s net show | grep -q 'listen' || %s net listen %s" %
                 (KFABCTL, KFABCTL, pair.addr(g)), check=True)

with pair.test("failures: 64 MiB b -> a with a 3 s cut: invisible, intact"):
    # The guests take seconds to see the carrier go and come back (15 s
    # on a loaded host): a cut of 3 s must not meet the timeout here.
    default_ms = timeout_ms()
    new_timeout(30000)
    before = messages("b")
    srv, p = server(["-S", BIG, "-I", "3", "-c"])
    cli = client(p, ["-S", BIG, "-I", "3", "-c"])
    in_flight(before, cli)
    t0 = time.time()
    pair.link(False)
    time.sleep(3)
    pair.link(True)
    # set_link waits until both guests see the carrier change: the cut
    # lasts longer than the sleep, by as much as the guests take.
    pair.log("the cut lasted %.1f s" % (time.time() - t0))
    pair.wait(cli, 300, check=True)
    pair.wait(srv, 60, check=True)
    check_engine()
    new_timeout(default_ms)

with pair.test("failures: 64 MiB b -> a, the connection reset 3 times: "
               "invisible, intact"):
    if RDMA:
        pair.skip("no tool resets a queue pair from outside")
    # ss -K aborts b's socket (a RST goes to a): kfab calls again and
    # resends what a did not get (Documentation/net.rst, "Connections").
    pair.run("b", "modprobe tcp_diag", check=True)
    before, ended = messages("b"), failures("b")
    resumed = peer_counts("b", "resumed")
    srv, p = server(["-S", BIG, "-I", "3", "-c"], to=300)
    cli = client(p, ["-S", BIG, "-I", "3", "-c"], to=300)
    in_flight(before, cli)
    kills = 0
    for _ in range(3):
        kills += reset_b()
        time.sleep(1)
    pair.wait(cli, 330, check=True)
    pair.wait(srv, 60, check=True)
    pair.log("connections aborted: %d, sessions resumed: %d" %
             (kills, peer_counts("b", "resumed") - resumed))
    assert kills >= 1, "no connection was aborted"
    assert peer_counts("b", "resumed") > resumed, "no session resumed"
    assert failures("b") == ended, "a session ended"
    check_engine()

with pair.test("failures: a cut past peer_timeout_ms ends both sides"):
    before, moved = failures("b"), messages("b")
    cut = timeout_ms() / 1000 + 8
    srv, p = server(["-S", BIG, "-I", "20"], to=300)
    cli = client(p, ["-S", BIG, "-I", "20"], to=300)
    in_flight(moved, cli)
    pair.link(False)
    t0 = time.time()
    try:
        rc = wait_or_dump(cli, cut + 60)
    finally:
        pair.link(True)
    waited = time.time() - t0
    ping(pair, "b", A4)
    assert rc.rc not in (0, 124, 137), \
        "client: %s after %.0f s:\n%s" % (rc.rc, waited, rc.out[-600:])
    rs = wait_or_dump(srv, 150)
    assert rs.rc != 0, "server succeeded through a dead link"
    pair.log("client: %s, server: %s" % (rc.rc, rs.rc))
    assert failures("b") > before, "b counted no failure"
    pair.log("client ended %.0f s into the cut: %s" %
             (waited, rc.out.strip().splitlines()[-1:]))

with pair.test("failures: after the long cut, new connections carry data"):
    pingpong(["-S", "4096", "-I", "20", "-c"])
    pingpong(["-S", BIG, "-I", "1", "-c"])

with pair.test("failures: b killed mid-transfer: a's side ends, no hang"):
    moved = messages("b")
    srv, p = server(["-S", BIG, "-I", "50"], to=300)
    cli = client(p, ["-S", BIG, "-I", "50"], to=300)
    in_flight(moved, cli)
    pair.kill("b")
    rs = wait_or_dump(srv, 220)
    assert rs.rc not in (0, 124, 137), "server: %s" % rs.rc
    pair.boot("b")
    if RDMA:
        pair.run("b", "rdma link add rxe0 type rxe netdev kfab0 && "
                      "for i in $(seq 100); do rdma link show rxe0/1 | "
                      "grep -q ACTIVE && exit 0; sleep 0.1; done; exit 1",
                 check=True)
    listen("b")

with pair.test("failures: the new b is reachable both ways"):
    pingpong(["-S", "64", "-I", "20", "-c"])
    pingpong(["-S", BIG, "-I", "1", "-c"])
    out = pair.run("a", "cat /sys/kernel/debug/kfab/net", check=True).out
    assert "state up" in out, out
    check_engine()

with pair.test("failures: rmmod kfab on a after all of it, then back"):
    pair.run("a", "rmmod kfab_rdma kfab" if RDMA else "rmmod kfab",
             check=True)
    for m in pair.modules[:2 if RDMA else 1]:
        pair.run("a", ["insmod", m], check=True)
    listen("a")
    pingpong(["-S", "64", "-I", "10"])
    check_engine()
