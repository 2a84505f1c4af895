// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The module-wide limits that may change while kfab is loaded: their
 * ranges, and the one check that both ways of changing them go through, a
 * write to /sys/module/kfab/parameters/NAME (kfab_limit_param_ops) and
 * netlink's KFAB_NL_CMD_LIMIT_SET (netlink.c).  A value out of a limit's
 * range is -EINVAL either way, and changes nothing; so is a value given at
 * load time (modprobe kfab NAME=VALUE), which then fails the load.
 *
 * The values live with their users (av.c, peer.c), who read them with
 * READ_ONCE(): a change applies to what is checked or set up after it,
 * never to what already is.  Writers need no lock: each write is one
 * WRITE_ONCE() of a value already checked.
 */
#include <linux/kernel.h>
#include <linux/moduleparam.h>

#include "kfab.h"
#include "net.h"

const struct kfab_limit kfab_limits[] = {
	/* 0 would refuse every name: an AV's mode does that per AV. */
	{ "av_max_named_per_user", &kfab_av_max_named_per_user, 1, 1 << 20 },
	{ "av_max_entries_per_user", &kfab_av_max_entries_per_user,
	  1, 1 << 30 },
	/* Keepalive counts whole seconds; TCP's user timeout is an int. */
	{ "peer_timeout_ms", &kfab_peer_timeout_ms, 100, 3600 * 1000 },
};

const size_t kfab_nr_limits = ARRAY_SIZE(kfab_limits);

/**
 * kfab_limit_set() - change a limit, if @v is in its range
 * @l: one of kfab_limits
 * @v: the new value
 *
 * Return: 0, or -EINVAL (@v below @l->min or above @l->max: nothing
 * changes).
 */
int kfab_limit_set(const struct kfab_limit *l, u64 v)
{
	if (v < l->min || v > l->max)
		return -EINVAL;
	WRITE_ONCE(*l->value, (unsigned int)v);
	return 0;
}

/* The limit whose value is at @value, or NULL. */
static const struct kfab_limit *kfab_limit_of(const unsigned int *value)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(kfab_limits); i++)
		if (kfab_limits[i].value == value)
			return &kfab_limits[i];
	return NULL;
}

/*
 * A write of a limit's parameter (sysfs, or the command line of the
 * load): a decimal (or 0x hex, as for any uint parameter) number, in
 * range.  Anything else, a number too large for u64 included, is -EINVAL.
 */
static int kfab_limit_param_set(const char *val, const struct kernel_param *kp)
{
	const struct kfab_limit *l = kfab_limit_of(kp->arg);
	u64 v;

	if (WARN_ON_ONCE(!l))
		return -EINVAL;
	if (kstrtou64(val, 0, &v))
		return -EINVAL;
	return kfab_limit_set(l, v);
}

const struct kernel_param_ops kfab_limit_param_ops = {
	.set = kfab_limit_param_set,
	.get = param_get_uint,
};
