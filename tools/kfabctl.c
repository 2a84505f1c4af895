// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * kfabctl: kfab's administration tool.
 *
 *   kfabctl [-j] [-p] [-d] OBJECT show [FILTER VALUE]...
 *                       contexts, objects, AVs and peers over generic
 *                       netlink, as their reader may see them
 *                       (kfabctl_nl.c; OBJECT: ctx domain av cq cntr ep
 *                       srx obj peer listen allow engine stat)
 *   kfabctl monitor     events: contexts and named AVs coming and going
 *   kfabctl info        the module's ABI version, features and limits
 *   kfabctl av create NAME [--mode MODE] [--owner UID[:GID]] [--count N]
 *                       [--type table|map]
 *                       a persistent named AV, e.g. for a group of
 *                       containers (root: CAP_SYS_ADMIN, CAP_CHOWN)
 *   kfabctl av rm NAME  remove a name (its owner or root)
 *   kfabctl av del NAME the same over netlink (CAP_NET_ADMIN)
 *   kfabctl net listen add|del ADDR [PORT]
 *                       open (close) a listener in this network
 *                       namespace, over netlink: it becomes a node others
 *                       reach (CAP_NET_ADMIN over the namespace)
 *   kfabctl net allow add|del NET[/LEN]
 *                       the allow-list of peer networks, over netlink
 *   kfabctl net engine add NET[/LEN] auto|tcp|rdma, net engine del NET[/LEN]
 *                       the engine this namespace calls a network's nodes
 *                       with, over netlink (net engine show lists them)
 *   kfabctl net listen|unlisten ADDR[:PORT]
 *   kfabctl net allow|disallow NET[/LEN], net allow clear
 *                       the same by the ioctls (and the only way to clear)
 *   kfabctl net show    listeners, allowed networks and peers of this
 *                       network namespace, over netlink (kfabctl_nl.c;
 *                       the last two for its admin)
 *   kfabctl fault [--ctx ID | --kapi NAME] POINT [NTH]
 *                       a module built with CONFIG_KFAB_TEST only: arm a
 *                       fault point (KFAB_IOC_TEST_FAULT) of a context, or
 *                       with no NTH only report it; the shell selftests'
 *                       way to the module's fault injection
 */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <linux/kfab.h>

#include "kfabctl.h"

#define KFAB_DEV_PATH "/dev/" KFAB_DEVICE_NAME

static int open_dev(void)
{
	const char *path = getenv("KFAB_DEV") ? getenv("KFAB_DEV") : KFAB_DEV_PATH;
	int fd = open(path, O_RDWR | O_CLOEXEC);

	if (fd < 0)
		fprintf(stderr, "kfabctl: %s: %s%s\n", path, strerror(errno),
			errno == ENOENT ? " (is kfab.ko loaded? modprobe kfab)" : "");
	return fd;
}

/* KFAB_IOC_QUERY's feature bits, as `kfabctl info` names them. */
static const struct {
	uint32_t bit;
	const char *name;
} features[] = {
	{ KFAB_FEATURE_TEST, "test (CONFIG_KFAB_TEST: not for production)" },
	{ KFAB_FEATURE_RING, "ring (KFAB_IOC_RING)" },
	{ KFAB_FEATURE_SQ_POLL, "sq-poll (KFAB_IOC_SQ_POLL)" },
};

static int cmd_info(void)
{
	struct kfab_query q = { .size = sizeof(q) };
	int fd = open_dev();
	unsigned int i, n;

	if (fd < 0)
		return 1;
	if (ioctl(fd, KFAB_IOC_QUERY, &q)) {
		fprintf(stderr, "kfabctl: KFAB_IOC_QUERY: %s\n", strerror(errno));
		close(fd);
		return 1;
	}
	close(fd);

	printf("device:          %s\n", KFAB_DEV_PATH);
	printf("module version:  %u.%u.%u\n", q.module_version >> 16,
	       (q.module_version >> 8) & 0xff, q.module_version & 0xff);
	printf("abi version:     %u (this tool: %u)\n", q.abi_version,
	       KFAB_ABI_VERSION);
	/* "test" first: scripts look for it at the start of the line. */
	printf("features:        ");
	for (i = 0, n = 0; i < sizeof(features) / sizeof(features[0]); i++) {
		if (q.features & features[i].bit)
			printf("%s%s", n++ ? ", " : "", features[i].name);
	}
	printf("%s\n", n ? "" : "-");
	printf("max objects:     %u per open file\n", q.max_objects);
	printf("max ioctl size:  %u bytes\n", q.max_ioctl_size);
	return q.abi_version == KFAB_ABI_VERSION ? 0 : 1;
}

/* A whole number that fits @max, in @base (0: C's prefixes). */
int kfabctl_parse_uint(const char *s, int base, unsigned long max,
		       unsigned long *val)
{
	char *end;

	errno = 0;
	*val = strtoul(s, &end, base);
	return !*s || *end || errno || *val > max || *s == '-' ? -1 : 0;
}

static int av_error(const char *what, const char *name, int err)
{
	const char *hint = "";

	switch (err) {
	case EACCES:
		hint = " (the AV's owner and mode refuse it)";
		break;
	case EPERM:
		hint = " (needs root, or the AV's owner)";
		break;
	case EEXIST:
		hint = " (remove it first: kfabctl av rm)";
		break;
	case EDQUOT:
		hint = " (the owner's limit: module parameters av_max_named_per_user, av_max_entries_per_user)";
		break;
	case EINVAL:
		hint = " (names: 1-63 of [A-Za-z0-9._-], not starting with '.')";
		break;
	}
	fprintf(stderr, "kfabctl: %s %s: %s%s\n", what, name, strerror(err),
		hint);
	return 1;
}

static int cmd_av_create(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "mode", required_argument, NULL, 'm' },
		{ "owner", required_argument, NULL, 'o' },
		{ "count", required_argument, NULL, 'c' },
		{ "type", required_argument, NULL, 't' },
		{ NULL, 0, NULL, 0 },
	};
	struct kfab_av_open o = {
		.size = sizeof(o),
		.flags = KFAB_AV_OPEN_EXCL | KFAB_AV_OPEN_PERSIST,
		.type = KFAB_AV_TYPE_TABLE,
		.mode = 0600,
	};
	struct kfab_domain_alloc d = { .size = sizeof(d) };
	unsigned long val;
	char *gid;
	int c, fd;

	optind = 1;
	while ((c = getopt_long(argc, argv, "m:o:c:t:", opts, NULL)) != -1) {
		switch (c) {
		case 'm':
			if (kfabctl_parse_uint(optarg, 8, 0777, &val))
				goto bad;
			o.mode = val;
			break;
		case 'o':
			gid = strchr(optarg, ':');
			if (gid)
				*gid++ = '\0';
			if (kfabctl_parse_uint(optarg, 10, UINT32_MAX - 1, &val))
				goto bad;
			o.uid = val;
			o.gid = val;
			if (gid && kfabctl_parse_uint(gid, 10, UINT32_MAX - 1, &val))
				goto bad;
			if (gid)
				o.gid = val;
			o.flags |= KFAB_AV_OPEN_SET_OWNER;
			break;
		case 'c':
			if (kfabctl_parse_uint(optarg, 10, UINT32_MAX, &val))
				goto bad;
			o.count = val;
			break;
		case 't':
			if (!strcmp(optarg, "table"))
				o.type = KFAB_AV_TYPE_TABLE;
			else if (!strcmp(optarg, "map"))
				o.type = KFAB_AV_TYPE_MAP;
			else
				goto bad;
			break;
		default:
			return 2;
		}
	}
	if (optind != argc - 1)
		goto bad;
	o.name = (uintptr_t)argv[optind];

	fd = open_dev();
	if (fd < 0)
		return 1;
	if (ioctl(fd, KFAB_IOC_DOMAIN_ALLOC, &d)) {
		fprintf(stderr, "kfabctl: KFAB_IOC_DOMAIN_ALLOC: %s\n",
			strerror(errno));
		close(fd);
		return 1;
	}
	o.domain_id = d.out_domain_id;
	if (ioctl(fd, KFAB_IOC_AV_OPEN, &o)) {
		c = errno;
		close(fd);
		return av_error("create", argv[optind], c);
	}
	/* The name persists: closing our handle leaves the AV. */
	close(fd);
	printf("%s: %s, %u entries, mode %04o\n", argv[optind],
	       o.out_type == KFAB_AV_TYPE_MAP ? "map" : "table", o.out_count,
	       o.mode);
	return 0;
bad:
	fprintf(stderr, "usage: kfabctl av create NAME [--mode OCTAL] [--owner UID[:GID]] [--count N] [--type table|map]\n");
	return 2;
}

static int cmd_av_rm(const char *name)
{
	struct kfab_av_unlink u = { .size = sizeof(u), .name = (uintptr_t)name };
	int fd = open_dev(), err;

	if (fd < 0)
		return 1;
	if (ioctl(fd, KFAB_IOC_AV_UNLINK, &u)) {
		err = errno;
		close(fd);
		return av_error("rm", name, err);
	}
	close(fd);
	return 0;
}

static int cmd_av(int argc, char **argv)
{
	if (argc >= 2 && !strcmp(argv[1], "create"))
		return cmd_av_create(argc - 1, argv + 1);
	if (argc == 3 && !strcmp(argv[1], "rm"))
		return cmd_av_rm(argv[2]);
	fprintf(stderr, "usage: kfabctl av create|rm|del|show|list ...\n");
	return 2;
}

/* The fault points by name, as the module's table (kernel/test.c) has them. */
static const char * const fault_names[KFAB_FAULT_POINT_MAX] = {
	[KFAB_FAULT_ALLOC] = "alloc",
	[KFAB_FAULT_COPY_OUT] = "copy_out",
	[KFAB_FAULT_LOSE] = "lose",
	[KFAB_FAULT_NOREPLY] = "noreply",
	[KFAB_FAULT_SLOW_PARK] = "slow_park",
};

static int cmd_fault(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "ctx", required_argument, NULL, 'c' },
		{ "kapi", required_argument, NULL, 'k' },
		{ NULL, 0, NULL, 0 },
	};
	struct kfab_test_fault f = { .size = sizeof(f),
				     .point = KFAB_FAULT_POINT_MAX };
	unsigned long val;
	int fd, opt, i;

	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (opt) {
		case 'c':
			if (kfabctl_parse_uint(optarg, 0, UINT32_MAX, &val) || !val)
				goto usage;
			f.ctx_id = val;
			break;
		case 'k':
			f.ctx_id = kfabctl_nl_kernel_ctx(optarg);
			if (!f.ctx_id)
				return 1;
			break;
		default:
			goto usage;
		}
	}
	if (optind >= argc || argc - optind > 2)
		goto usage;
	for (i = 0; i < KFAB_FAULT_POINT_MAX; i++)
		if (!strcmp(argv[optind], fault_names[i]))
			f.point = i;
	if (f.point == KFAB_FAULT_POINT_MAX)
		goto usage;
	if (argc - optind == 1)
		f.flags = KFAB_TEST_FAULT_PEEK;
	else if (kfabctl_parse_uint(argv[optind + 1], 10, UINT32_MAX, &val))
		goto usage;
	else
		f.nth = val;

	fd = open_dev();
	if (fd < 0)
		return 1;
	if (ioctl(fd, KFAB_IOC_TEST_FAULT, &f)) {
		fprintf(stderr, "kfabctl: KFAB_IOC_TEST_FAULT: %s%s\n",
			strerror(errno),
			errno == ENOTTY ? " (kfab.ko without CONFIG_KFAB_TEST)" :
			errno == EPERM ? " (another context: needs root)" : "");
		close(fd);
		return 1;
	}
	close(fd);
	/* What was armed before (remaining 0: it fired, or none was). */
	printf("context %u %s remaining %u fired %u\n", f.out_ctx_id,
	       fault_names[f.point], f.out_remaining, f.out_fired);
	return 0;

usage:
	fprintf(stderr, "usage: kfabctl fault [--ctx ID | --kapi NAME] alloc|copy_out|lose|noreply|slow_park [NTH]\n");
	return 2;
}

/* "A.B.C.D[:PORT]", "[IPV6][:PORT]" or a bare IPv6 address. */
int kfabctl_parse_node(const char *arg, struct kfab_addr *a)
{
	char host[64], *port = NULL, *end;
	unsigned long p = 0;
	struct in_addr in4;

	if (strlen(arg) >= sizeof(host))
		return -1;
	strcpy(host, arg);
	if (host[0] == '[') {
		char *close = strchr(host, ']');

		if (!close || (close[1] && close[1] != ':'))
			return -1;
		*close = '\0';
		if (close[1])
			port = close + 2;
		memmove(host, host + 1, strlen(host));
	} else if (strchr(host, ':') == strrchr(host, ':') &&
		   strchr(host, ':')) {
		port = strchr(host, ':');
		*port++ = '\0';
	}
	if (port) {
		p = strtoul(port, &end, 10);
		if (!*port || *end || !p || p > 65535)
			return -1;
	}
	*a = (struct kfab_addr){ .family = KFAB_ADDR_INET, .port = htons(p) };
	if (inet_pton(AF_INET, host, &in4) == 1) {
		a->node[10] = a->node[11] = 0xff;
		memcpy(&a->node[12], &in4, 4);
		return 0;
	}
	return inet_pton(AF_INET6, host, a->node) == 1 ? 0 : -1;
}

static int cmd_net_listen(const char *arg, bool remove)
{
	struct kfab_net_listen l = {
		.size = sizeof(l),
		.flags = remove ? KFAB_NET_LISTEN_REMOVE : 0,
	};
	int fd;

	if (kfabctl_parse_node(arg, &l.addr)) {
		fprintf(stderr, "kfabctl: net: not an address: %s\n", arg);
		return 2;
	}
	fd = open_dev();
	if (fd < 0)
		return 1;
	if (ioctl(fd, KFAB_IOC_NET_LISTEN, &l)) {
		fprintf(stderr, "kfabctl: net %s %s: %s\n",
			remove ? "unlisten" : "listen", arg, strerror(errno));
		close(fd);
		return 1;
	}
	close(fd);
	return 0;
}

/* "A.B.C.D/N" or "IPV6/N" (N may be left out: one node). */
int kfabctl_parse_net(const char *arg, struct kfab_net_allow *c)
{
	char host[64], *slash, *end;
	unsigned long len = 128, max = 128;
	struct in_addr in4;

	if (strlen(arg) >= sizeof(host))
		return -1;
	strcpy(host, arg);
	slash = strchr(host, '/');
	if (slash)
		*slash++ = '\0';
	if (inet_pton(AF_INET, host, &in4) == 1) {
		c->node[10] = c->node[11] = 0xff;
		memcpy(&c->node[12], &in4, 4);
		max = 32;
	} else if (inet_pton(AF_INET6, host, c->node) != 1) {
		return -1;
	}
	if (slash) {
		len = strtoul(slash, &end, 10);
		if (!*slash || *end || len > max)
			return -1;
	} else {
		len = max;
	}
	c->prefix_len = (uint8_t)(max == 32 ? 96 + len : len);
	return 0;
}

static int cmd_net_allow(const char *arg, uint32_t flags)
{
	struct kfab_net_allow c = { .size = sizeof(c), .flags = flags };
	const char *what = flags & KFAB_NET_ALLOW_REMOVE ? "disallow" : "allow";
	int fd;

	if (arg && kfabctl_parse_net(arg, &c)) {
		fprintf(stderr, "kfabctl: net %s: not a network: %s\n", what, arg);
		return 2;
	}
	fd = open_dev();
	if (fd < 0)
		return 1;
	if (ioctl(fd, KFAB_IOC_NET_ALLOW, &c)) {
		fprintf(stderr, "kfabctl: net %s %s: %s%s\n", what,
			arg ? arg : "clear", strerror(errno),
			errno == EINVAL ? " (bits set past the prefix?)" : "");
		close(fd);
		return 1;
	}
	close(fd);
	return 0;
}

static int cmd_net(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "allow") && !strcmp(argv[2], "clear"))
		return cmd_net_allow(NULL, KFAB_NET_ALLOW_CLEAR);
	if (argc == 3 && !strcmp(argv[1], "allow"))
		return cmd_net_allow(argv[2], 0);
	if (argc == 3 && !strcmp(argv[1], "disallow"))
		return cmd_net_allow(argv[2], KFAB_NET_ALLOW_REMOVE);
	if (argc == 3 && !strcmp(argv[1], "listen"))
		return cmd_net_listen(argv[2], false);
	if (argc == 3 && !strcmp(argv[1], "unlisten"))
		return cmd_net_listen(argv[2], true);
	fprintf(stderr, "usage: kfabctl net listen add|del ADDR [PORT] | net allow add|del NET[/LEN] | net engine add NET[/LEN] auto|tcp|rdma | net engine del NET[/LEN] | net engine show | net listen|unlisten ADDR[:PORT] | net allow|disallow NET[/LEN] | net allow clear | net show\n");
	return 2;
}

static void usage(FILE *out)
{
	fprintf(out,
		"usage: kfabctl [-j] [-p] [-d] COMMAND\n"
		"  OBJECT show [pid N] [uid N] [name NAME] [type TYPE] [ctx ID]\n"
		"             OBJECT: ctx domain av cq cntr ep srx obj peer listen allow engine\n"
		"             stat; what the caller may see (its uid's; a namespace's\n"
		"             admin: the namespace's; root: all); -j JSON, -p pretty,\n"
		"             -d details\n"
		"  monitor    print events as they happen (CAP_NET_ADMIN)\n"
		"  info       ABI version, features and limits of the loaded module\n"
		"  contexts   the same as ctx show\n"
		"  av create NAME [--mode OCTAL] [--owner UID[:GID]] [--count N] [--type table|map]\n"
		"             a named AV that stays until removed (root)\n"
		"  av rm NAME remove a named AV's name (its owner, or root)\n"
		"  av del NAME  the same over netlink (CAP_NET_ADMIN)\n"
		"  av list    the same as av show\n"
		"  net listen add ADDR [PORT]  make this network namespace a node on\n"
		"             ADDR (port 7471 by default; CAP_NET_ADMIN over it)\n"
		"  net listen del ADDR [PORT]  close that listener\n"
		"  net allow add NET[/LEN]  only nodes on the listed networks may talk to\n"
		"             this namespace's (none listed: any; CAP_NET_ADMIN over it)\n"
		"  net allow del NET[/LEN]  take a network off\n"
		"  net engine add NET[/LEN] auto|tcp|rdma\n"
		"                           call the nodes of a network by this engine\n"
		"  net engine del NET[/LEN] take the rule off (auto again)\n"
		"  net engine show          the engine rules\n"
		"             (the four over netlink; the older spellings by ioctl:)\n"
		"  net listen|unlisten ADDR[:PORT], net allow|disallow NET[/LEN]\n"
		"  net allow clear          take every network off\n"
		"  net show   listeners, allowed networks, engine rules and peers of\n"
		"             this network namespace (all but listeners: its admin)\n"
		"  listen show, allow show  each of those alone\n"
		"  fault [--ctx ID | --kapi NAME] POINT [NTH]\n"
		"             test builds: the NTH pass through POINT fails (0 disarms);\n"
		"             without NTH, report; another context than this file's: root\n");
}

/* Leading -j, -p, -d (or -jpd): they apply to the netlink commands. */
static int parse_opts(struct kfabctl_opts *o, int argc, char **argv)
{
	int i;
	char *c;

	for (i = 1; i < argc && argv[i][0] == '-' && argv[i][1] &&
		    strspn(argv[i] + 1, "jpd") == strlen(argv[i] + 1); i++)
		for (c = argv[i] + 1; *c; c++) {
			o->json |= *c == 'j';
			o->pretty |= *c == 'p';
			o->details |= *c == 'd';
		}
	return i - 1;
}

int main(int argc, char **argv)
{
	struct kfabctl_opts o = { 0 };
	bool handled;
	int rc, skip;

	skip = parse_opts(&o, argc, argv);
	argc -= skip;
	argv += skip;
	if (argc >= 2) {
		rc = kfabctl_nl_main(&o, argc - 1, argv + 1, &handled);
		if (handled)
			return rc;
	}
	if (argc >= 2 && !strcmp(argv[1], "av"))
		return cmd_av(argc - 1, argv + 1);
	if (argc >= 2 && !strcmp(argv[1], "net"))
		return cmd_net(argc - 1, argv + 1);
	if (argc >= 2 && !strcmp(argv[1], "fault"))
		return cmd_fault(argc - 1, argv + 1);
	if (argc != 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "info"))
		return cmd_info();
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		usage(stdout);
		return 0;
	}
	usage(stderr);
	return 2;
}
