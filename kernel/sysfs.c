// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * sysfs attributes of the misc device, in /sys/class/misc/kfab/
 * (Documentation/sysfs-debugfs.rst lists them).
 */
#include <linux/device.h>
#include <linux/sysfs.h>

#include "kfab.h"

static ssize_t abi_version_show(struct device *dev,
				struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%u\n", KFAB_ABI_VERSION);
}
static DEVICE_ATTR_RO(abi_version);

static ssize_t contexts_show(struct device *dev, struct device_attribute *attr,
			     char *buf)
{
	return sysfs_emit(buf, "%d\n", atomic_read(&kfab_nr_ctx));
}
static DEVICE_ATTR_RO(contexts);

static ssize_t avs_show(struct device *dev, struct device_attribute *attr,
			char *buf)
{
	return sysfs_emit(buf, "%u\n", kfab_av_count(false));
}
static DEVICE_ATTR_RO(avs);

static ssize_t named_avs_show(struct device *dev,
			      struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%u\n", kfab_av_count(true));
}
static DEVICE_ATTR_RO(named_avs);

static struct attribute *kfab_sysfs_attrs[] = {
	&dev_attr_abi_version.attr,
	&dev_attr_contexts.attr,
	&dev_attr_avs.attr,
	&dev_attr_named_avs.attr,
	NULL,
};

static const struct attribute_group kfab_sysfs_group = {
	.attrs = kfab_sysfs_attrs,
};

const struct attribute_group *kfab_sysfs_groups[] = {
	&kfab_sysfs_group,
	NULL,
};
