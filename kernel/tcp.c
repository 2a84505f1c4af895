// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The TCP engine: kfab's frames over the kernel's own TCP sockets, in the
 * manner of NBD and nvme-tcp (Documentation/net.rst).
 *
 * Listening sockets live in their node's namespace (sock_create_kern(), so
 * they hold no reference on it: the namespace's exit closes them).  A new
 * connection is taken by the listener's accept work, which the socket's
 * data-ready callback queues.  Every connection, accepted or made, has a
 * receive work that blocks reading frames (peer.c's kfab_conn_rx()) until
 * it fails or is shut down; its peer sends on the same socket.  The reader
 * takes what the socket holds in one call into a buffer of its own and
 * hands peer.c its frames from there, so a burst of small frames costs one
 * socket call, not three per frame; a long read (a payload on its way to
 * a receive's pages) goes straight from the socket.  Sending is
 * blocking too, from a peer's transmit work; pages
 * of a large message go with MSG_SPLICE_PAGES (sendpage before 6.5), so
 * TCP takes references on them instead of copying.
 *
 * Everything here is reached through kfab_tcp_engine (net.h): peer.c and
 * node.c never see a socket.
 *
 * Dead links: keepalive and TCP_USER_TIMEOUT end a connection that moves
 * nothing for kfab_peer_timeout_ms, and a send that cannot go on for as
 * long fails, so nothing waits forever on a node that is gone.
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
	/* One value throughout: KFAB_NL_CMD_LIMIT_SET may change it. */
	unsigned int ms = READ_ONCE(kfab_peer_timeout_ms);
	unsigned int secs = max(ms / 1000, 1U);
	struct sock *sk = sock->sk;

	tcp_sock_set_nodelay(sk);
	sock_set_keepalive(sk);
	tcp_sock_set_keepidle(sk, 1);
	tcp_sock_set_keepintvl(sk, 1);
	tcp_sock_set_keepcnt(sk, min_t(unsigned int, secs, MAX_TCP_KEEPCNT));
	tcp_sock_set_user_timeout(sk, ms);
	sk->sk_sndtimeo = msecs_to_jiffies(ms);
	/* Frames are built in process context, never under memory reclaim. */
	sk->sk_allocation = GFP_KERNEL;
	kfab_sock_own_frag(sk);
}

/* ---- connections ---- */

/*
 * The reader's buffer: what one socket call may take ahead of the frame
 * being read.  A read of at least KFAB_TCP_RX_DIRECT bytes that the buffer
 * does not hold goes from the socket to its destination, so a payload is
 * copied twice (socket, buffer, receive) only when it is short.
 */
#define KFAB_TCP_RX_BUF		(16 * 1024)
#define KFAB_TCP_RX_DIRECT	2048

/**
 * struct kfab_tcp_conn - a connection over TCP, either way
 * @conn: what peer.c reads
 * @link: what peer.c sends on
 * @sock: its socket
 * @rx_work: reads and carries out its frames until it ends
 * @ref: @rx_work's, and the link's (kfab_tcp_connect(), kfab_tcp_hold()):
 *	the socket is released with the last
 * @rx_buf: KFAB_TCP_RX_BUF bytes read from @sock ahead of the frames
 * @rx_head: the first of them not handed out yet
 * @rx_tail: the end of what @rx_buf holds
 *
 * @rx_buf, @rx_head and @rx_tail are @rx_work's alone: only the reader
 * reads (kfab_tcp_recv(), kfab_tcp_rx_pending()), and @recv_link reads
 * the socket itself, before the reader starts.
 */
struct kfab_tcp_conn {
	struct kfab_conn conn;
	struct kfab_link link;
	struct socket *sock;
	struct work_struct rx_work;
	struct kref ref;
	u8 *rx_buf;
	u32 rx_head;
	u32 rx_tail;
};

static struct kfab_tcp_conn *kfab_tcp_conn(struct kfab_conn *conn)
{
	return container_of(conn, struct kfab_tcp_conn, conn);
}

static struct kfab_tcp_conn *kfab_tcp_link_conn(struct kfab_link *link)
{
	return container_of(link, struct kfab_tcp_conn, link);
}

static void kfab_tcp_conn_free(struct kref *ref)
{
	struct kfab_tcp_conn *tc = container_of(ref, struct kfab_tcp_conn,
						ref);

	sock_release(tc->sock);
	kfree(tc->rx_buf);
	kfree(tc);
}

static void kfab_tcp_conn_put(struct kfab_tcp_conn *tc)
{
	kref_put(&tc->ref, kfab_tcp_conn_free);
}

static void kfab_tcp_rx_work(struct work_struct *work);

/* A connection on @sock, one reference, not read yet. */
static struct kfab_tcp_conn *kfab_tcp_conn_new(struct kfab_node *node,
					       struct socket *sock)
{
	struct kfab_tcp_conn *tc = kzalloc(sizeof(*tc), GFP_KERNEL);

	if (!tc)
		return NULL;
	tc->rx_buf = kmalloc(KFAB_TCP_RX_BUF, GFP_KERNEL);
	if (!tc->rx_buf) {
		kfree(tc);
		return NULL;
	}
	tc->conn.node = node;
	tc->conn.engine = &kfab_tcp_engine;
	tc->conn.out = &tc->link;
	tc->link.engine = &kfab_tcp_engine;
	tc->link.conn = &tc->conn;
	tc->sock = sock;
	INIT_WORK(&tc->rx_work, kfab_tcp_rx_work);
	kref_init(&tc->ref);
	return tc;
}

/*
 * Start reading @tc, with the reference the caller gives.  A node that
 * goes meanwhile finds it on @conns (kfab_conns_close()).
 */
static void kfab_tcp_conn_read(struct kfab_tcp_conn *tc)
{
	struct kfab_node *node = tc->conn.node;

	mutex_lock(&node->lock);
	list_add_tail(&tc->conn.link, &node->conns);
	mutex_unlock(&node->lock);
	queue_work(kfab_net_wq, &tc->rx_work);
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
	/*
	 * Its sender must not block on it while its peer lets it go.  A
	 * frame on a connection given up (-ESTALE) means the other node
	 * still sends on it: a reset, so that it carries the session on.
	 */
	if (rc == -ESTALE)
		tcp_abort(tc->sock->sk, ECONNRESET);
	else
		kernel_sock_shutdown(tc->sock, SHUT_RDWR);
	kfab_conn_closed(&tc->conn, rc);
	mutex_lock(&node->lock);
	list_del(&tc->conn.link);
	mutex_unlock(&node->lock);
	kfab_tcp_conn_put(tc);
}

/*
 * The stream ended: the other node's FIN leaves the socket half open
 * (CLOSE_WAIT), our own shutdown leaves it closing; a reset or an abort
 * (ss -K) closes it at once, and its error goes to whichever of the
 * reader and the sender asks first (sock_error() clears it), so the
 * reader may see only the end.  Return: -ECONNRESET for a closed socket
 * (the session may go on), else -ESHUTDOWN (an end).
 */
static int kfab_tcp_eof(struct socket *sock)
{
	return READ_ONCE(sock->sk->sk_state) == TCP_CLOSE ? -ECONNRESET :
							    -ESHUTDOWN;
}

static int kfab_tcp_recv_sock(struct socket *sock, struct iov_iter *to)
{
	struct msghdr msg = { .msg_flags = MSG_WAITALL | MSG_NOSIGNAL };
	int rc;

	while (iov_iter_count(to)) {
		msg.msg_iter = *to;
		rc = sock_recvmsg(sock, &msg, MSG_WAITALL | MSG_NOSIGNAL);
		if (rc <= 0)
			return rc ? rc : kfab_tcp_eof(sock);
		iov_iter_advance(to, rc);
	}
	return 0;
}

/* Fill the reader's buffer with what the socket holds: at least a byte. */
static int kfab_tcp_rx_fill(struct kfab_tcp_conn *tc)
{
	struct kvec kv = { .iov_base = tc->rx_buf, .iov_len = KFAB_TCP_RX_BUF };
	struct msghdr msg = { .msg_flags = MSG_NOSIGNAL };
	int rc;

	iov_iter_kvec(&msg.msg_iter, ITER_DEST, &kv, 1, KFAB_TCP_RX_BUF);
	rc = sock_recvmsg(tc->sock, &msg, MSG_NOSIGNAL);
	if (rc <= 0)
		return rc ? rc : kfab_tcp_eof(tc->sock);
	tc->rx_head = 0;
	tc->rx_tail = rc;
	return 0;
}

/*
 * Read exactly what @to describes: kernel memory, a receive's pages or
 * nothing (a skip).  The buffer's bytes first, then a long rest straight
 * from the socket, a short one through the buffer.
 */
static int kfab_tcp_recv(struct kfab_conn *conn, struct iov_iter *to)
{
	struct kfab_tcp_conn *tc = kfab_tcp_conn(conn);
	size_t n;
	int rc;

	while (iov_iter_count(to)) {
		n = min_t(size_t, tc->rx_tail - tc->rx_head,
			  iov_iter_count(to));
		if (n) {
			if (copy_to_iter(tc->rx_buf + tc->rx_head, n, to) != n)
				return -EFAULT;
			tc->rx_head += n;
			continue;
		}
		if (iov_iter_count(to) >= KFAB_TCP_RX_DIRECT)
			return kfab_tcp_recv_sock(tc->sock, to);
		rc = kfab_tcp_rx_fill(tc);
		if (rc)
			return rc;
	}
	return 0;
}

/*
 * Its reader's next recv would not block: the buffer holds bytes, or the
 * socket does (read without the socket lock).
 */
static bool kfab_tcp_rx_pending(struct kfab_conn *conn)
{
	struct kfab_tcp_conn *tc = kfab_tcp_conn(conn);

	return tc->rx_head != tc->rx_tail ||
	       !skb_queue_empty_lockless(&tc->sock->sk->sk_receive_queue);
}

/* Wake the connection's receive work: it ends. */
static void kfab_tcp_shutdown(struct kfab_conn *conn)
{
	kernel_sock_shutdown(kfab_tcp_conn(conn)->sock, SHUT_RDWR);
}

/* A connection in becomes its peer's to send on. */
static struct kfab_link *kfab_tcp_hold(struct kfab_conn *conn)
{
	struct kfab_tcp_conn *tc = kfab_tcp_conn(conn);

	kref_get(&tc->ref);
	return &tc->link;
}

/* A peer stops sending on a connection: it ends (its reader too). */
static void kfab_tcp_release(struct kfab_link *link)
{
	struct kfab_tcp_conn *tc = kfab_tcp_link_conn(link);

	kernel_sock_shutdown(tc->sock, SHUT_RDWR);
	kfab_tcp_conn_put(tc);
}

/*
 * As kfab_tcp_release(), for a connection given up while the session goes
 * on: a RST, not a FIN, which the other node, if it still sends on it,
 * would take for the end of the session (kfab_tcp_eof()).  Our reader
 * wakes with the error.
 */
static void kfab_tcp_abort(struct kfab_link *link)
{
	struct kfab_tcp_conn *tc = kfab_tcp_link_conn(link);

	tcp_abort(tc->sock->sk, ECONNRESET);
	kfab_tcp_conn_put(tc);
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
		tc = kfab_tcp_conn_new(node, sock);
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
		tc->conn.local = tl->l->addr;
		pr_debug("kfab: netns %u: connection accepted\n",
			 node->net->ns.inum);
		kfab_tcp_conn_read(tc);
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

/* ---- connections out ---- */

static int kfab_tcp_connect(struct kfab_node *node,
			    const struct kfab_addr *addr,
			    struct kfab_link **out)
{
	struct kfab_tcp_conn *tc;
	struct sockaddr_in6 sin6;
	struct socket *sock;
	int rc;

	kfab_tcp_init_addr(addr, &sin6);
	rc = sock_create_kern(node->net, AF_INET6, SOCK_STREAM, IPPROTO_TCP,
			      &sock);
	if (rc)
		return rc;
	kfab_tcp_tune(sock);
	/* Until it is started, only the answer to our HELLO is read. */
	sock->sk->sk_rcvtimeo = msecs_to_jiffies(READ_ONCE(kfab_peer_timeout_ms));
	rc = kernel_connect(sock, (struct sockaddr *)&sin6, sizeof(sin6), 0);
	if (rc) {
		sock_release(sock);
		return rc;
	}
	tc = kfab_tcp_conn_new(node, sock);
	if (!tc) {
		sock_release(sock);
		return -ENOMEM;
	}
	*out = &tc->link;
	return 0;
}

/* The call was answered: read what comes on it from now on. */
static void kfab_tcp_start(struct kfab_link *link,
			   const struct kfab_addr *local)
{
	struct kfab_tcp_conn *tc = kfab_tcp_link_conn(link);

	tc->sock->sk->sk_rcvtimeo = MAX_SCHEDULE_TIMEOUT;
	tc->conn.local = *local;
	kref_get(&tc->ref);
	kfab_tcp_conn_read(tc);
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
	return kfab_tcp_sendmsg(kfab_tcp_link_conn(link)->sock, &msg);
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
		return kfab_tcp_sendmsg(kfab_tcp_link_conn(link)->sock, &msg);
	return kfab_sock_send_pages(kfab_tcp_link_conn(link)->sock, &msg);
}

/* The answer to our HELLO, read before the connection is started. */
static int kfab_tcp_recv_link(struct kfab_link *link, struct iov_iter *to)
{
	return kfab_tcp_recv_sock(kfab_tcp_link_conn(link)->sock, to);
}

const struct kfab_engine kfab_tcp_engine = {
	.name = "tcp",
	.listen = kfab_tcp_listen,
	.unlisten = kfab_tcp_unlisten,
	.connect = kfab_tcp_connect,
	.start = kfab_tcp_start,
	.hold = kfab_tcp_hold,
	.release = kfab_tcp_release,
	.abort = kfab_tcp_abort,
	.send_kvec = kfab_tcp_send_kvec,
	.send_pages = kfab_tcp_send_pages,
	.recv = kfab_tcp_recv,
	.recv_link = kfab_tcp_recv_link,
	.shutdown = kfab_tcp_shutdown,
	.rx_pending = kfab_tcp_rx_pending,
};
