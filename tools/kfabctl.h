/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* kfabctl: what its two halves (ioctl, netlink) share. */
#ifndef KFABCTL_H
#define KFABCTL_H

#include <stdbool.h>

/* The options before the command: -j JSON, -p pretty JSON, -d details. */
struct kfabctl_opts {
	bool json, pretty, details;
};

int kfabctl_parse_uint(const char *s, int base, unsigned long max,
		       unsigned long *val);
struct kfab_addr;
struct kfab_net_allow;
/* "A.B.C.D[:PORT]", "[IPV6][:PORT]", "IPV6"; "NET[/LEN]": 0 or -1 */
int kfabctl_parse_node(const char *arg, struct kfab_addr *a);
int kfabctl_parse_net(const char *arg, struct kfab_net_allow *c);
int kfabctl_nl_main(const struct kfabctl_opts *o, int argc, char **argv,
		    bool *handled);
unsigned int kfabctl_nl_kernel_ctx(const char *name);

#endif /* KFABCTL_H */
