# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Kill guest b hard in the middle of a TCP stream from a, boot it again:
# same addresses, kfab.ko loaded again, reachable again, a new TCP stream
# goes through.
# Run: tools/kfab-vm-pair --script selftests/pair/reboot.py
import time
from common import STREAM, ping, stream

B4 = pair.addr("b")

with pair.test("pair: ping a -> b before the kill"):
    ping(pair, "a", B4)
with pair.test("pair: b killed mid-stream, booted again"):
    srv = pair.spawn("b", [STREAM, "serve", "--port", "7010"])
    cli = pair.spawn("a", [STREAM, "send", B4, "--port", "7010",
                           "--seconds", "600", "--rate", "0.2"])
    time.sleep(2)
    pair.kill("b")
    r = pair.wait(srv, 10)
    assert r.rc is None, "b's command outlived its guest: %r" % r
    assert not pair.alive("b")
    pair.boot("b")
    assert pair.alive("b")
with pair.test("pair: b is back: same addresses, kfab.ko loaded"):
    out = pair.run("b", "ip -br addr show kfab0; hostname", check=True).out
    assert "10.77.0.2/24" in out and "fd77::2/64" in out, out
    assert "kfab-b" in out, out
    pair.run("b", "test -d /sys/module/kfab", check=True)
with pair.test("pair: ping a -> b after the reboot, IPv4 and IPv6"):
    ping(pair, "a", B4)
    ping(pair, "b", pair.addr("a", 6))
with pair.test("pair: a new TCP stream a -> b after the reboot"):
    # a's old connection waits for its next retransmission (TCP backs
    # off to minutes) to be reset by the new b: not this bed's business.
    pair.signal(cli, 9)
    stream(pair, "a", "b", B4, 7011, 2)
