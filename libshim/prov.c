// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libshim: the provider itself - fi_prov_ini(), getinfo, cleanup.
 *
 * libfabric's core dlopen()s every *fi.so in FI_PROVIDER_PATH (by default
 * $libdir/libfabric) and calls fi_prov_ini(), the one symbol it looks up.
 * From then on the core calls kfab only through struct fi_provider and the
 * op tables of the objects kfab hands out.
 */
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "internal.h"

static char shim_dev[PATH_MAX] = SHIM_DEFAULT_DEV;
static unsigned int shim_av_mode = 0600;
static bool shim_lazy = true;
static unsigned int shim_sq_poll;

const char *shim_dev_path(void)
{
	return shim_dev;
}

unsigned int shim_av_create_mode(void)
{
	return shim_av_mode;
}

bool shim_lazy_doorbell(void)
{
	return shim_lazy;
}

unsigned int shim_sq_poll_us(void)
{
	return shim_sq_poll;
}

/* Does a list of provider names (";" or "," between them) name kfab? */
static bool shim_names_kfab(const char *list)
{
	size_t len = strlen(SHIM_PROV_NAME);
	const char *p;

	for (p = list; p && *p; p += strcspn(p, ";,"), p += !!*p)
		if (!strncasecmp(p, SHIM_PROV_NAME, len) &&
		    (!p[len] || p[len] == ';' || p[len] == ','))
			return true;
	return false;
}

/*
 * Whether the application asked for kfab by name: hints naming it
 * (fi_info -p kfab), or FI_PROVIDER listing it (not as an exclusion, "^").
 */
static bool shim_asked_for(const struct fi_info *hints)
{
	const char *env = getenv("FI_PROVIDER");

	if (hints && hints->fabric_attr &&
	    shim_names_kfab(hints->fabric_attr->prov_name))
		return true;
	return env && *env != '^' && shim_names_kfab(env);
}

/*
 * A device that cannot be opened, said with what to do at FI_LOG_WARN, or at
 * FI_LOG_INFO when nobody asked for kfab.  fi_info -e calls warn the default
 * level, but libfabric 1.17 logs nothing at all until FI_LOG_LEVEL is set:
 * then an application that asked for kfab by name gets the line on stderr
 * anyway, in libfabric's format, rather than a bare -FI_ENODATA.
 */
static void shim_dev_unusable(const struct fi_info *hints, int err)
{
	const char *path = shim_dev_path();
	const char *hint;

	switch (err) {
	case -ENOENT:
	case -ENODEV:
	case -ENXIO:
		hint = "the kfab module is not loaded: load it with `modprobe kfab` (packages: kfab-dkms; Documentation/install.rst), or name the device with FI_KFAB_DEV";
		break;
	case -EACCES:
	case -EPERM:
		hint = "this user may not open it: ask the administrator for access (with the optional udev rule, membership of group kfab; see fi_kfab(7))";
		break;
	case -ENOTTY:
		hint = "not a kfab device: check FI_KFAB_DEV";
		break;
	case -FI_ENOSYS:
		hint = "the module speaks another ABI version than this library: install a kfab.ko and libkfab of the same version";
		break;
	default:
		hint = "see fi_kfab(7), REQUIREMENTS";
		break;
	}
	if (!shim_asked_for(hints))
		SHIM_INFO(CORE, "%s unusable (%s): kfab offers nothing\n", path,
			  fi_strerror(-err));
	else if (fi_log_enabled(&shim_prov, FI_LOG_WARN, FI_LOG_CORE))
		SHIM_WARN(CORE, "%s: %s: %s\n", path, fi_strerror(-err), hint);
	else
		fprintf(stderr, "libfabric:%d:kfab: %s: %s: %s\n", (int)getpid(),
			path, fi_strerror(-err), hint);
}

/*
 * libfabric's core sets this (its OFI_CORE_PROV_ONLY) when a utility
 * provider (rxm, rxd) asks for endpoints to stack on.
 */
#define SHIM_CORE_PROV_ONLY	(1ULL << 59)

/* DGRAM's limits: its max_msg_size, no delivery completion. */
static bool shim_dgram_wanted(const struct fi_info *hints)
{
	if (hints && hints->ep_attr &&
	    hints->ep_attr->max_msg_size > SHIM_DGRAM_MAX_MSG_SIZE)
		return false;
	return !(hints && hints->tx_attr &&
		 (hints->tx_attr->op_flags & FI_DELIVERY_COMPLETE));
}

/*
 * The endpoint types of an answer, RDM first: the one the hints name, or
 * all.  MSG and DGRAM are not offered to rxm and rxd, which would only
 * stack an RDM endpoint on them where kfab has RDM of its own; MSG not
 * for caps a connection cannot have (directed receives, sources).
 */
static bool shim_type_wanted(const struct fi_info *hints, uint64_t flags,
			     enum fi_ep_type type)
{
	enum fi_ep_type want = hints && hints->ep_attr ? hints->ep_attr->type :
							 FI_EP_UNSPEC;

	if (want != FI_EP_UNSPEC && want != type)
		return false;
	if (type == FI_EP_RDM)
		return true;
	/* Buffered receives (bufrecv.c) are RDM endpoints' only. */
	if (hints && (hints->caps & FI_VARIABLE_MSG))
		return false;
	if (flags & SHIM_CORE_PROV_ONLY)
		return false;
	if (type == FI_EP_DGRAM)
		return shim_dgram_wanted(hints);
	if (hints && (hints->caps & (FI_DIRECTED_RECV | FI_SOURCE)))
		return false;
	return !(hints && hints->ep_attr &&
		 hints->ep_attr->rx_ctx_cnt == FI_SHARED_CONTEXT);
}

/*
 * fi_getinfo() reaches this for every caller of libfabric whose hints do not
 * exclude kfab, including the rxm/rxd utility providers probing for MSG and
 * DGRAM endpoints, so the hints are matched before the device is touched.
 * A missing device is the normal state of a machine without the module:
 * only an application that asked for kfab by name is warned.  Node and
 * service are looked at last (a host name may mean a name lookup): they
 * give src_addr (FI_SOURCE) or dest_addr (info.c, shim_info_addrs()).
 */
static int shim_getinfo(uint32_t version, const char *node,
			const char *service, uint64_t flags,
			const struct fi_info *hints, struct fi_info **info)
{
	static const enum fi_ep_type types[] = { FI_EP_RDM, FI_EP_MSG,
						 FI_EP_DGRAM };
	struct shim_info_addrs addrs;
	struct fi_info **tail;
	struct kfab_query abi;
	unsigned int i;
	int fd, ret;

	ret = shim_info_check(hints);
	if (ret)
		return ret;

	ret = shim_fabric_dev_open(&fd, &abi);
	if (ret) {
		shim_dev_unusable(hints, ret);
		return -FI_ENODATA;
	}
	shim_dev_close(fd);

	ret = shim_info_addrs(node, service, flags, hints, &addrs);
	if (ret)
		return ret;
	ret = -FI_ENODATA;
	*info = NULL;
	tail = info;
	for (i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		if (!shim_type_wanted(hints, flags, types[i]))
			continue;
		ret = shim_info_get(version, hints, abi.max_objects, types[i],
				    tail);
		if (!ret)
			ret = shim_info_set_addrs(*tail, &addrs);
		if (ret)
			break;
		tail = &(*tail)->next;
	}
	if (ret) {
		fi_freeinfo(*info);
		*info = NULL;
	}
	return ret;
}

static void shim_cleanup(void)
{
	/* Every resource belongs to an object, but the sweeper thread. */
	shim_lazy_cleanup();
}

struct fi_provider shim_prov = {
	.name = SHIM_PROV_NAME,
	.version = KFAB_PROV_VERSION,
	/*
	 * The libfabric API kfab is written against.  The core skips a
	 * provider whose fi_version is below what the application asks for,
	 * so this is also the newest API a caller may request from kfab.
	 */
	.fi_version = FI_VERSION(1, 17),
	.getinfo = shim_getinfo,
	.fabric = shim_fabric_open,
	.cleanup = shim_cleanup,
};

FI_EXT_INI
{
	char *dev = NULL;
	int lazy, poll;

	fi_param_define(&shim_prov, "dev", FI_PARAM_STRING,
			"Path of the kfab device (default: %s)",
			SHIM_DEFAULT_DEV);

	/*
	 * Read once, when libfabric loads kfab, like every libfabric
	 * parameter: a process sees one device for its whole life.
	 */
	if (!fi_param_get_str(&shim_prov, "dev", &dev) && dev && *dev) {
		if (strlen(dev) < sizeof(shim_dev))
			strcpy(shim_dev, dev);
		else
			SHIM_WARN(CORE, "FI_KFAB_DEV too long, using %s\n",
				  shim_dev);
	}
	SHIM_INFO(CORE, "device %s\n", shim_dev);

	fi_param_define(&shim_prov, "av_mode", FI_PARAM_STRING,
			"Permission bits, in octal, of the named AVs this process creates (default: 0600; see fi_kfab(7))");
	dev = NULL;
	if (!fi_param_get_str(&shim_prov, "av_mode", &dev) && dev && *dev) {
		char *end;
		unsigned long mode = strtoul(dev, &end, 8);

		if (*end || mode > 0777)
			SHIM_WARN(CORE, "FI_KFAB_AV_MODE \"%s\" is not an octal mode, using %04o\n",
				  dev, shim_av_mode);
		else
			shim_av_mode = mode;
	}

	fi_param_define(&shim_prov, "lazy_doorbell", FI_PARAM_INT,
			"Requests without FI_MORE wait in the ring for the next progress call, which rings once for all, or at most about twice this many microseconds (default: 10000; 0 rings the kernel at every request; see fi_kfab(7))");
	if (!fi_param_get_int(&shim_prov, "lazy_doorbell", &lazy)) {
		if (lazy < 0 || lazy > 1000000) {
			SHIM_WARN(CORE, "FI_KFAB_LAZY_DOORBELL %d is not 0..1000000, using 10000\n",
				  lazy);
		} else {
			shim_lazy = lazy != 0;
			if (lazy)
				shim_lazy_set_period((unsigned int)lazy);
		}
	}

	fi_param_define(&shim_prov, "sq_poll", FI_PARAM_INT,
			"A kernel poller takes each endpoint's requests as they are posted, so posting makes no system call; it spins this many microseconds after its last work, then parks (default: 0, no poller; see fi_kfab(7))");
	if (!fi_param_get_int(&shim_prov, "sq_poll", &poll)) {
		if (poll < 0 || poll > KFAB_SQ_POLL_MAX_IDLE_US)
			SHIM_WARN(CORE, "FI_KFAB_SQ_POLL %d is not 0..%d, no poller\n",
				  poll, KFAB_SQ_POLL_MAX_IDLE_US);
		else
			shim_sq_poll = (unsigned int)poll;
	}

	return &shim_prov;
}
