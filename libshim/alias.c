// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libshim: endpoint aliases (fi_endpoint(3), fi_ep_alias).
 *
 * An alias "differs from its parent endpoint only by its default data
 * transfer flags".  struct shim_ep_alias (internal.h) holds those flags
 * and a pointer to the endpoint; nothing reaches the kernel.  Its data
 * transfer calls are the endpoint's own tables (msg.c finds the endpoint
 * and the alias's flags, shim_msg_ep() and shim_ep_alias_of()); every
 * other call of struct fi_ops_ep and struct fi_ops_cm is forwarded to the
 * endpoint, so an alias answers exactly as its endpoint would.  Its fid
 * calls are its own: fi_close() (the alias alone), fi_control() with
 * FI_GETOPSFLAG/FI_SETOPSFLAG on its own flags and FI_ALIAS (another alias
 * of the endpoint, starting from this one's flags); binding goes to the
 * endpoint (-FI_EINVAL here: fi_endpoint(3) binds endpoints, and an alias
 * has nothing of its own to bind).
 *
 * Lifetime: each alias holds one count of its endpoint's @alias_cnt, and
 * the endpoint answers fi_close() with -FI_EBUSY while any is open
 * ("All allocated aliases must be closed for the underlying endpoint to be
 * released").
 */
#include <stdlib.h>

#include "barrier.h"
#include "internal.h"

static struct shim_ep_alias *to_alias(struct fid *fid)
{
	return container_of(fid, struct shim_ep_alias, ep_fid.fid);
}

/* The endpoint's fid_ep, where forwarded calls go. */
static struct fid_ep *alias_target(struct fid_ep *ep_fid)
{
	return &shim_ep_alias_of(ep_fid)->ep->ep_fid;
}

static struct fid_ep *alias_target_fid(fid_t fid)
{
	return &to_alias(fid)->ep->ep_fid;
}

/* ---- struct fi_ops ---- */

static int shim_alias_close(struct fid *fid)
{
	struct shim_ep_alias *alias = to_alias(fid);

	__atomic_sub_fetch(&alias->ep->alias_cnt, 1, __ATOMIC_ACQ_REL);
	free(alias);
	return 0;
}

static int shim_alias_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	(void)fid; (void)bfid; (void)flags;
	return -FI_EINVAL;
}

static int shim_alias_control(struct fid *fid, int command, void *arg)
{
	struct shim_ep_alias *alias = to_alias(fid);

	switch (command) {
	case FI_GETOPSFLAG:
		if (!arg)
			return -FI_EINVAL;
		return shim_opsflag_get(arg, shim_read_once(&alias->tx_op_flags),
					shim_read_once(&alias->rx_op_flags));
	case FI_SETOPSFLAG:
		if (!arg)
			return -FI_EINVAL;
		return shim_opsflag_set(*(uint64_t *)arg, &alias->tx_op_flags,
					&alias->rx_op_flags);
	case FI_ALIAS:
		return shim_ep_alias_open(alias->ep, alias, arg);
	default:
		/* FI_ENABLE, FI_GET_VAL, ...: the endpoint's business. */
		return fi_control(&alias->ep->ep_fid.fid, command, arg);
	}
}

const struct fi_ops shim_ep_alias_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = shim_alias_close,
	.bind = shim_alias_bind,
	.control = shim_alias_control,
	.ops_open = shim_no_ops_open,
	.tostr = shim_no_tostr,
	.ops_set = shim_no_ops_set,
};

/* ---- struct fi_ops_ep: the endpoint's ---- */

static ssize_t shim_alias_cancel(fid_t fid, void *context)
{
	return fi_cancel(&alias_target_fid(fid)->fid, context);
}

static int shim_alias_getopt(fid_t fid, int level, int optname,
			     void *optval, size_t *optlen)
{
	return fi_getopt(&alias_target_fid(fid)->fid, level, optname, optval,
			 optlen);
}

static int shim_alias_setopt(fid_t fid, int level, int optname,
			     const void *optval, size_t optlen)
{
	return fi_setopt(&alias_target_fid(fid)->fid, level, optname, optval,
			 optlen);
}

static int shim_alias_tx_ctx(struct fid_ep *sep, int index,
			     struct fi_tx_attr *attr, struct fid_ep **tx_ep,
			     void *context)
{
	return fi_tx_context(alias_target(sep), index, attr, tx_ep, context);
}

static int shim_alias_rx_ctx(struct fid_ep *sep, int index,
			     struct fi_rx_attr *attr, struct fid_ep **rx_ep,
			     void *context)
{
	return fi_rx_context(alias_target(sep), index, attr, rx_ep, context);
}

static ssize_t shim_alias_rx_size_left(struct fid_ep *ep)
{
	struct fid_ep *t = alias_target(ep);

	return t->ops->rx_size_left(t);
}

static ssize_t shim_alias_tx_size_left(struct fid_ep *ep)
{
	struct fid_ep *t = alias_target(ep);

	return t->ops->tx_size_left(t);
}

static const struct fi_ops_ep shim_alias_ops = {
	.size = sizeof(struct fi_ops_ep),
	.cancel = shim_alias_cancel,
	.getopt = shim_alias_getopt,
	.setopt = shim_alias_setopt,
	.tx_ctx = shim_alias_tx_ctx,
	.rx_ctx = shim_alias_rx_ctx,
	.rx_size_left = shim_alias_rx_size_left,
	.tx_size_left = shim_alias_tx_size_left,
};

/* ---- struct fi_ops_cm: the endpoint's ---- */

static int shim_alias_setname(fid_t fid, void *addr, size_t addrlen)
{
	return fi_setname(&alias_target_fid(fid)->fid, addr, addrlen);
}

static int shim_alias_getname(fid_t fid, void *addr, size_t *addrlen)
{
	return fi_getname(&alias_target_fid(fid)->fid, addr, addrlen);
}

static int shim_alias_getpeer(struct fid_ep *ep, void *addr, size_t *addrlen)
{
	return fi_getpeer(alias_target(ep), addr, addrlen);
}

static int shim_alias_connect(struct fid_ep *ep, const void *addr,
			      const void *param, size_t paramlen)
{
	return fi_connect(alias_target(ep), addr, param, paramlen);
}

static int shim_alias_accept(struct fid_ep *ep, const void *param,
			     size_t paramlen)
{
	return fi_accept(alias_target(ep), param, paramlen);
}

static int shim_alias_shutdown(struct fid_ep *ep, uint64_t flags)
{
	return fi_shutdown(alias_target(ep), flags);
}

static int shim_alias_join(struct fid_ep *ep, const void *addr,
			   uint64_t flags, struct fid_mc **mc, void *context)
{
	return fi_join(alias_target(ep), addr, flags, mc, context);
}

static const struct fi_ops_cm shim_alias_cm_ops = {
	.size = sizeof(struct fi_ops_cm),
	.setname = shim_alias_setname,
	.getname = shim_alias_getname,
	.getpeer = shim_alias_getpeer,
	.connect = shim_alias_connect,
	.listen = shim_no_listen,
	.accept = shim_alias_accept,
	.reject = shim_no_reject,
	.shutdown = shim_alias_shutdown,
	.join = shim_alias_join,
};

/**
 * shim_ep_alias_open() - fi_control(FI_ALIAS): fi_ep_alias()
 * @ep: the endpoint
 * @from: the alias the call came through (its flags are inherited), or
 *	NULL for the endpoint itself
 * @arg: struct fi_alias: @fid out, @flags exactly one of FI_TRANSMIT and
 *	FI_RECV with that direction's operation flags OR-ed in
 *
 * The alias starts with the flags of @from (or @ep); @arg->flags then
 * replace one direction's, as FI_SETOPSFLAG would.
 *
 * Return: 0; -FI_EINVAL without @arg or its @fid, or for flags naming no
 * direction or both; -FI_ENOMEM.
 */
int shim_ep_alias_open(struct shim_ep *ep, const struct shim_ep_alias *from,
		       struct fi_alias *arg)
{
	struct shim_ep_alias *alias;
	uint64_t dir;

	if (!arg || !arg->fid)
		return -FI_EINVAL;
	dir = arg->flags & (FI_TRANSMIT | FI_RECV);
	if (dir != FI_TRANSMIT && dir != FI_RECV)
		return -FI_EINVAL;
	alias = calloc(1, sizeof(*alias));
	if (!alias)
		return -FI_ENOMEM;
	alias->ep = ep;
	if (from) {
		alias->tx_op_flags = shim_read_once(&from->tx_op_flags);
		alias->rx_op_flags = shim_read_once(&from->rx_op_flags);
	} else {
		alias->tx_op_flags = shim_read_once(&ep->tx_op_flags);
		alias->rx_op_flags = shim_read_once(&ep->rx_op_flags);
	}
	(void)shim_opsflag_set(arg->flags, &alias->tx_op_flags,
			       &alias->rx_op_flags);

	alias->ep_fid = ep->ep_fid;	/* the data transfer tables */
	alias->ep_fid.fid.fclass = FI_CLASS_EP;
	alias->ep_fid.fid.context = ep->ep_fid.fid.context;
	alias->ep_fid.fid.ops = (struct fi_ops *)&shim_ep_alias_fi_ops;
	alias->ep_fid.ops = (struct fi_ops_ep *)&shim_alias_ops;
	alias->ep_fid.cm = (struct fi_ops_cm *)&shim_alias_cm_ops;
	__atomic_add_fetch(&ep->alias_cnt, 1, __ATOMIC_ACQ_REL);
	*arg->fid = &alias->ep_fid.fid;
	return 0;
}
