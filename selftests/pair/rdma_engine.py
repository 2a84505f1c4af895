# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# The administrator's engine rules (Documentation/net.rst "Choosing the
# engine") between two guests with soft-RoCE up (after rdma.py):
#   - a rule "tcp" for the other node, on both: the connection up stays
#     RDMA's; the next one (a's listener opened again) goes over TCP
#     although rxe is up
#   - the rules deleted and the TCP connection reset (ss -K on b): the
#     session goes on over the next connection, which is RDMA's
#   - a rule "rdma" on both and b's rxe device gone: b's sends end with
#     an error completion within the peer timeout, never fall back to
#     TCP, never hang
#   - rxe back, the rule gone, b's listener open again: RDMA as before,
#     as rdma_down.py expects next
# Run (pair_rdma): after rdma.py, before rdma_down.py.
import time
from common import KFABCTL, listener
from rdma_common import engines, pingpong

A4, B4 = pair.addr("a"), pair.addr("b")
OTHER = {"a": B4, "b": A4}


def rule(g, *args):
    pair.run(g, [KFABCTL, "net", "engine"] + list(args), check=True)


def new_connections():
    """a's listener closed and opened again: the peers' connections
    end, the next ones are new calls."""
    pair.run("a", [KFABCTL, "net", "listen", "del", A4], check=True)
    listener(pair, "a")
    e = engines(pair, "a", "listen")
    assert sorted(e) == ["rdma", "tcp"], "a listens with %s" % e


def rules(g):
    import json
    r = pair.run(g, [KFABCTL, "-j", "net", "engine", "show"], check=True)
    return json.loads(r.out)


with pair.test("rdma_engine: the peers go by RDMA to begin with"):
    pingpong(pair, "-m", "msg", "-S", "64", "-I", "5")
    for g in "ab":
        e = engines(pair, g, "peer")
        assert e == ["rdma"], "%s's peer goes by %s" % (g, e)

with pair.test("rdma_engine: rule tcp on both: TCP though rxe is up"):
    for g in "ab":
        rule(g, "add", OTHER[g] + "/32", "tcp")
        got = rules(g)
        assert got == [{"net": OTHER[g] + "/32", "engine": "tcp"}], got
    for g in "ab":
        e = engines(pair, g, "peer")
        assert e == ["rdma"], "the rule changed %s's connection: %s" % (g, e)
    new_connections()
    pingpong(pair, "-m", "msg", "-S", "4096", "-I", "20", "-c")
    for g in "ab":
        e = engines(pair, g, "peer")
        assert e == ["tcp"], "%s's peer goes by %s" % (g, e)

with pair.test("rdma_engine: rules deleted, the connection reset: RDMA"):
    for g in "ab":
        rule(g, "del", OTHER[g] + "/32")
        assert rules(g) == [], rules(g)
    pair.run("b", "modprobe tcp_diag", check=True)
    r = pair.run("b", "ss -HKtn state established "
                      "'( sport = :7471 or dport = :7471 )' | wc -l",
                 check=True)
    assert int(r.out.strip() or 0) >= 1, "no TCP connection to reset"
    pingpong(pair, "-m", "msg", "-S", "4096", "-I", "20", "-c")
    for g in "ab":
        e = engines(pair, g, "peer")
        assert e == ["rdma"], "%s's peer goes by %s" % (g, e)

with pair.test("rdma_engine: rule rdma on both, b's device gone: sends end in "
               "error, no fallback, no hang"):
    ms = int(pair.run("b", "cat /sys/module/kfab/parameters/peer_timeout_ms",
                      check=True).out)
    pair.run("b", "echo 4000 > /sys/module/kfab/parameters/peer_timeout_ms",
             check=True)
    # On both: a's calls would otherwise fall back to TCP, and b takes
    # whatever comes in.
    for g in "ab":
        rule(g, "add", OTHER[g] + "/32", "rdma")
    pair.run("b", "rdma link delete rxe0", check=True)
    t0 = time.time()
    srv = pair.spawn("a", ["timeout", "-k", "3", "150", "fi_pingpong", "-p",
                           "kfab", "-e", "rdm", "-B", "47990", "-S", "64",
                           "-I", "5"])
    pair.run("a", "for i in $(seq 300); do ss -Hltn 'sport = :47990' | "
                  "grep -q . && exit 0; sleep 0.1; done; exit 1", check=True)
    cli = pair.spawn("b", ["timeout", "-k", "3", "120", "fi_pingpong", "-p",
                           "kfab", "-e", "rdm", "-P", "47990", "-S", "64",
                           "-I", "5", A4])
    rc = pair.wait(cli, 150)
    waited = time.time() - t0
    pair.log("client: rc %s after %.0f s: %s" %
             (rc.rc, waited, rc.out.strip().splitlines()[-3:]))
    assert rc.rc not in (0, 124, 137), \
        "client: %s after %.0f s:\n%s" % (rc.rc, waited, rc.out[-600:])
    pair.signal(srv)
    pair.wait(srv, 60)
    e = engines(pair, "b", "peer")
    assert "tcp" not in [x for x in e if x], "b fell back: %s" % e
    out = pair.run("b", "cat /sys/kernel/debug/kfab/net", check=True).out
    assert " failures 0 " not in out, out
    pair.run("b", "echo %d > /sys/module/kfab/parameters/peer_timeout_ms"
             % ms, check=True)

with pair.test("rdma_engine: rxe back, rule gone, listener again: RDMA"):
    for g in "ab":
        rule(g, "del", OTHER[g] + "/32")
    pair.run("b", "rdma link add rxe0 type rxe netdev kfab0", check=True)
    pair.run("b", "for i in $(seq 100); do rdma link show rxe0/1 | "
                  "grep -q ACTIVE && exit 0; sleep 0.1; done; exit 1",
             check=True)
    # The device's removal closed b's RDMA listener: open it again.
    pair.run("b", [KFABCTL, "net", "listen", "del", B4], check=True)
    listener(pair, "b")
    e = engines(pair, "b", "listen")
    assert sorted(e) == ["rdma", "tcp"], "b listens with %s" % e
    pingpong(pair, "-m", "msg", "-S", "4096", "-I", "20", "-c")
    for g in "ab":
        e = engines(pair, g, "peer")
        assert e == ["rdma"], "%s's peer goes by %s" % (g, e)
