# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""Helpers of the RDMA scenarios (rdma.py, rdma_down.py)."""

import json
from common import KFABCTL

port = [47900]


def engines(pair, g, what):
    """The engine of each listener or peer of guest g (kfabctl -j)."""
    r = pair.run(g, [KFABCTL, "-j", what, "show"], check=True)
    return [o.get("engine") for o in json.loads(r.out)]


def pingpong(pair, *opts):
    """fi_pingpong server on a, client on b, over kfab."""
    port[0] += 1
    p = str(port[0])
    srv = pair.spawn("a", ["timeout", "240", "fi_pingpong", "-p", "kfab",
                           "-e", "rdm", "-B", p] + list(opts))
    pair.run("a", "for i in $(seq 200); do ss -Hltn 'sport = :%s' | "
                  "grep -q . && exit 0; sleep 0.1; done; exit 1" % p,
             check=True)
    cli = pair.spawn("b", ["timeout", "240", "fi_pingpong", "-p", "kfab",
                           "-e", "rdm", "-P", p] + list(opts) +
                     [pair.addr("a")])
    rc = pair.wait(cli, 300, check=True)
    pair.wait(srv, 60, check=True)
    pair.log(rc.out.strip(), verbose_only=True)
