// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Tests of the in-kernel API from inside the kernel (CONFIG_KFAB_TEST):
 * reading /sys/kernel/debug/kfab/kapi/selftest runs them and returns TAP
 * (selftests/kfab_kapi prints it).  Kernel endpoints talk to kernel
 * endpoints here; kfab_blk's test covers kernel <-> user space.  Only the
 * exported API is used, as another module would.
 */
#include <linux/completion.h>
#include <linux/debugfs.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/vmalloc.h>

#include "kfab.h"
#include "kfab_kapi.h"

#define KT_WAIT		(5 * HZ)
#define KT_BUF		(64 * 1024)
#define KT_NR		8

struct kt {
	char *out;
	size_t len, size;
	int n, failed;
};

static __printf(2, 3) void kt_printf(struct kt *t, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	if (t->len < t->size)
		t->len += vscnprintf(t->out + t->len, t->size - t->len, fmt, ap);
	va_end(ap);
}

static void kt_check(struct kt *t, bool ok, const char *name,
		     const char *cond, int line)
{
	t->n++;
	if (!ok)
		t->failed++;
	kt_printf(t, "%sok %d %s\n", ok ? "" : "not ", t->n, name);
	if (!ok)
		kt_printf(t, "#   failed: %s (line %d)\n", cond, line);
}

#define KT_CHECK(t, cond, name) kt_check(t, cond, name, #cond, __LINE__)

/* A request with a completion to wait on. */
struct kt_req {
	struct kfab_kreq req;
	struct completion done;
	int calls;
};

static void kt_done(struct kfab_kreq *req)
{
	struct kt_req *r = container_of(req, struct kt_req, req);

	r->calls++;
	complete(&r->done);
}

static void kt_init(struct kt_req *r, enum kfab_kop op, u64 addr,
		    enum kfab_kbuf type, const void *buf, unsigned int nr,
		    size_t len)
{
	memset(r, 0, sizeof(*r));
	init_completion(&r->done);
	r->req.op = op;
	r->req.addr = addr;
	r->req.buf_type = type;
	r->req.kvec = buf;
	r->req.nr_segs = nr;
	r->req.len = len;
	r->req.done = kt_done;
}

static bool kt_wait(struct kt_req *r)
{
	return wait_for_completion_timeout(&r->done, KT_WAIT) && r->calls == 1;
}

struct kt_env {
	struct kfab_kdomain *dom;
	struct kfab_kav *av;
	struct kfab_kcq *cq;
	struct kfab_kep *a, *b, *c;	/* b reports to @cq */
	u64 ia, ib, ic;
};

static int kt_setup(struct kt *t, struct kt_env *e)
{
	struct kfab_kep_attr attr_b = { .name = "b" };
	struct kfab_kep_attr attr_a = { .name = "a" };
	struct kfab_kep_attr attr_c = { .name = "c" };
	struct kfab_addr addr[3];
	u64 idx[3];

	e->dom = kfab_kdomain_open("kapi_selftest");
	if (IS_ERR(e->dom))
		return PTR_ERR(e->dom);
	e->av = kfab_kav_open(e->dom, NULL, 0, 0);
	if (IS_ERR(e->av))
		return PTR_ERR(e->av);
	e->cq = kfab_kcq_open(e->dom);
	if (IS_ERR(e->cq))
		return PTR_ERR(e->cq);
	attr_b.cq = e->cq;
	e->a = kfab_kep_open(e->dom, e->av, &attr_a);
	e->b = kfab_kep_open(e->dom, e->av, &attr_b);
	e->c = kfab_kep_open(e->dom, e->av, &attr_c);
	if (IS_ERR(e->a) || IS_ERR(e->b) || IS_ERR(e->c))
		return -ENOMEM;
	kfab_kep_addr(e->a, &addr[0]);
	kfab_kep_addr(e->b, &addr[1]);
	kfab_kep_addr(e->c, &addr[2]);
	if (kfab_kav_insert(e->av, addr, 3, idx) != 3)
		return -EINVAL;
	e->ia = idx[0];
	e->ib = idx[1];
	e->ic = idx[2];
	return 0;
}

/* Poll @cq until @want comes out (it is the only one expected). */
static bool kt_poll(struct kfab_kcq *cq, struct kfab_kreq *want)
{
	struct kfab_kreq *got = NULL;

	if (kfab_kcq_wait(cq, KT_WAIT) <= 0)
		return false;
	return kfab_kcq_poll(cq, &got, 1) == 1 && got == want;
}

/* Named AVs: created, attached by another domain, refused as they should. */
static void kt_named(struct kt *t, struct kt_env *e)
{
	struct kfab_kdomain *dom2 = kfab_kdomain_open("kapi_selftest2");
	struct kfab_kav *av1 = NULL, *av2 = NULL, *ro = NULL, *bad;
	struct kfab_addr addr, got;
	u64 idx = KFAB_KADDR_ANY;
	bool ok;

	if (IS_ERR(dom2)) {
		KT_CHECK(t, false, "a second domain");
		return;
	}
	bad = kfab_kav_open(e->dom, "kapi_selftest_none",
			    KFAB_AV_OPEN_NO_CREATE, 0);
	KT_CHECK(t, PTR_ERR(bad) == -ENOENT,
		 "named AV that does not exist, NO_CREATE: -ENOENT");
	bad = kfab_kav_open(e->dom, ".hidden", 0, 0);
	ok = PTR_ERR(bad) == -EINVAL;
	bad = kfab_kav_open(e->dom, "a/b", 0, 0);
	ok = ok && PTR_ERR(bad) == -EINVAL;
	bad = kfab_kav_open(e->dom, NULL, KFAB_AV_OPEN_NO_CREATE, 0);
	ok = ok && PTR_ERR(bad) == -EINVAL;
	KT_CHECK(t, ok, "bad names, flags without a name: -EINVAL");

	av1 = kfab_kav_open(e->dom, "kapi_selftest_av", KFAB_AV_OPEN_EXCL, 0);
	av2 = kfab_kav_open(dom2, "kapi_selftest_av", KFAB_AV_OPEN_NO_CREATE,
			    0);
	ro = kfab_kav_open(dom2, "kapi_selftest_av", KFAB_AV_OPEN_READ_ONLY,
			   0);
	if (IS_ERR(av1) || IS_ERR(av2) || IS_ERR(ro)) {
		KT_CHECK(t, false, "a named AV created and attached twice");
		goto out;
	}
	bad = kfab_kav_open(dom2, "kapi_selftest_av", KFAB_AV_OPEN_EXCL, 0);
	KT_CHECK(t, PTR_ERR(bad) == -EEXIST, "EXCL on an existing name: -EEXIST");
	kfab_kep_addr(e->a, &addr);
	ok = kfab_kav_insert(av1, &addr, 1, &idx) == 1 &&
	     !kfab_kav_lookup(av2, idx, &got) &&
	     !memcmp(&got, &addr, sizeof(got)) &&
	     !kfab_kav_lookup(ro, idx, &got);
	KT_CHECK(t, ok,
		 "a named AV is one table: an address inserted by one domain is found by another");
	KT_CHECK(t, kfab_kav_insert(ro, &addr, 1, &idx) == -EPERM &&
		 kfab_kav_remove(ro, &idx, 1) == -EPERM,
		 "a read-only handle: insert and remove are -EPERM");
out:
	if (!IS_ERR_OR_NULL(ro))
		kfab_kav_close(ro);
	if (!IS_ERR_OR_NULL(av2))
		kfab_kav_close(av2);
	if (!IS_ERR_OR_NULL(av1))
		kfab_kav_close(av1);
	kfab_kdomain_close(dom2);
}

static void kt_run(struct kt *t)
{
	struct kt_env e = {};
	struct kt_req *s, *r, *rs;
	struct scatterlist sg[2];
	struct bio_vec bv[2];
	struct kvec kv[2];
	char *src, *dst, *big_src, *big_dst;
	struct page *pg[2];
	struct kfab_addr gone;
	int i, rc, ok;

	s = kzalloc(sizeof(*s), GFP_KERNEL);
	r = kzalloc(sizeof(*r), GFP_KERNEL);
	rs = kcalloc(KT_NR, sizeof(*rs), GFP_KERNEL);
	src = kzalloc(PAGE_SIZE, GFP_KERNEL);
	dst = kzalloc(PAGE_SIZE, GFP_KERNEL);
	pg[0] = alloc_page(GFP_KERNEL);
	pg[1] = alloc_page(GFP_KERNEL);
	big_src = vmalloc(256 * 1024);
	big_dst = vzalloc(256 * 1024);
	if (!s || !r || !rs || !src || !dst || !pg[0] || !pg[1] || !big_src || !big_dst) {
		KT_CHECK(t, false, "allocations");
		goto out;
	}
	rc = kt_setup(t, &e);
	KT_CHECK(t, !rc, "domain, unnamed AV, kernel CQ, three endpoints, addresses inserted");
	if (rc)
		goto out;

	/* kvec to kvec, callbacks, the receive posted first */
	memset(src, 0xa5, 100);
	kv[0] = (struct kvec){ .iov_base = src, .iov_len = 60 };
	kv[1] = (struct kvec){ .iov_base = src + 60, .iov_len = 40 };
	{
		struct kvec rv = { .iov_base = dst, .iov_len = 200 };

		kt_init(r, KFAB_KOP_RECV, KFAB_KADDR_ANY, KFAB_KBUF_KVEC,
			&rv, 1, 200);
		rc = kfab_kep_post(e.c, &r->req);
		kt_init(s, KFAB_KOP_SEND, e.ic, KFAB_KBUF_KVEC, kv, 2, 100);
		rc = rc ?: kfab_kep_post(e.a, &s->req);
		ok = !rc && kt_wait(s) && kt_wait(r) && !s->req.status &&
		     !r->req.status && r->req.out_len == 100 &&
		     r->req.out_src == e.ia && !memcmp(dst, src, 100);
		KT_CHECK(t, ok,
			 "send (2 kvecs) to a posted receive: one callback each, data, length, source index");
	}

	/* unexpected, tagged with data, bvec to scatterlist, kernel CQ */
	memset(page_address(pg[0]), 0x11, PAGE_SIZE);
	memset(page_address(pg[1]), 0x22, PAGE_SIZE);
	bv[0] = (struct bio_vec){ .bv_page = pg[0], .bv_len = 1000,
				  .bv_offset = 96 };
	bv[1] = (struct bio_vec){ .bv_page = pg[1], .bv_len = 3000 };
	kt_init(s, KFAB_KOP_TSEND, e.ib, KFAB_KBUF_BVEC, bv, 2, 4000);
	s->req.tag = 0x1234;
	s->req.data = 0xfeed;
	s->req.flags = KFAB_KREQ_REMOTE_DATA;
	rc = kfab_kep_post(e.a, &s->req);
	KT_CHECK(t, !rc && kt_wait(s) && !s->req.status,
		 "tagged send (bio_vecs) with remote data, unexpected: completes");
	memset(dst, 0, PAGE_SIZE);
	sg_init_table(sg, 2);
	sg_set_buf(&sg[0], dst, 1500);
	sg_set_buf(&sg[1], dst + 1500, 2596);
	kt_init(r, KFAB_KOP_TRECV, KFAB_KADDR_ANY, KFAB_KBUF_SG, sg, 2,
		4096);
	r->req.done = NULL;
	r->req.tag = 0x1200;
	r->req.ignore = 0xff;
	rc = kfab_kep_post(e.b, &r->req);
	ok = !rc && kt_poll(e.cq, &r->req) && !r->req.status &&
	     r->req.out_len == 4000 && r->req.out_tag == 0x1234 &&
	     (r->req.out_flags & KFAB_KCOMP_REMOTE_DATA) &&
	     r->req.out_data == 0xfeed && r->req.out_src == e.ia &&
	     !memcmp(dst, page_address(pg[0]) + 96, 1000) &&
	     !memcmp(dst + 1000, page_address(pg[1]), 3000);
	KT_CHECK(t, ok,
		 "tagged receive (scatterlist) matches with ignore bits, polled from the kernel CQ: tag, data, bytes");

	/* truncation */
	{
		struct kvec sv = { .iov_base = src, .iov_len = 100 };
		struct kvec rv = { .iov_base = dst, .iov_len = 10 };

		kt_init(r, KFAB_KOP_RECV, KFAB_KADDR_ANY, KFAB_KBUF_KVEC,
			&rv, 1, 10);
		rc = kfab_kep_post(e.c, &r->req);
		kt_init(s, KFAB_KOP_SEND, e.ic, KFAB_KBUF_KVEC, &sv, 1, 100);
		rc = rc ?: kfab_kep_post(e.a, &s->req);
		ok = !rc && kt_wait(r) && kt_wait(s) &&
		     r->req.status == -EMSGSIZE && r->req.out_len == 10;
		KT_CHECK(t, ok, "a receive too small: -EMSGSIZE, out_len is what fit");
	}

	/* a large send waits at the receiver until a receive comes */
	for (i = 0; i < 256 * 1024; i++)
		big_src[i] = i * 7;
	{
		struct kvec sv = { .iov_base = big_src, .iov_len = 256 * 1024 };
		struct kvec rv = { .iov_base = big_dst, .iov_len = 256 * 1024 };

		kt_init(s, KFAB_KOP_SEND, e.ic, KFAB_KBUF_KVEC, &sv, 1,
			256 * 1024);
		rc = kfab_kep_post(e.a, &s->req);
		kt_init(r, KFAB_KOP_RECV, KFAB_KADDR_ANY, KFAB_KBUF_KVEC,
			&rv, 1, 256 * 1024);
		rc = rc ?: kfab_kep_post(e.c, &r->req);
		ok = !rc && kt_wait(r) && kt_wait(s) && !r->req.status &&
		     !s->req.status && r->req.out_len == 256 * 1024 &&
		     !memcmp(big_src, big_dst, 256 * 1024);
		KT_CHECK(t, ok,
			 "256 KiB from vmalloc memory, sent before the receive: both complete, data intact");
	}

	/* cancel */
	{
		struct kvec rv = { .iov_base = dst, .iov_len = 10 };

		kt_init(r, KFAB_KOP_TRECV, e.ia, KFAB_KBUF_KVEC, &rv, 1, 10);
		r->req.tag = 77;
		rc = kfab_kep_post(e.c, &r->req);
		rc = rc ?: kfab_kep_cancel(e.c, &r->req);
		ok = !rc && kt_wait(r) && r->req.status == -ECANCELED &&
		     kfab_kep_cancel(e.c, &r->req) == -ENOENT;
		KT_CHECK(t, ok,
			 "cancel: the receive completes with -ECANCELED once; a second cancel is -ENOENT");
		KT_CHECK(t, kfab_kep_cancel(e.c, &s->req) == -EINVAL,
			 "cancel of a send: -EINVAL");
	}

	/* bad requests are refused, nothing completes */
	{
		struct kvec sv = { .iov_base = src, .iov_len = 10 };

		kt_init(s, KFAB_KOP_SEND, e.ib, KFAB_KBUF_KVEC, &sv, 1, 11);
		rc = kfab_kep_post(e.a, &s->req);
		kt_init(s, 9, e.ib, KFAB_KBUF_KVEC, &sv, 1, 10);
		rc = rc == -EINVAL ? kfab_kep_post(e.a, &s->req) : 0;
		kt_init(s, KFAB_KOP_SEND, e.ib, KFAB_KBUF_KVEC, &sv, 1, 10);
		s->req.done = NULL;
		rc = rc == -EINVAL ? kfab_kep_post(e.a, &s->req) : 0;
		KT_CHECK(t, rc == -EINVAL && !s->calls,
			 "len beyond the buffers, unknown op, no callback: -EINVAL");

		kt_init(s, KFAB_KOP_SEND, 4000, KFAB_KBUF_KVEC, &sv, 1, 10);
		rc = kfab_kep_post(e.a, &s->req);
		KT_CHECK(t, !rc && kt_wait(s) && s->req.status == -EINVAL,
			 "a send to an index that names nothing: -EINVAL completion");
	}

	/* fault points of the domain: its context's, armed as by the ioctl */
	{
		struct kfab_ctx *fctx = kfab_kdomain_ctx(e.dom);
		struct kvec sv = { .iov_base = src, .iov_len = 10 };
		struct kvec rv = { .iov_base = dst, .iov_len = 10 };

		kfab_fault_arm(fctx, KFAB_FAULT_ALLOC, 1);
		kt_init(s, KFAB_KOP_SEND, e.ib, KFAB_KBUF_KVEC, &sv, 1, 10);
		rc = kfab_kep_post(e.a, &s->req);
		KT_CHECK(t, rc == -ENOMEM && !s->calls,
			 "fault alloc: the post fails with -ENOMEM, no completion");
		KT_CHECK(t, kfab_fault_fired(fctx, KFAB_FAULT_ALLOC) == 1 &&
			 kfab_fault_arm(fctx, KFAB_FAULT_ALLOC, 0) == 0,
			 "fault alloc: fired once, nothing left armed");
		kfab_fault_arm(fctx, KFAB_FAULT_LOSE, 1);
		rc = kfab_kep_post(e.a, &s->req);
		KT_CHECK(t, !rc && kt_wait(s) && s->req.status == -EIO,
			 "fault lose: the send completes with -EIO");
		KT_CHECK(t, kfab_fault_fired(fctx, KFAB_FAULT_LOSE) == 1,
			 "fault lose: fired once");

		kt_init(r, KFAB_KOP_RECV, KFAB_KADDR_ANY, KFAB_KBUF_KVEC,
			&rv, 1, 10);
		rc = kfab_kep_post(e.c, &r->req);
		kfab_fault_arm(fctx, KFAB_FAULT_NOREPLY, 1);
		kt_init(s, KFAB_KOP_SEND, e.ic, KFAB_KBUF_KVEC, &sv, 1, 10);
		rc = rc ?: kfab_kep_post(e.a, &s->req);
		ok = !rc && kt_wait(s) && !s->req.status &&
		     !wait_for_completion_timeout(&r->done, HZ / 10) &&
		     kfab_fault_fired(fctx, KFAB_FAULT_NOREPLY) == 1;
		rc = kfab_kep_cancel(e.c, &r->req);
		ok = ok && !rc && kt_wait(r) && r->req.status == -ECANCELED;
		KT_CHECK(t, ok,
			 "fault noreply: the send completes, the posted receive never sees it");
	}

	/* close with receives outstanding: each is cancelled, callbacks done */
	for (i = 0; i < KT_NR; i++) {
		kt_init(&rs[i], KFAB_KOP_RECV, KFAB_KADDR_ANY, KFAB_KBUF_KVEC,
			NULL, 0, 0);
		rc = kfab_kep_post(e.c, &rs[i].req);
		if (rc)
			break;
	}
	kfab_kep_addr(e.c, &gone);
	kfab_kep_close(e.c);
	e.c = NULL;
	ok = !rc;
	for (i = 0; i < KT_NR; i++)
		ok = ok && completion_done(&rs[i].done) && rs[i].calls == 1 &&
		     rs[i].req.status == -ECANCELED;
	KT_CHECK(t, ok,
		 "close with 8 receives posted: all 8 callbacks ran (-ECANCELED) before close returned");

	{
		struct kvec sv = { .iov_base = src, .iov_len = 10 };

		kt_init(s, KFAB_KOP_SEND, e.ic, KFAB_KBUF_KVEC, &sv, 1, 10);
		rc = kfab_kep_post(e.a, &s->req);
		KT_CHECK(t, !rc && kt_wait(s) &&
			 s->req.status == -EHOSTUNREACH,
			 "a send to a closed endpoint: -EHOSTUNREACH");
	}
	KT_CHECK(t, kfab_kav_remove(e.av, &e.ic, 1) == 0 &&
		 kfab_kav_remove(e.av, &e.ic, 1) == -EINVAL &&
		 kfab_kav_lookup(e.av, e.ic, &gone) == -EINVAL,
		 "remove an address; again: -EINVAL; lookup: -EINVAL");
	KT_CHECK(t, kfab_kcq_wait(e.cq, 1) == 0,
		 "kfab_kcq_wait() on an empty CQ times out: 0");
	kt_named(t, &e);

out:
	/* Parents first: each goes when its last child does. */
	if (!IS_ERR_OR_NULL(e.dom))
		kfab_kdomain_close(e.dom);
	if (!IS_ERR_OR_NULL(e.av))
		kfab_kav_close(e.av);
	if (!IS_ERR_OR_NULL(e.cq))
		kfab_kcq_close(e.cq);
	if (!IS_ERR_OR_NULL(e.a))
		kfab_kep_close(e.a);
	if (!IS_ERR_OR_NULL(e.b))
		kfab_kep_close(e.b);
	if (!IS_ERR_OR_NULL(e.c))
		kfab_kep_close(e.c);
	KT_CHECK(t, true, "parents closed before their children");
	vfree(big_dst);
	vfree(big_src);
	if (pg[1])
		__free_page(pg[1]);
	if (pg[0])
		__free_page(pg[0]);
	kfree(dst);
	kfree(src);
	kfree(rs);
	kfree(r);
	kfree(s);
}

static int kfab_kapi_test_open(struct inode *inode, struct file *file)
{
	struct kt *t = kzalloc(sizeof(*t), GFP_KERNEL);

	if (!t)
		return -ENOMEM;
	t->size = KT_BUF;
	t->out = kvzalloc(t->size, GFP_KERNEL);
	if (!t->out) {
		kfree(t);
		return -ENOMEM;
	}
	kt_printf(t, "TAP version 13\n");
	kt_run(t);
	kt_printf(t, "1..%d\n# Totals: pass:%d fail:%d xfail:0 xpass:0 skip:0 error:0\n",
		  t->n, t->n - t->failed, t->failed);
	file->private_data = t;
	return 0;
}

static ssize_t kfab_kapi_test_read(struct file *file, char __user *buf,
				   size_t count, loff_t *ppos)
{
	struct kt *t = file->private_data;

	return simple_read_from_buffer(buf, count, ppos, t->out, t->len);
}

static int kfab_kapi_test_release(struct inode *inode, struct file *file)
{
	struct kt *t = file->private_data;

	kvfree(t->out);
	kfree(t);
	return 0;
}

/* No .llseek: lseek() fails with -ESPIPE (what no_llseek, gone in 6.12, did). */
const struct file_operations kfab_kapi_test_fops = {
	.owner = THIS_MODULE,
	.open = kfab_kapi_test_open,
	.read = kfab_kapi_test_read,
	.release = kfab_kapi_test_release,
};
