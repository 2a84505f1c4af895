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
 * Everything here is reached through kfab_tcp_engine (net.h): peer.c and
 * node.c never see a socket.
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

/**
 * struct kfab_tcp_conn - a connection in, over TCP
 * @conn: what peer.c sees
 * @sock: its socket
 * @rx_work: reads and carries out its frames until it ends
 */
struct kfab_tcp_conn {
	struct kfab_conn conn;
	struct socket *sock;
	struct work_struct rx_work;
};

static struct kfab_tcp_conn *kfab_tcp_conn(struct kfab_conn *conn)
{
	return container_of(conn, struct kfab_tcp_conn, conn);
}

static void kfab_tcp_rx_work(struct work_struct *work)
{
	struct kfab_tcp_conn *tc = container_of(work, struct kfab_tcp_conn,
						rx_work);
	struct kfab_node *node = tc->conn.node;
	int rc;

	do {
		rc = kfab_conn_rx(&tc->conn);
	} while (!rc);
	if (rc != -ESHUTDOWN && rc != -ECONNRESET && rc != -EPIPE)
		pr_debug("kfab: connection dropped: %d\n", rc);
	kfab_conn_closed(&tc->conn);
	mutex_lock(&node->lock);
	list_del(&tc->conn.link);
	mutex_unlock(&node->lock);
	sock_release(tc->sock);
	kfree(tc);
}

static int kfab_tcp_recv_sock(struct socket *sock, struct iov_iter *to)
{
	struct msghdr msg = { .msg_flags = MSG_WAITALL | MSG_NOSIGNAL };
	int rc;

	while (iov_iter_count(to)) {
		msg.msg_iter = *to;
		rc = sock_recvmsg(sock, &msg, MSG_WAITALL | MSG_NOSIGNAL);
		if (rc <= 0)
			return rc ? rc : -ESHUTDOWN;
		iov_iter_advance(to, rc);
	}
	return 0;
}

/* Read exactly what @to describes: kernel memory or a receive's pages. */
static int kfab_tcp_recv(struct kfab_conn *conn, struct iov_iter *to)
{
	return kfab_tcp_recv_sock(kfab_tcp_conn(conn)->sock, to);
}

static int kfab_tcp_sendmsg(struct socket *sock, struct msghdr *msg);

/* The answer to a HELLO, back on the connection it came on. */
static int kfab_tcp_reply(struct kfab_conn *conn, struct kvec *kv,
			  unsigned int nr, size_t len)
{
	struct msghdr msg = { .msg_flags = MSG_NOSIGNAL };

	iov_iter_kvec(&msg.msg_iter, ITER_SOURCE, kv, nr, len);
	return kfab_tcp_sendmsg(kfab_tcp_conn(conn)->sock, &msg);
}

/* Wake the connection's receive work: it ends. */
static void kfab_tcp_shutdown(struct kfab_conn *conn)
{
	kernel_sock_shutdown(kfab_tcp_conn(conn)->sock, SHUT_RDWR);
}

/**
 * struct kfab_tcp_listener - a listener's socket
 * @l: the listener
 * @sock: its listening socket
 * @accept_work: takes new connections off @sock
 * @saved_data_ready: @sock's own callback, put back when it closes
 */
struct kfab_tcp_listener {
	struct kfab_listener *l;
	struct socket *sock;
	struct work_struct accept_work;
	void (*saved_data_ready)(struct sock *sk);
};

/* Is the node that called allowed to (the node's allow-list)? */
static bool kfab_tcp_allowed(struct kfab_node *node, struct socket *sock)
{
	struct sockaddr_in6 sin6;

	/* A dual-stack socket: IPv4 callers come v4-mapped. */
	if (kernel_getpeername(sock, (struct sockaddr *)&sin6) < 0 ||
	    sin6.sin6_family != AF_INET6)
		return false;
	return kfab_node_allows(node, sin6.sin6_addr.s6_addr);
}

static void kfab_tcp_accept_work(struct work_struct *work)
{
	struct kfab_tcp_listener *tl = container_of(work,
						    struct kfab_tcp_listener,
						    accept_work);
	struct kfab_node *node = tl->l->node;
	struct kfab_tcp_conn *tc;
	struct socket *sock;

	while (!kernel_accept(tl->sock, &sock, O_NONBLOCK)) {
		if (!kfab_tcp_allowed(node, sock)) {
			sock_release(sock);
			continue;
		}
		tc = kzalloc(sizeof(*tc), GFP_KERNEL);
		if (!tc) {
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
		sock->sk->sk_data_ready = tl->saved_data_ready;
		write_unlock_bh(&sock->sk->sk_callback_lock);
		kfab_tcp_tune(sock);
		tc->conn.node = node;
		tc->conn.engine = &kfab_tcp_engine;
		tc->conn.local = tl->l->addr;
		tc->sock = sock;
		INIT_WORK(&tc->rx_work, kfab_tcp_rx_work);
		mutex_lock(&node->lock);
		if (node->dying) {
			mutex_unlock(&node->lock);
			sock_release(sock);
			kfree(tc);
			continue;
		}
		list_add_tail(&tc->conn.link, &node->conns);
		mutex_unlock(&node->lock);
		pr_debug("kfab: netns %u: connection accepted\n",
			 node->net->ns.inum);
		queue_work(kfab_net_wq, &tc->rx_work);
	}
}

/* The listening socket's data-ready: a connection waits to be taken. */
static void kfab_tcp_listener_data_ready(struct sock *sk)
{
	struct kfab_tcp_listener *tl;

	read_lock_bh(&sk->sk_callback_lock);
	tl = sk->sk_user_data;
	if (tl && sk->sk_state == TCP_LISTEN)
		queue_work(kfab_net_wq, &tl->accept_work);
	read_unlock_bh(&sk->sk_callback_lock);
}

/* Open a listener's socket.  Return: 0 or -errno (-EADDRINUSE: taken). */
static int kfab_tcp_listen(struct kfab_listener *l)
{
	struct kfab_tcp_listener *tl;
	struct sockaddr_in6 sin6;
	struct socket *sock;
	int rc;

	tl = kzalloc(sizeof(*tl), GFP_KERNEL_ACCOUNT);
	if (!tl)
		return -ENOMEM;
	tl->l = l;
	INIT_WORK(&tl->accept_work, kfab_tcp_accept_work);
	kfab_tcp_init_addr(&l->addr, &sin6);
	rc = sock_create_kern(l->node->net, AF_INET6, SOCK_STREAM,
			      IPPROTO_TCP, &sock);
	if (rc)
		goto err_free;
	sock_set_reuseaddr(sock->sk);
	rc = kernel_bind(sock, (struct sockaddr *)&sin6, sizeof(sin6));
	if (!rc)
		rc = kernel_listen(sock, 128);
	if (rc) {
		sock_release(sock);
		goto err_free;
	}
	tl->sock = sock;
	l->priv = tl;
	write_lock_bh(&sock->sk->sk_callback_lock);
	sock->sk->sk_user_data = tl;
	tl->saved_data_ready = sock->sk->sk_data_ready;
	sock->sk->sk_data_ready = kfab_tcp_listener_data_ready;
	write_unlock_bh(&sock->sk->sk_callback_lock);
	/* Connections that came before the callback was in place. */
	queue_work(kfab_net_wq, &tl->accept_work);
	return 0;

err_free:
	kfree(tl);
	return rc;
}

static void kfab_tcp_unlisten(struct kfab_listener *l)
{
	struct kfab_tcp_listener *tl = l->priv;
	struct sock *sk = tl->sock->sk;

	write_lock_bh(&sk->sk_callback_lock);
	sk->sk_user_data = NULL;
	sk->sk_data_ready = tl->saved_data_ready;
	write_unlock_bh(&sk->sk_callback_lock);
	cancel_work_sync(&tl->accept_work);
	sock_release(tl->sock);
	kfree(tl);
	l->priv = NULL;
}

/* ---- the connection out ---- */

/**
 * struct kfab_tcp_link - a connection out, over TCP
 * @link: what peer.c sees
 * @sock: its socket
 * @saved_state_change: @sock's own callback
 * @down: the caller's, for when it ends
 * @arg: for @down
 *
 * A connection out carries nothing in, so nobody would notice it end
 * while nothing is sent (the other side closed it, keepalive gave up):
 * its state change tells the peer, which fails what waits on it.
 */
struct kfab_tcp_link {
	struct kfab_link link;
	struct socket *sock;
	void (*saved_state_change)(struct sock *sk);
	void (*down)(void *arg);
	void *arg;
};

static struct socket *kfab_tcp_link_sock(struct kfab_link *link)
{
	return container_of(link, struct kfab_tcp_link, link)->sock;
}

static void kfab_tcp_out_state_change(struct sock *sk)
{
	void (*saved)(struct sock *sk) = NULL;
	struct kfab_tcp_link *tl;

	read_lock_bh(&sk->sk_callback_lock);
	tl = sk->sk_user_data;
	if (tl) {
		saved = tl->saved_state_change;
		if (sk->sk_state != TCP_ESTABLISHED &&
		    sk->sk_state != TCP_SYN_SENT)
			tl->down(tl->arg);
	}
	read_unlock_bh(&sk->sk_callback_lock);
	if (saved)
		saved(sk);
}

static int kfab_tcp_connect(struct kfab_node *node,
			    const struct kfab_addr *addr,
			    void (*down)(void *arg), void *arg,
			    struct kfab_link **out)
{
	struct kfab_tcp_link *tl;
	struct sockaddr_in6 sin6;
	struct socket *sock;
	int rc;

	tl = kzalloc(sizeof(*tl), GFP_KERNEL);
	if (!tl)
		return -ENOMEM;
	tl->link.engine = &kfab_tcp_engine;
	tl->down = down;
	tl->arg = arg;

	kfab_tcp_init_addr(addr, &sin6);
	rc = sock_create_kern(node->net, AF_INET6, SOCK_STREAM, IPPROTO_TCP,
			      &sock);
	if (rc)
		goto err_free;
	kfab_tcp_tune(sock);
	sock->sk->sk_sndtimeo = msecs_to_jiffies(kfab_peer_timeout_ms);
	/* Only the answer to our HELLO is ever read here. */
	sock->sk->sk_rcvtimeo = msecs_to_jiffies(kfab_peer_timeout_ms);
	rc = kernel_connect(sock, (struct sockaddr *)&sin6, sizeof(sin6), 0);
	if (rc) {
		sock_release(sock);
		goto err_free;
	}
	tl->sock = sock;
	write_lock_bh(&sock->sk->sk_callback_lock);
	tl->saved_state_change = sock->sk->sk_state_change;
	sock->sk->sk_user_data = tl;
	sock->sk->sk_state_change = kfab_tcp_out_state_change;
	write_unlock_bh(&sock->sk->sk_callback_lock);
	/* It may have ended already: nobody would be told. */
	if (sock->sk->sk_state != TCP_ESTABLISHED)
		down(arg);
	*out = &tl->link;
	return 0;

err_free:
	kfree(tl);
	return rc;
}

/* Close a connection out: its watcher goes first, so @down is not called. */
static void kfab_tcp_release(struct kfab_link *link)
{
	struct kfab_tcp_link *tl = container_of(link, struct kfab_tcp_link,
						link);
	struct sock *sk = tl->sock->sk;

	write_lock_bh(&sk->sk_callback_lock);
	sk->sk_state_change = tl->saved_state_change;
	sk->sk_user_data = NULL;
	write_unlock_bh(&sk->sk_callback_lock);
	kernel_sock_shutdown(tl->sock, SHUT_RDWR);
	sock_release(tl->sock);
	kfree(tl);
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
static int kfab_tcp_send_kvec(struct kfab_link *link, struct kvec *kv,
			      unsigned int nr, size_t len, bool more)
{
	struct msghdr msg = {
		.msg_flags = MSG_NOSIGNAL | (more ? MSG_MORE : 0),
	};

	iov_iter_kvec(&msg.msg_iter, ITER_SOURCE, kv, nr, len);
	return kfab_tcp_sendmsg(kfab_tcp_link_sock(link), &msg);
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
static int kfab_tcp_send_pages(struct kfab_link *link, struct kfab_buf *buf,
			       size_t off, size_t len, bool more)
{
	struct msghdr msg = {
		.msg_flags = MSG_NOSIGNAL | (more ? MSG_MORE : 0),
	};

	iov_iter_bvec(&msg.msg_iter, ITER_SOURCE, buf->bv, buf->nr_bv,
		      buf->len);
	iov_iter_advance(&msg.msg_iter, off);
	iov_iter_truncate(&msg.msg_iter, len);
	if (!kfab_tcp_pages_ok(&msg.msg_iter))
		return kfab_tcp_sendmsg(kfab_tcp_link_sock(link), &msg);
	return kfab_sock_send_pages(kfab_tcp_link_sock(link), &msg);
}

/* The answer to our HELLO (nothing else comes back on a link out). */
static int kfab_tcp_recv_link(struct kfab_link *link, struct iov_iter *to)
{
	return kfab_tcp_recv_sock(kfab_tcp_link_sock(link), to);
}

const struct kfab_engine kfab_tcp_engine = {
	.name = "tcp",
	.listen = kfab_tcp_listen,
	.unlisten = kfab_tcp_unlisten,
	.connect = kfab_tcp_connect,
	.release = kfab_tcp_release,
	.send_kvec = kfab_tcp_send_kvec,
	.send_pages = kfab_tcp_send_pages,
	.recv = kfab_tcp_recv,
	.reply = kfab_tcp_reply,
	.recv_link = kfab_tcp_recv_link,
	.shutdown = kfab_tcp_shutdown,
};
