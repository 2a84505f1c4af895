# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# kfab's transport between two guests (Documentation/net.rst): a listener
# on each guest's link address, then libfabric's own fi_pingpong, unchanged,
# from b to a: messages, tagged messages pulled into the receive, a data
# check, and a run through a 1 s cut of the link.
# Run: tools/kfab-vm-pair --script selftests/pair/kfab_pingpong.py
import time
from common import listener

A4 = pair.addr("a")
port = [47800]


def pingpong(*opts, during=None):
    """fi_pingpong server on a, client on b; `during` runs 2 s in."""
    port[0] += 1
    p = str(port[0])
    srv = pair.spawn("a", ["timeout", "240", "fi_pingpong", "-p", "kfab",
                           "-e", "rdm", "-B", p] + list(opts))
    pair.run("a", "for i in $(seq 200); do ss -Hltn 'sport = :%s' | "
                  "grep -q . && exit 0; sleep 0.1; done; exit 1" % p,
             check=True)
    cli = pair.spawn("b", ["timeout", "240", "fi_pingpong", "-p", "kfab",
                           "-e", "rdm", "-P", p] + list(opts) + [A4])
    if during:
        time.sleep(2)
        during()
    rc = pair.wait(cli, 300, check=True)
    pair.wait(srv, 60, check=True)
    pair.log(rc.out.strip(), verbose_only=True)


with pair.test("kfab: a listener on each guest's link address"):
    listener(pair, "a")
    listener(pair, "b")
with pair.test("kfab: fi_pingpong -m msg -S 64, b -> a"):
    pingpong("-m", "msg", "-S", "64", "-I", "20")
with pair.test("kfab: fi_pingpong -m tagged -S 1048576 -c, b -> a"):
    pingpong("-m", "tagged", "-S", "1048576", "-I", "3", "-c")


def cut():
    pair.link(False)
    time.sleep(1)
    pair.link(True)


with pair.test("kfab: fi_pingpong through a 1 s cut of the link"):
    pingpong("-m", "msg", "-S", "4096", "-I", "400", "-c", during=cut)
