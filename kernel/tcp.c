// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The TCP engine: kfab's frames over the kernel's own TCP sockets, in the
 * manner of NBD and nvme-tcp (Documentation/net.rst).
 *
 * Listening sockets live in their node's namespace (sock_create_kern(), so
 * they hold no reference on it: the namespace's exit closes them).  A new
 * connection is taken by the listener's accept work, which the socket's
 * data-ready callback queues; each connection then has a receive work that
 * blocks reading frames (peer.c's kfab_conn_rx()) until it fails or is
 * shut down.  Sending is blocking too, from a peer's transmit work; pages
 * of a large message go with MSG_SPLICE_PAGES (sendpage before 6.5), so
 * TCP takes references on them instead of copying.
 *
 * Dead links: keepalive and TCP_USER_TIMEOUT end a connection that moves
 * nothing for kfab_peer_timeout_ms, so nothing waits forever on a node
 * that is gone.
 */
#include <linux/in6.h>
#include <linux/net.h>
#include <linux/slab.h>
#include <linux/tcp.h>
#include <net/sock.h>
#include <net/tcp.h>

#include "kfab.h"
#include "net.h"

static void kfab_tcp_init_addr(const struct kfab_addr *a, struct sockaddr_in6 *sin6)
{
	*sin6 = (struct sockaddr_in6){
		.sin6_family = AF_INET6,
		.sin6_port = a->port,
	};
	memcpy(&sin6->sin6_addr, a->node, sizeof(sin6->sin6_addr));
}

/* What every kfab socket gets: no delay, and dead links noticed. */
static void kfab_tcp_tune(struct socket *sock)
{
	unsigned int secs = max(kfab_peer_timeout_ms / 1000, 1U);
	struct sock *sk = sock->sk;

	tcp_sock_set_nodelay(sk);
	sock_set_keepalive(sk);
	tcp_sock_set_keepidle(sk, 1);
	tcp_sock_set_keepintvl(sk, 1);
	tcp_sock_set_keepcnt(sk, min_t(unsigned int, secs, MAX_TCP_KEEPCNT));
	tcp_sock_set_user_timeout(sk, kfab_peer_timeout_ms);
	/* Frames are built in process context, never under memory reclaim. */
	sk->sk_allocation = GFP_KERNEL;
	kfab_sock_own_frag(sk);
}

/* ---- incoming connections ---- */

static void kfab_conn_rx_work(struct work_struct *work)
{
	struct kfab_conn *conn = container_of(work, struct kfab_conn, rx_work);
	struct kfab_node *node = conn->node;
	int rc;

	do {
		rc = kfab_conn_rx(conn);
	} while (!rc);
	if (rc != -ESHUTDOWN && rc != -ECONNRESET && rc != -EPIPE)
		pr_debug("kfab: connection dropped: %d\n", rc);
	kfab_conn_closed(conn);
	mutex_lock(&node->lock);
	list_del(&conn->link);
	mutex_unlock(&node->lock);
	sock_release(conn->sock);
	kfree(conn);
}

/**
 * kfab_tcp_recv() - read exactly what @to describes from a connection
 * @conn: the connection
 * @to: where the bytes go (kernel memory, or a receive's pinned pages)
 *
 * Return: 0, or a negative errno (-ESHUTDOWN: the connection ended).
 */
int kfab_tcp_recv(struct kfab_conn *conn, struct iov_iter *to)
{
	struct msghdr msg = { .msg_flags = MSG_WAITALL | MSG_NOSIGNAL };
	int rc;

	while (iov_iter_count(to)) {
		msg.msg_iter = *to;
		rc = sock_recvmsg(conn->sock, &msg, MSG_WAITALL | MSG_NOSIGNAL);
		if (rc <= 0)
			return rc ? rc : -ESHUTDOWN;
		iov_iter_advance(to, rc);
	}
	return 0;
}

/* Wake the connection's receive work: it ends. */
void kfab_conn_shutdown(struct kfab_conn *conn)
{
	kernel_sock_shutdown(conn->sock, SHUT_RDWR);
}

/* The node goes: end every incoming connection and wait for them. */
void kfab_conns_close(struct kfab_node *node)
{
	struct kfab_conn *conn;

	mutex_lock(&node->lock);
	list_for_each_entry(conn, &node->conns, link)
		kfab_conn_shutdown(conn);
	mutex_unlock(&node->lock);
	for (;;) {
		mutex_lock(&node->lock);
		conn = list_first_entry_or_null(&node->conns, struct kfab_conn,
						link);
		if (conn)
			kfab_conn_shutdown(conn);
		mutex_unlock(&node->lock);
		if (!conn)
			return;
		flush_workqueue(kfab_net_wq);
	}
}

static void kfab_listener_accept_work(struct work_struct *work)
{
	struct kfab_listener *l = container_of(work, struct kfab_listener,
					       accept_work);
	struct kfab_node *node = l->node;
	struct kfab_conn *conn;
	struct socket *sock;

	while (!kernel_accept(l->sock, &sock, O_NONBLOCK)) {
		conn = kzalloc(sizeof(*conn), GFP_KERNEL);
		if (!conn) {
			sock_release(sock);
			continue;
		}
		/*
		 * A child inherits the listener's callbacks: give it back its
		 * own, or its readers are never woken.  Data that came before
		 * is seen by the reader's first look at the queue.
		 */
		write_lock_bh(&sock->sk->sk_callback_lock);
		sock->sk->sk_user_data = NULL;
		sock->sk->sk_data_ready = l->saved_data_ready;
		write_unlock_bh(&sock->sk->sk_callback_lock);
		kfab_tcp_tune(sock);
		conn->node = node;
		conn->sock = sock;
		INIT_WORK(&conn->rx_work, kfab_conn_rx_work);
		mutex_lock(&node->lock);
		if (node->dying) {
			mutex_unlock(&node->lock);
			sock_release(sock);
			kfree(conn);
			continue;
		}
		list_add_tail(&conn->link, &node->conns);
		mutex_unlock(&node->lock);
		pr_debug("kfab: netns %u: connection accepted\n",
			 node->net->ns.inum);
		queue_work(kfab_net_wq, &conn->rx_work);
	}
}

/* The listening socket's data-ready: a connection waits to be taken. */
static void kfab_listener_data_ready(struct sock *sk)
{
	struct kfab_listener *l;

	read_lock_bh(&sk->sk_callback_lock);
	l = sk->sk_user_data;
	if (l && sk->sk_state == TCP_LISTEN)
		queue_work(kfab_net_wq, &l->accept_work);
	read_unlock_bh(&sk->sk_callback_lock);
}

/**
 * kfab_tcp_listen() - open a listener's socket
 * @l: the listener, its address set; its node's lock held
 *
 * Return: 0 or a negative errno (-EADDRINUSE: the port is taken).
 */
int kfab_tcp_listen(struct kfab_listener *l)
{
	struct sockaddr_in6 sin6;
	struct socket *sock;
	int rc;

	INIT_WORK(&l->accept_work, kfab_listener_accept_work);
	kfab_tcp_init_addr(&l->addr, &sin6);
	rc = sock_create_kern(l->node->net, AF_INET6, SOCK_STREAM,
			      IPPROTO_TCP, &sock);
	if (rc)
		return rc;
	sock_set_reuseaddr(sock->sk);
	rc = kernel_bind(sock, (struct sockaddr *)&sin6, sizeof(sin6));
	if (!rc)
		rc = kernel_listen(sock, 128);
	if (rc) {
		sock_release(sock);
		return rc;
	}
	write_lock_bh(&sock->sk->sk_callback_lock);
	sock->sk->sk_user_data = l;
	l->saved_data_ready = sock->sk->sk_data_ready;
	sock->sk->sk_data_ready = kfab_listener_data_ready;
	write_unlock_bh(&sock->sk->sk_callback_lock);
	l->sock = sock;
	/* Connections that came before the callback was in place. */
	queue_work(kfab_net_wq, &l->accept_work);
	return 0;
}

void kfab_tcp_unlisten(struct kfab_listener *l)
{
	struct sock *sk = l->sock->sk;

	write_lock_bh(&sk->sk_callback_lock);
	sk->sk_user_data = NULL;
	sk->sk_data_ready = l->saved_data_ready;
	write_unlock_bh(&sk->sk_callback_lock);
	cancel_work_sync(&l->accept_work);
	sock_release(l->sock);
	l->sock = NULL;
}

/* ---- the connection out ---- */

/*
 * A connection out carries nothing in, so nobody would notice it end
 * while nothing is sent (the other side closed it, keepalive gave up):
 * its state change tells the peer, which fails what waits on it.
 */
struct kfab_tcp_out {
	void (*saved_state_change)(struct sock *sk);
	void (*down)(void *arg);
	void *arg;
};

static void kfab_tcp_out_state_change(struct sock *sk)
{
	struct kfab_tcp_out *out;
	void (*saved)(struct sock *sk) = NULL;

	read_lock_bh(&sk->sk_callback_lock);
	out = sk->sk_user_data;
	if (out) {
		saved = out->saved_state_change;
		if (sk->sk_state != TCP_ESTABLISHED &&
		    sk->sk_state != TCP_SYN_SENT)
			out->down(out->arg);
	}
	read_unlock_bh(&sk->sk_callback_lock);
	if (saved)
		saved(sk);
}

/**
 * kfab_tcp_connect() - call another node
 * @node: the calling node (its namespace)
 * @addr: the node called
 * @down: called (any context, no sleep) when the connection ends later
 * @arg: for @down
 * @out: the connected socket
 *
 * Blocks for at most kfab_peer_timeout_ms.  Return: 0 or a negative errno.
 */
int kfab_tcp_connect(struct kfab_node *node, const struct kfab_addr *addr,
		     void (*down)(void *arg), void *arg, struct socket **out)
{
	struct kfab_tcp_out *watch;
	struct sockaddr_in6 sin6;
	struct socket *sock;
	int rc;

	watch = kzalloc(sizeof(*watch), GFP_KERNEL);
	if (!watch)
		return -ENOMEM;
	watch->down = down;
	watch->arg = arg;

	kfab_tcp_init_addr(addr, &sin6);
	rc = sock_create_kern(node->net, AF_INET6, SOCK_STREAM, IPPROTO_TCP,
			      &sock);
	if (rc) {
		kfree(watch);
		return rc;
	}
	kfab_tcp_tune(sock);
	sock->sk->sk_sndtimeo = msecs_to_jiffies(kfab_peer_timeout_ms);
	rc = kernel_connect(sock, (struct sockaddr *)&sin6, sizeof(sin6), 0);
	if (rc) {
		sock_release(sock);
		kfree(watch);
		return rc;
	}
	write_lock_bh(&sock->sk->sk_callback_lock);
	watch->saved_state_change = sock->sk->sk_state_change;
	sock->sk->sk_user_data = watch;
	sock->sk->sk_state_change = kfab_tcp_out_state_change;
	write_unlock_bh(&sock->sk->sk_callback_lock);
	/* It may have ended already: nobody would be told. */
	if (sock->sk->sk_state != TCP_ESTABLISHED)
		down(arg);
	*out = sock;
	return 0;
}

/* Close a connection out: its watcher goes first, so @down is not called. */
void kfab_tcp_release(struct socket *sock)
{
	struct sock *sk = sock->sk;
	struct kfab_tcp_out *watch;

	write_lock_bh(&sk->sk_callback_lock);
	watch = sk->sk_user_data;
	if (watch) {
		sk->sk_state_change = watch->saved_state_change;
		sk->sk_user_data = NULL;
	}
	write_unlock_bh(&sk->sk_callback_lock);
	kfree(watch);
	kernel_sock_shutdown(sock, SHUT_RDWR);
	sock_release(sock);
}

static int kfab_tcp_sendmsg(struct socket *sock, struct msghdr *msg)
{
	while (msg_data_left(msg)) {
		int rc = sock_sendmsg(sock, msg);

		if (rc <= 0)
			return rc ? rc : -EPIPE;
	}
	return 0;
}

/* Send @len bytes of @kv (copied into the socket). */
int kfab_tcp_send_kvec(struct socket *sock, struct kvec *kv, unsigned int nr,
		       size_t len, bool more)
{
	struct msghdr msg = {
		.msg_flags = MSG_NOSIGNAL | (more ? MSG_MORE : 0),
	};

	iov_iter_kvec(&msg.msg_iter, ITER_SOURCE, kv, nr, len);
	return kfab_tcp_sendmsg(sock, &msg);
}

/*
 * TCP may keep a reference on a page only when the page can hold one
 * (sendpage_ok()): not slab memory, such as a kernel consumer's kmalloc'd
 * kvec or kfab_blk's request header, where TCP's reference would be
 * meaningless and the kernel warns.
 */
static bool kfab_tcp_pages_ok(const struct iov_iter *iter)
{
	const struct bio_vec *bv = iter->bvec;
	size_t skip = iter->iov_offset, left = iov_iter_count(iter);
	size_t n, first, last;

	for (; left; bv++, skip = 0) {
		n = min(left, bv->bv_len - skip);
		if (!n)
			continue;
		first = (bv->bv_offset + skip) >> PAGE_SHIFT;
		last = (bv->bv_offset + skip + n - 1) >> PAGE_SHIFT;
		for (; first <= last; first++)
			if (!sendpage_ok(nth_page(bv->bv_page, first)))
				return false;
		left -= n;
	}
	return true;
}

/*
 * Send @len bytes of @buf from @off: its pages, referenced, not copied;
 * copied when one of them cannot be referenced.
 */
int kfab_tcp_send_pages(struct socket *sock, struct kfab_buf *buf, size_t off,
			size_t len, bool more)
{
	struct msghdr msg = {
		.msg_flags = MSG_NOSIGNAL | (more ? MSG_MORE : 0),
	};

	iov_iter_bvec(&msg.msg_iter, ITER_SOURCE, buf->bv, buf->nr_bv,
		      buf->len);
	iov_iter_advance(&msg.msg_iter, off);
	iov_iter_truncate(&msg.msg_iter, len);
	if (!kfab_tcp_pages_ok(&msg.msg_iter))
		return kfab_tcp_sendmsg(sock, &msg);
	return kfab_sock_send_pages(sock, &msg);
}
