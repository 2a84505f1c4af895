# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# The two-guest bed's smoke test (make test): ping both ways on IPv4 and
# IPv6, a TCP echo, the link cut and restored, a TCP stream that outlives a
# 2 s cut.  Run: tools/kfab-vm-pair --script selftests/pair/smoke.py
from common import echo, ping, stream, outage, unreachable

A4, B4 = pair.addr("a"), pair.addr("b")
A6, B6 = pair.addr("a", 6), pair.addr("b", 6)

with pair.test("pair: ping a -> b, IPv4 and IPv6"):
    ping(pair, "a", B4)
    ping(pair, "a", B6)
with pair.test("pair: ping b -> a by name, IPv4 and IPv6"):
    ping(pair, "b", "kfab-a")
    ping(pair, "b", "kfab-a6")
with pair.test("pair: kfab.ko loaded in both"):
    for g in "ab":
        pair.run(g, "test -d /sys/module/kfab", check=True)
with pair.test("pair: TCP echo a -> b, IPv4"):
    echo(pair, "a", "b", B4, 7000)
with pair.test("pair: TCP echo b -> a, IPv6"):
    echo(pair, "b", "a", A6, 7001)
with pair.test("pair: link cut and restored"):
    pair.link(False)
    unreachable(pair, "a", B4)
    carrier = pair.run("b", "cat /sys/class/net/kfab0/carrier").out.strip()
    assert carrier == "0", "b's carrier is %r with the link cut" % carrier
    pair.link(True)
    ping(pair, "a", B4)
    ping(pair, "b", A6)
with pair.test("pair: TCP stream survives a 2 s cut"):
    out = stream(pair, "a", "b", B4, 7002, 5, during=outage(pair, 2))
    pair.log(out, verbose_only=True)
