// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * kfab: the libfabric (OFI) object model in the kernel.
 *
 * This file holds the misc device /dev/kfab, the life of a file context and
 * the ioctl dispatcher.  The ABI rules the dispatcher enforces are written at
 * the top of uapi/linux/kfab.h.
 */
#include <linux/cgroup.h>
#include <linux/fs.h>
#include <linux/miscdevice.h>
#include <linux/module.h>
#include <linux/nospec.h>
#include <linux/nsproxy.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/user_namespace.h>

#include "kfab.h"
#include "net.h"

unsigned int kfab_max_objects = 4096;
module_param_named(max_objects, kfab_max_objects, uint, 0444);
MODULE_PARM_DESC(max_objects, "Most objects one open file of /dev/kfab may hold (default 4096)");

/* Protects kfab_ctx_list and kfab_next_ctx_id. */
DEFINE_MUTEX(kfab_ctx_lock);
LIST_HEAD(kfab_ctx_list);
atomic_t kfab_nr_ctx = ATOMIC_INIT(0);
static u32 kfab_next_ctx_id;

/* The opener's namespaces and cgroup; a kernel consumer's are the initial. */
static void kfab_ctx_set_opener(struct kfab_ctx *ctx, bool user)
{
	struct cgroup *cgrp;

	if (!user) {
		ctx->net = get_net(&init_net);
		ctx->user_ns = get_user_ns(&init_user_ns);
		return;
	}
	ctx->pid = get_pid(task_tgid(current));
	ctx->net = get_net(current->nsproxy->net_ns);
	ctx->user_ns = get_user_ns(current_user_ns());
	rcu_read_lock();
	cgrp = task_dfl_cgroup(current);
	ctx->cgroup_id = cgroup_id(cgrp);
	rcu_read_unlock();
}

/**
 * kfab_ctx_create() - a new context, listed for debugfs and netlink
 * @tgid: the owner's tgid (0 for a kernel consumer)
 * @uid: the owner
 * @comm: a name for debugfs
 *
 * A user context's opener (its namespaces, its cgroup) is the current task.
 * Return: the context or NULL (no memory).
 */
struct kfab_ctx *kfab_ctx_create(pid_t tgid, kuid_t uid, const char *comm)
{
	struct kfab_ctx *ctx;

	ctx = kzalloc(sizeof(*ctx), GFP_KERNEL_ACCOUNT);
	if (!ctx)
		return NULL;
	xa_init_flags(&ctx->objects, XA_FLAGS_ALLOC1 | XA_FLAGS_ACCOUNT);
	xa_init_flags(&ctx->regions, XA_FLAGS_ALLOC1 | XA_FLAGS_ACCOUNT);
	ctx->tgid = tgid;
	ctx->uid = uid;
	strscpy(ctx->comm, comm, sizeof(ctx->comm));
	kfab_ctx_set_opener(ctx, tgid);
	kfab_sq_poller_init(&ctx->sq_poller);
	kfab_pin_cache_init(&ctx->pin_cache);

	mutex_lock(&kfab_ctx_lock);
	ctx->id = ++kfab_next_ctx_id;
	list_add_tail(&ctx->node, &kfab_ctx_list);
	atomic_inc(&kfab_nr_ctx);
	mutex_unlock(&kfab_ctx_lock);
	kfab_nl_notify_ctx(ctx, true);
	return ctx;
}

/* The end of a context: nothing may use it any more. */
void kfab_ctx_release(struct kfab_ctx *ctx)
{
	mutex_lock(&kfab_ctx_lock);
	list_del(&ctx->node);
	atomic_dec(&kfab_nr_ctx);
	mutex_unlock(&kfab_ctx_lock);
	kfab_nl_notify_ctx(ctx, false);

	kfab_ctx_destroy_all(ctx);
	kfab_ctx_regions_destroy(ctx);
	/* Buffers still held (a send at its receiver) keep their pins. */
	kfab_pin_cache_fini(&ctx->pin_cache);
	kfab_sq_poller_fini(&ctx->sq_poller);
	put_user_ns(ctx->user_ns);
	put_net(ctx->net);
	put_pid(ctx->pid);
	kfree(ctx);
}

static int kfab_fops_open(struct inode *inode, struct file *filp)
{
	char comm[TASK_COMM_LEN];
	struct kfab_ctx *ctx;

	get_task_comm(comm, current);
	ctx = kfab_ctx_create(task_tgid_nr(current), current_euid(), comm);
	if (!ctx)
		return -ENOMEM;
	filp->private_data = ctx;
	return 0;
}

static int kfab_fops_release(struct inode *inode, struct file *filp)
{
	kfab_ctx_release(filp->private_data);
	return 0;
}

/**
 * kfab_ucmd_copy_out() - copy a command's struct back to user space
 * @ucmd: the command
 * @cmd_len: the kernel's size of the struct
 *
 * Copies as much as the user's struct holds.  When the user's struct is
 * longer, its tail was already checked to be zero on the way in.
 *
 * Return: 0 or -EFAULT.
 */
int kfab_ucmd_copy_out(struct kfab_ucmd *ucmd, size_t cmd_len)
{
	if (copy_to_user(ucmd->ubuffer, ucmd->cmd,
			 min_t(size_t, ucmd->user_size, cmd_len)))
		return -EFAULT;
	return 0;
}

/* kfab_ucmd_copy_out() for commands, with a fault-injection point. */
int kfab_ucmd_respond(struct kfab_ucmd *ucmd, size_t cmd_len)
{
	if (kfab_fault(ucmd->ctx, KFAB_FAULT_COPY_OUT))
		return -EFAULT;
	return kfab_ucmd_copy_out(ucmd, cmd_len);
}

static int kfab_ioctl_query(struct kfab_ucmd *ucmd)
{
	struct kfab_query *cmd = ucmd->cmd;

	if (cmd->flags)
		return -EOPNOTSUPP;

	/* Every output is written, whatever user space left in it. */
	*cmd = (struct kfab_query) {
		.size = cmd->size,
		.abi_version = KFAB_ABI_VERSION,
		.features = KFAB_FEATURE_RING | KFAB_FEATURE_SQ_POLL |
			    (IS_ENABLED(CONFIG_KFAB_TEST) ? KFAB_FEATURE_TEST : 0),
		.max_objects = kfab_max_objects,
		.max_ioctl_size = KFAB_MAX_IOCTL_SIZE,
		.module_version = KFAB_MODULE_VERSION_MAJOR << 16 |
				  KFAB_MODULE_VERSION_MINOR << 8 |
				  KFAB_MODULE_VERSION_PATCH,
	};
	return kfab_ucmd_respond(ucmd, sizeof(*cmd));
}

/* Big enough for any command's struct. */
union kfab_ucmd_buffer {
	struct kfab_query query;
	struct kfab_destroy destroy;
	struct kfab_domain_alloc domain_alloc;
	struct kfab_doorbell doorbell;
	struct kfab_cancel cancel;
	struct kfab_sq_watch sq_watch;
	struct kfab_sq_poll sq_poll;
	struct kfab_av_open av_open;
	struct kfab_av_insert av_insert;
	struct kfab_av_remove av_remove;
	struct kfab_av_unlink av_unlink;
	struct kfab_cq_open cq_open;
	struct kfab_cq_drain cq_drain;
	struct kfab_cq_readerr cq_readerr;
	struct kfab_cq_help cq_help;
	struct kfab_cntr_open cntr_open;
	struct kfab_cntr_update cntr_update;
	struct kfab_cntr_wait cntr_wait;
	struct kfab_ep_open ep_open;
	struct kfab_ep_bind ep_bind;
	struct kfab_ep_enable ep_enable;
	struct kfab_srx_open srx_open;
	struct kfab_rx_buffered rx_buffered;
	struct kfab_net_listen net_listen;
	struct kfab_net_allow net_allow;
#ifdef CONFIG_KFAB_TEST
	struct kfab_test_fault test_fault;
	struct kfab_test_cq_post test_cq_post;
#endif
};

struct kfab_ioctl_op {
	unsigned int size;	/* of the kernel's struct */
	unsigned int min_size;	/* of the first version of the struct */
	int (*execute)(struct kfab_ucmd *ucmd);
};

/*
 * One line per command: its number, handler, struct and the last member of
 * the struct's first version (which fixes the smallest size accepted).
 */
#define KFAB_IOCTL_OP(_nr, _fn, _struct, _last)				\
	[_nr] = {							\
		.size = sizeof(_struct) +				\
			BUILD_BUG_ON_ZERO(sizeof(union kfab_ucmd_buffer) < \
					  sizeof(_struct)),		\
		.min_size = offsetofend(_struct, _last),		\
		.execute = _fn,						\
	}

static const struct kfab_ioctl_op kfab_ioctl_ops[] = {
	KFAB_IOCTL_OP(KFAB_CMD_QUERY, kfab_ioctl_query, struct kfab_query,
		      __reserved),
	KFAB_IOCTL_OP(KFAB_CMD_DESTROY, kfab_ioctl_destroy,
		      struct kfab_destroy, id),
	KFAB_IOCTL_OP(KFAB_CMD_DOMAIN_ALLOC, kfab_ioctl_domain_alloc,
		      struct kfab_domain_alloc, __reserved),
	KFAB_IOCTL_OP(KFAB_CMD_DOORBELL, kfab_ioctl_doorbell,
		      struct kfab_doorbell, out_done),
	KFAB_IOCTL_OP(KFAB_CMD_CANCEL, kfab_ioctl_cancel, struct kfab_cancel,
		      context),
	KFAB_IOCTL_OP(KFAB_CMD_SQ_WATCH, kfab_ioctl_sq_watch,
		      struct kfab_sq_watch, __reserved),
	KFAB_IOCTL_OP(KFAB_CMD_SQ_POLL, kfab_ioctl_sq_poll,
		      struct kfab_sq_poll, out_parks),
	KFAB_IOCTL_OP(KFAB_CMD_AV_OPEN, kfab_ioctl_av_open,
		      struct kfab_av_open, out_region),
	KFAB_IOCTL_OP(KFAB_CMD_AV_INSERT, kfab_ioctl_av_insert,
		      struct kfab_av_insert, __reserved),
	KFAB_IOCTL_OP(KFAB_CMD_AV_REMOVE, kfab_ioctl_av_remove,
		      struct kfab_av_remove, indices),
	KFAB_IOCTL_OP(KFAB_CMD_AV_UNLINK, kfab_ioctl_av_unlink,
		      struct kfab_av_unlink, name),
	KFAB_IOCTL_OP(KFAB_CMD_CQ_OPEN, kfab_ioctl_cq_open, struct kfab_cq_open,
		      out_ring),
	KFAB_IOCTL_OP(KFAB_CMD_CQ_DRAIN, kfab_ioctl_cq_drain,
		      struct kfab_cq_drain, out_overflow),
	KFAB_IOCTL_OP(KFAB_CMD_CQ_READERR, kfab_ioctl_cq_readerr,
		      struct kfab_cq_readerr, __reserved),
	KFAB_IOCTL_OP(KFAB_CMD_CQ_HELP, kfab_ioctl_cq_help,
		      struct kfab_cq_help, out_bytes),
	KFAB_IOCTL_OP(KFAB_CMD_CNTR_OPEN, kfab_ioctl_cntr_open,
		      struct kfab_cntr_open, out_region),
	KFAB_IOCTL_OP(KFAB_CMD_CNTR_UPDATE, kfab_ioctl_cntr_update,
		      struct kfab_cntr_update, out_err),
	KFAB_IOCTL_OP(KFAB_CMD_CNTR_WAIT, kfab_ioctl_cntr_wait,
		      struct kfab_cntr_wait, out_err),
	KFAB_IOCTL_OP(KFAB_CMD_EP_OPEN, kfab_ioctl_ep_open, struct kfab_ep_open,
		      out_sq),
	KFAB_IOCTL_OP(KFAB_CMD_EP_BIND, kfab_ioctl_ep_bind, struct kfab_ep_bind,
		      obj_id),
	KFAB_IOCTL_OP(KFAB_CMD_EP_ENABLE, kfab_ioctl_ep_enable,
		      struct kfab_ep_enable, __reserved),
	KFAB_IOCTL_OP(KFAB_CMD_SRX_OPEN, kfab_ioctl_srx_open,
		      struct kfab_srx_open, out_sq),
	KFAB_IOCTL_OP(KFAB_CMD_RX_BUFFERED, kfab_ioctl_rx_buffered,
		      struct kfab_rx_buffered, cookie),
	KFAB_IOCTL_OP(KFAB_CMD_NET_LISTEN, kfab_ioctl_net_listen,
		      struct kfab_net_listen, out_addr),
	KFAB_IOCTL_OP(KFAB_CMD_NET_ALLOW, kfab_ioctl_net_allow,
		      struct kfab_net_allow, node),
#ifdef CONFIG_KFAB_TEST
	KFAB_IOCTL_OP(KFAB_CMD_TEST_FAULT, kfab_ioctl_test_fault,
		      struct kfab_test_fault, out_fired),
	KFAB_IOCTL_OP(KFAB_CMD_TEST_CQ_POST, kfab_ioctl_test_cq_post,
		      struct kfab_test_cq_post, out_overflowed),
#endif
};

/*
 * A command of the table, with its struct.  A function of its own so that
 * the doorbell does not pay for clearing @buf, which the kernel's
 * CONFIG_INIT_STACK_ALL_ZERO does at its declaration.
 */
static noinline long kfab_fops_ioctl_cmd(struct file *filp, unsigned int cmd,
					 unsigned long arg)
{
	struct kfab_ucmd ucmd = {
		.ctx = filp->private_data,
		.ubuffer = (void __user *)arg,
	};
	union kfab_ucmd_buffer buf;
	const struct kfab_ioctl_op *op;
	unsigned int nr = _IOC_NR(cmd);
	int rc;

	/* The size bits of @cmd are not checked: the struct's size is. */
	if (_IOC_TYPE(cmd) != KFAB_TYPE ||
	    _IOC_DIR(cmd) != (_IOC_READ | _IOC_WRITE) ||
	    nr >= ARRAY_SIZE(kfab_ioctl_ops))
		return -ENOTTY;
	op = &kfab_ioctl_ops[array_index_nospec(nr, ARRAY_SIZE(kfab_ioctl_ops))];
	if (!op->execute)
		return -ENOTTY;

	rc = get_user(ucmd.user_size, (u32 __user *)ucmd.ubuffer);
	if (rc)
		return rc;
	if (ucmd.user_size < op->min_size)
		return -EINVAL;
	if (ucmd.user_size > KFAB_MAX_IOCTL_SIZE)
		return -E2BIG;

	ucmd.cmd = &buf;
	rc = copy_struct_from_user(ucmd.cmd, op->size, ucmd.ubuffer,
				   ucmd.user_size);
	if (rc)
		return rc;
	return op->execute(&ucmd);
}

static long kfab_fops_ioctl(struct file *filp, unsigned int cmd,
			    unsigned long arg)
{
	/* The one command without a struct: the hot path's doorbell. */
	if (cmd == KFAB_IOC_RING)
		return kfab_ioctl_ring(filp->private_data, arg);
	return kfab_fops_ioctl_cmd(filp, cmd, arg);
}

static const struct file_operations kfab_fops = {
	.owner = THIS_MODULE,
	.open = kfab_fops_open,
	.release = kfab_fops_release,
	.unlocked_ioctl = kfab_fops_ioctl,
	.mmap = kfab_fops_mmap,
	.compat_ioctl = compat_ptr_ioctl,
	.llseek = noop_llseek,
};

static struct miscdevice kfab_misc = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = KFAB_DEVICE_NAME,
	.fops = &kfab_fops,
	.groups = kfab_sysfs_groups,
	/* Access is decided per object (AV modes and owners), not here. */
	.mode = 0666,
};

static int __init kfab_init(void)
{
	int rc;

	if (!kfab_max_objects) {
		pr_err("kfab: max_objects must be at least 1\n");
		return -EINVAL;
	}

	rc = kfab_share_init();
	if (rc)
		return rc;
	rc = kfab_pin_cache_mod_init();
	if (rc)
		goto err_share;
	rc = kfab_av_init();
	if (rc)
		goto err_pin;
	rc = kfab_nl_init();
	if (rc)
		goto err_av;
	rc = kfab_peer_init();
	if (rc)
		goto err_nl;
	rc = kfab_node_init();
	if (rc)
		goto err_peer;

	kfab_debugfs_init();
	rc = kfab_kapi_init();
	if (rc)
		goto err_debugfs;
	rc = misc_register(&kfab_misc);
	if (rc)
		goto err_kapi;
	return 0;

err_kapi:
	kfab_kapi_exit();
err_debugfs:
	kfab_debugfs_exit();
	kfab_node_exit();
err_peer:
	kfab_peer_exit();
err_nl:
	kfab_nl_exit();
err_av:
	kfab_av_exit();
err_pin:
	kfab_pin_cache_mod_exit();
err_share:
	kfab_share_exit();
	return rc;
}

static void __exit kfab_exit(void)
{
	misc_deregister(&kfab_misc);
	kfab_kapi_exit();
	kfab_debugfs_exit();
	/* Every node's listeners and peers close with it. */
	kfab_node_exit();
	kfab_peer_exit();
	/* No file is open any more: only persistent named AVs are left. */
	kfab_av_exit();
	kfab_nl_exit();
	/* After the last buffer: a held send goes with its receiver. */
	kfab_pin_cache_mod_exit();
	kfab_share_exit();
}

module_init(kfab_init);
module_exit(kfab_exit);

MODULE_DESCRIPTION("kfab: libfabric objects (AVs, receive contexts, completion rings) in the kernel");
MODULE_LICENSE("Dual BSD/GPL");
MODULE_VERSION(__stringify(KFAB_MODULE_VERSION_MAJOR) "."
	       __stringify(KFAB_MODULE_VERSION_MINOR) "."
	       __stringify(KFAB_MODULE_VERSION_PATCH));
