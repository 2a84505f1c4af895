# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""Helpers the two-guest scenarios share (tools/kfab-vm-pair runs them
with this directory on sys.path)."""

import os
import time

TOP = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
STREAM = os.path.join(TOP, "selftests/lib/kfab-stream")
KFABCTL = os.path.join(TOP, "tools/kfabctl")


def ping(pair, g, addr, count=2, check=True):
    """Ping addr from guest g until `count` answers (15 s at most: the
    neighbour may need resolving again after a cut); a Result
    (CommandFailed if check)."""
    return pair.run(g, "ping -q -c %d -i 0.3 -w 15 %s" % (count, addr),
                    timeout=60, check=check)


def listener(pair, g):
    """A kfab listener on g's link address, unless one is there already
    (the scenarios run one after another on the same guests)."""
    a = pair.addr(g)
    if pair.run(g, [KFABCTL, "net", "listen", a]).rc:
        r = pair.run(g, [KFABCTL, "net", "show"], check=True)
        assert a in r.out, "no listener on %s:\n%s" % (a, r.out)


def unreachable(pair, g, addr):
    r = pair.run(g, "ping -q -c 1 -W 1 " + addr, timeout=30)
    assert r.rc != 0, "%s still reaches %s:\n%s" % (g, addr, r.out)


def echo(pair, src, dst, addr, port):
    """A TCP echo through socat: src sends a line to dst's echo server."""
    # -t 30 on both ends: socat waits 0.5 s by default for the other
    # direction after an EOF, less than a loaded TCG guest may need to
    # start cat and have it answer.
    srv = pair.spawn(dst, "socat -t 30 TCP6-LISTEN:%d,reuseaddr,ipv6only=0 "
                          "EXEC:cat" % port)
    host = "[%s]" % addr if ":" in addr else addr
    line = "kfab pair %s -> %s" % (src, dst)
    r = pair.run(src, "echo '%s' | socat -t 30 - TCP:%s:%d,retry=50,"
                      "interval=0.2" % (line, host, port),
                 timeout=60, check=True)
    pair.wait(srv, 30, check=True)
    assert r.out.strip() == line, "echo gave %r" % r.out


def stream(pair, src, dst, addr, port, seconds, during=None):
    """A checked TCP stream src -> dst of `seconds` at 1 MB/s; `during`
    (if any) is called 1.5 s into it.  Both ends must succeed."""
    srv = pair.spawn(dst, [STREAM, "serve", "--port", str(port),
                           "--timeout", "90"])
    cli = pair.spawn(src, [STREAM, "send", addr, "--port", str(port),
                           "--seconds", str(seconds), "--rate", "1",
                           "--timeout", "90"])
    if during:
        time.sleep(1.5)
        during()
    rc = pair.wait(cli, 180, check=True)
    rs = pair.wait(srv, 60, check=True)
    return rc.out.strip() + "\n" + rs.out.strip()


def outage(pair, seconds):
    """The link cut for `seconds`, then back."""
    def cut():
        pair.link(False)
        time.sleep(seconds)
        pair.link(True)
    return cut
