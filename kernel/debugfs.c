// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * debugfs: /sys/kernel/debug/kfab/ (layout in Documentation/sysfs-debugfs.rst).
 *
 * "contexts" lists every open file of /dev/kfab with its opener and its
 * objects, with the state of each CQ and counter (and, in a test build,
 * its fault points that are armed or fired); "avs" every address
 * vector of the node with its entries.  debugfs is for root and for
 * debugging: nothing here is ABI.
 */
#include <linux/debugfs.h>
#include <linux/seq_file.h>

#include "kfab.h"
#include "net.h"

struct dentry *kfab_debugfs_root;

static void kfab_debugfs_show_ctx(struct seq_file *s, struct kfab_ctx *ctx)
{
	struct kfab_object *obj;
	unsigned long index;

	seq_printf(s, "context %u pid %d uid %u comm %s\n", ctx->id, ctx->tgid,
		   from_kuid(&init_user_ns, ctx->uid), ctx->comm);

	xa_lock(&ctx->objects);
	xa_for_each(&ctx->objects, index, obj) {
		seq_printf(s, "\t%s %u users %u",
			   kfab_object_type_name(obj->type), obj->id,
			   refcount_read(&obj->users));
		kfab_object_show(s, obj);
		seq_putc(s, '\n');
	}
	xa_unlock(&ctx->objects);
	kfab_pin_cache_show(s, &ctx->pin_cache);
	kfab_fault_show(s, ctx);
}

static int kfab_debugfs_contexts_show(struct seq_file *s, void *unused)
{
	struct kfab_ctx *ctx;

	mutex_lock(&kfab_ctx_lock);
	list_for_each_entry(ctx, &kfab_ctx_list, node)
		kfab_debugfs_show_ctx(s, ctx);
	mutex_unlock(&kfab_ctx_lock);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(kfab_debugfs_contexts);

static int kfab_debugfs_avs_show(struct seq_file *s, void *unused)
{
	kfab_av_debugfs_show(s);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(kfab_debugfs_avs);

static int kfab_debugfs_net_show(struct seq_file *s, void *unused)
{
	kfab_node_debugfs_show(s);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(kfab_debugfs_net);

static int kfab_debugfs_share_show(struct seq_file *s, void *unused)
{
	kfab_share_debugfs_show(s);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(kfab_debugfs_share);

void kfab_debugfs_init(void)
{
	/* debugfs failures are not fatal: the module works without it. */
	kfab_debugfs_root = debugfs_create_dir("kfab", NULL);
	debugfs_create_file("contexts", 0400, kfab_debugfs_root, NULL,
			    &kfab_debugfs_contexts_fops);
	debugfs_create_file("avs", 0400, kfab_debugfs_root, NULL,
			    &kfab_debugfs_avs_fops);
	debugfs_create_file("net", 0400, kfab_debugfs_root, NULL,
			    &kfab_debugfs_net_fops);
	debugfs_create_file("share", 0400, kfab_debugfs_root, NULL,
			    &kfab_debugfs_share_fops);
}

void kfab_debugfs_exit(void)
{
	debugfs_remove_recursive(kfab_debugfs_root);
}
