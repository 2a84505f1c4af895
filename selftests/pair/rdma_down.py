# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# The end of the RDMA scenarios (after rdma.py and whatever ran over RDMA
# since): the peers still go by RDMA, then b's device goes and TCP takes
# over, then kfab_rdma.ko and kfab.ko leave both guests.
from rdma_common import engines, pingpong

with pair.test("rdma: the peers still go by RDMA"):
    for g in "ab":
        e = engines(pair, g, "peer")
        assert e and set(e) == {"rdma"}, "%s's peers go by %s" % (g, e)
with pair.test("rdma: the device goes, TCP takes over"):
    pair.run("b", "rdma link delete rxe0", check=True)
    pingpong(pair, "-m", "msg", "-S", "4096", "-I", "20", "-c")
    e = engines(pair, "b", "peer")
    assert e == ["tcp"], "b's peer goes by %s" % e
with pair.test("rdma: rmmod kfab_rdma, then kfab, in both"):
    pair.run("a", "rdma link delete rxe0", check=True)
    for g in "ab":
        pair.run(g, "rmmod kfab_rdma && rmmod kfab", check=True)
