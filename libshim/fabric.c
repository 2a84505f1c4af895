// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libshim: fid_fabric.  A fabric is one open file of the kfab device: the
 * kernel keeps every object the fabric's domains create in that file's
 * context, and closing the file destroys whatever is left.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* The largest struct kfab_abi_info a caller may pass, as the kernel's page. */
#define SHIM_ABI_INFO_MAX_SIZE	4096

/**
 * shim_fabric_dev_open() - open the device and check that it speaks our ABI
 * @fd: out: the open device
 * @abi: out: its answer to KFAB_IOC_QUERY
 *
 * A failing open() is not logged: the caller knows whether a missing
 * device is news.  Anything after the open is.
 *
 * Return: 0, -errno, or -FI_ENOSYS when the module's ABI is not this
 * library's.
 */
int shim_fabric_dev_open(int *fd, struct kfab_query *abi)
{
	const char *path = shim_dev_path();
	int ret;

	ret = shim_dev_open(path, fd);
	if (ret)
		return ret;

	ret = shim_dev_query(*fd, abi);
	if (ret) {
		SHIM_WARN(FABRIC, "%s: KFAB_IOC_QUERY: %s\n", path,
			  fi_strerror(-ret));
		goto err_close;
	}
	if (abi->abi_version != KFAB_ABI_VERSION) {
		SHIM_WARN(FABRIC, "%s speaks kfab ABI %u, this library ABI %u\n",
			  path, abi->abi_version, KFAB_ABI_VERSION);
		ret = -FI_ENOSYS;
		goto err_close;
	}
	return 0;

err_close:
	shim_dev_close(*fd);
	return ret;
}

static int shim_fabric_close(struct fid *fid)
{
	struct shim_fabric *fab =
		container_of(fid, struct shim_fabric, fabric_fid.fid);
	unsigned int domains, eqs;

	pthread_mutex_lock(&fab->lock);
	domains = fab->domain_cnt;
	eqs = fab->eq_cnt;
	pthread_mutex_unlock(&fab->lock);
	if (domains || eqs) {
		SHIM_WARN(FABRIC, "fabric still has %u open domain(s), %u open EQ(s)\n",
			  domains, eqs);
		return -FI_EBUSY;
	}

	shim_sq_poll_stop(fab);
	shim_dev_close(fab->fd);
	pthread_mutex_destroy(&fab->lock);
	free(fab);
	return 0;
}

/* fi_get_val(KFAB_FABRIC_ABI_INFO): see kfab_query() in <kfab/kfab.h>. */
static int shim_fabric_get_abi_info(struct shim_fabric *fab,
				    struct kfab_abi_info *out)
{
	struct kfab_abi_info info = {
		.abi_version = fab->abi.abi_version,
		.features = fab->abi.features,
		.max_objects = fab->abi.max_objects,
		.max_ioctl_size = fab->abi.max_ioctl_size,
		.module_version = fab->abi.module_version,
	};
	size_t size;

	if (!out)
		return -FI_EINVAL;
	size = out->size;
	if (size < offsetof(struct kfab_abi_info, abi_version) +
		   sizeof(out->abi_version))
		return -FI_EINVAL;
	if (size > SHIM_ABI_INFO_MAX_SIZE)
		return -FI_E2BIG;

	info.size = size;
	if (size > sizeof(info)) {
		memset((char *)out + sizeof(info), 0, size - sizeof(info));
		size = sizeof(info);
	}
	memcpy(out, &info, size);
	return 0;
}

static int shim_fabric_control(struct fid *fid, int command, void *arg)
{
	struct shim_fabric *fab =
		container_of(fid, struct shim_fabric, fabric_fid.fid);
	struct fi_fid_var *var = arg;

	if (command != FI_GET_VAL)
		return -FI_ENOSYS;
	if (!var)
		return -FI_EINVAL;
	if (var->name != KFAB_FABRIC_ABI_INFO)
		return -FI_ENOSYS;
	return shim_fabric_get_abi_info(fab, var->val);
}

static const struct fi_ops shim_fabric_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = shim_fabric_close,
	.bind = shim_no_bind,
	.control = shim_fabric_control,
	.ops_open = shim_no_ops_open,
	.tostr = shim_no_tostr,
	.ops_set = shim_no_ops_set,
};

/*
 * fi_trywait(): every object with a wait object answers for itself through
 * its control op (SHIM_CTRL_TRYWAIT), so this file needs to know none of
 * them.  The first object that is not ready decides: -FI_EAGAIN.
 */
static int shim_fabric_trywait(struct fid_fabric *fabric, struct fid **fids,
			       int count)
{
	int i, ret;

	(void)fabric;
	if (count < 0 || (count && !fids))
		return -FI_EINVAL;
	for (i = 0; i < count; i++) {
		if (!fids[i] || !fids[i]->ops || !fids[i]->ops->control)
			return -FI_EINVAL;
		ret = fids[i]->ops->control(fids[i], SHIM_CTRL_TRYWAIT, NULL);
		/* An object without a wait object cannot be waited on. */
		if (ret == -FI_ENOSYS)
			return -FI_EINVAL;
		if (ret)
			return ret;
	}
	/* The program sleeps outside kfab now: requests must not wait. */
	shim_lazy_trywait_done();
	return 0;
}

static const struct fi_ops_fabric shim_fabric_ops = {
	.size = sizeof(struct fi_ops_fabric),
	.domain = shim_domain_open,
	.passive_ep = shim_passive_ep,
	.eq_open = shim_eq_open,
	.wait_open = shim_wait_open,
	.trywait = shim_fabric_trywait,
	.domain2 = shim_domain_open2,
};

bool shim_is_fabric(const struct fid_fabric *fabric)
{
	return fabric->fid.fclass == FI_CLASS_FABRIC &&
	       fabric->fid.ops == &shim_fabric_fi_ops;
}

/**
 * shim_fabric_open() - struct fi_provider.fabric: fi_fabric() for kfab
 * @attr: a fabric_attr from kfab's fi_info; only the name is checked
 * @fabric: out: the new fabric
 * @context: the application's context for the fid
 *
 * Return: 0; -FI_ENODATA for another fabric's name; -errno when the device
 * cannot be opened or queried; -FI_ENOSYS when it speaks another ABI.
 */
int shim_fabric_open(struct fi_fabric_attr *attr, struct fid_fabric **fabric,
		     void *context)
{
	struct shim_fabric *fab;
	int ret;

	if (!attr || !fabric)
		return -FI_EINVAL;
	if (!attr->name || strcmp(attr->name, SHIM_FABRIC_NAME)) {
		SHIM_INFO(FABRIC, "fabric \"%s\" is not kfab's\n",
			  attr->name ? attr->name : "(null)");
		return -FI_ENODATA;
	}

	fab = calloc(1, sizeof(*fab));
	if (!fab)
		return -FI_ENOMEM;

	ret = shim_fabric_dev_open(&fab->fd, &fab->abi);
	if (ret) {
		SHIM_WARN(FABRIC, "cannot open %s: %s\n", shim_dev_path(),
			  fi_strerror(-ret));
		goto err_free;
	}
	ret = -pthread_mutex_init(&fab->lock, NULL);
	if (ret)
		goto err_close;

	fab->fabric_fid.fid.fclass = FI_CLASS_FABRIC;
	fab->fabric_fid.fid.context = context;
	fab->fabric_fid.fid.ops = (struct fi_ops *)&shim_fabric_fi_ops;
	fab->fabric_fid.ops = (struct fi_ops_fabric *)&shim_fabric_ops;
	fab->fabric_fid.api_version = attr->api_version;
	*fabric = &fab->fabric_fid;

	SHIM_INFO(FABRIC, "%s: ABI %u, module %u.%u.%u, features 0x%x, max_objects %u\n",
		  shim_dev_path(), fab->abi.abi_version,
		  fab->abi.module_version >> 16,
		  (fab->abi.module_version >> 8) & 0xff,
		  fab->abi.module_version & 0xff, fab->abi.features,
		  fab->abi.max_objects);
	return 0;

err_close:
	shim_dev_close(fab->fd);
err_free:
	free(fab);
	return ret;
}
