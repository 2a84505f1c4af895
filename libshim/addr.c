// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libshim: kfab addresses (struct kfab_addr, uapi/linux/kfab.h) as the
 * provider sees them: which are valid, their string form (FI_ADDR_STR,
 * fi_av_straddr), and the nodes and services of fi_getinfo(3) and
 * fi_av_insertsvc(3) turned into them.  The one parser and the one printer
 * of the string form live here; Documentation/av.rst has the grammar:
 *
 *   fi_kfab://IPV4[:PORT]/EP        IPv4, stored v4-mapped (::ffff:a.b.c.d)
 *   fi_kfab://[IPV6][:PORT]/EP      any other IPv6 address
 *   fi_kfab://local/EP              KFAB_ADDR_LOCAL: this machine
 *   fi_kfab://any/EP                source only: any address of this node
 *
 *   EP = SERVICE                    1..65535, incarnation 0
 *      | NUMBER.INCARNATION         NUMBER > 65535, INCARNATION 8 hex digits
 *      | 0                          source only: a number of the module's
 *
 * PORT is the node's listener port, 1..65535, KFAB_PORT_DEFAULT when left
 * out; the printer always writes it.  Decimal numbers have no sign and no
 * leading zero.  Printing any valid address and parsing the result gives
 * the same bytes back.
 *
 * Nothing here logs or touches the device: selftests/kfab_addr links this
 * file alone.  Byte order: the fields of struct kfab_addr are big-endian
 * and only ever read and written through be16toh() and friends.
 */
#include <arpa/inet.h>
#include <endian.h>
#include <inttypes.h>
#include <netdb.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "internal.h"

#define SHIM_ADDR_PREFIX	"fi_kfab://"
#define SHIM_ADDR_PREFIX_LEN	(sizeof(SHIM_ADDR_PREFIX) - 1)
#define SHIM_ADDR_HOST_LOCAL	"local"
#define SHIM_ADDR_HOST_ANY	"any"
/* What the printer writes for bytes that are no address of either kind. */
#define SHIM_ADDR_HOST_INVALID	"invalid"
/* Hex digits of an incarnation */
#define SHIM_ADDR_INC_DIGITS	8

_Static_assert(sizeof(struct kfab_addr) == 32, "struct kfab_addr is 32 bytes");

static const uint8_t shim_v4mapped_prefix[12] = {
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff
};

bool shim_addr_is_v4mapped(const uint8_t node[16])
{
	return !memcmp(node, shim_v4mapped_prefix, sizeof(shim_v4mapped_prefix));
}

/* :: and ::ffff:0.0.0.0 name no node. */
static bool shim_addr_node_unspecified(const uint8_t node[16])
{
	static const uint8_t zero[16];

	if (shim_addr_is_v4mapped(node))
		return !memcmp(node + 12, zero, 4);
	return !memcmp(node, zero, 16);
}

static bool shim_addr_node_zero(const uint8_t node[16])
{
	static const uint8_t zero[16];

	return !memcmp(node, zero, 16);
}

/**
 * shim_addr_check() - is @a an address of @kinds?
 * @a: the address
 * @kinds: SHIM_ADDR_EP, SHIM_ADDR_SRC or both (either will do)
 *
 * Every kind: @__reserved 0; KFAB_ADDR_LOCAL and KFAB_ADDR_UNSPEC with
 * @port and @node 0; KFAB_ADDR_INET with a port and a node that is not the
 * unspecified address.  SHIM_ADDR_EP (what AVs hold, what fi_getname
 * gives): LOCAL or INET, @ep not 0, @incarnation 0 exactly when @ep is a
 * service (up to KFAB_SERVICE_MAX).  SHIM_ADDR_SRC (what KFAB_IOC_EP_OPEN
 * takes): any family, @incarnation 0, @ep 0 or a service.
 *
 * Return: 0 or -FI_EINVAL.
 */
int shim_addr_check(const struct kfab_addr *a, unsigned int kinds)
{
	uint64_t ep = be64toh(a->ep);
	uint32_t inc = be32toh(a->incarnation);
	bool ok = false;

	if (a->__reserved)
		return -FI_EINVAL;
	switch (a->family) {
	case KFAB_ADDR_UNSPEC:
	case KFAB_ADDR_LOCAL:
		if (a->port || !shim_addr_node_zero(a->node))
			return -FI_EINVAL;
		break;
	case KFAB_ADDR_INET:
		if (!a->port || shim_addr_node_unspecified(a->node))
			return -FI_EINVAL;
		break;
	default:
		return -FI_EINVAL;
	}
	if (kinds & SHIM_ADDR_EP)
		ok |= a->family != KFAB_ADDR_UNSPEC && ep &&
		      (ep <= KFAB_SERVICE_MAX) == !inc;
	if (kinds & SHIM_ADDR_SRC)
		ok |= !inc && ep <= KFAB_SERVICE_MAX;
	return ok ? 0 : -FI_EINVAL;
}

/* ---- parsing ---- */

/*
 * Decimal digits from @s up to @end (exclusive): no sign, no leading zero
 * (but "0" itself), at most @max.  Return: true when that is what it is.
 */
static bool shim_parse_dec(const char *s, const char *end, uint64_t max,
			   uint64_t *val)
{
	uint64_t v = 0;

	if (s == end || (*s == '0' && end - s > 1))
		return false;
	for (; s < end; s++) {
		unsigned int d = (unsigned char)*s - '0';

		if (d > 9 || v > (max - d) / 10)
			return false;
		v = v * 10 + d;
	}
	*val = v;
	return true;
}

/* Exactly SHIM_ADDR_INC_DIGITS hex digits, either case. */
static bool shim_parse_inc(const char *s, const char *end, uint32_t *val)
{
	uint32_t v = 0;

	if (end - s != SHIM_ADDR_INC_DIGITS)
		return false;
	for (; s < end; s++) {
		unsigned char c = *s;
		unsigned int d;

		if (c >= '0' && c <= '9')
			d = c - '0';
		else if (c >= 'a' && c <= 'f')
			d = c - 'a' + 10;
		else if (c >= 'A' && c <= 'F')
			d = c - 'A' + 10;
		else
			return false;
		v = v << 4 | d;
	}
	*val = v;
	return true;
}

/* "1".."65535" from @s to @end */
static bool shim_parse_port(const char *s, const char *end, uint16_t *port)
{
	uint64_t v;

	if (!shim_parse_dec(s, end, UINT16_MAX, &v) || !v)
		return false;
	*port = v;
	return true;
}

/* A numeric address of either family, IPv4 mapped: 0 or -FI_EINVAL. */
static int shim_parse_numeric(const char *host, bool v6_only, uint8_t node[16])
{
	struct in_addr in4;

	if (!v6_only && inet_pton(AF_INET, host, &in4) == 1) {
		memcpy(node, shim_v4mapped_prefix, 12);
		memcpy(node + 12, &in4, 4);
		return 0;
	}
	if (inet_pton(AF_INET6, host, node) == 1)
		return 0;
	return -FI_EINVAL;
}

/* The EP part from @s to @end into @a's ep and incarnation. */
static bool shim_parse_ep(const char *s, const char *end,
			  struct kfab_addr *a)
{
	const char *dot = memchr(s, '.', end - s);
	uint32_t inc = 0;
	uint64_t ep;

	if (!shim_parse_dec(s, dot ? dot : end, UINT64_MAX, &ep))
		return false;
	/* An incarnation goes with the module's numbers only. */
	if (dot && (ep <= KFAB_SERVICE_MAX ||
		    !shim_parse_inc(dot + 1, end, &inc)))
		return false;
	a->ep = htobe64(ep);
	a->incarnation = htobe32(inc);
	return true;
}

/**
 * shim_addr_parse() - the string form of an address, read
 * @s: "fi_kfab://...", NUL-terminated within SHIM_ADDR_STRLEN bytes
 * @kinds: what @s may be (shim_addr_check()): SHIM_ADDR_EP, SHIM_ADDR_SRC
 *	or both
 * @a: out: the address; untouched on error
 *
 * Return: 0, or -FI_EINVAL for anything that is not exactly an address of
 * @kinds in the grammar at the top of this file.
 */
int shim_addr_parse(const char *s, unsigned int kinds, struct kfab_addr *a)
{
	struct kfab_addr out = { 0 };
	char host[INET6_ADDRSTRLEN];
	const char *p, *end, *h, *h_end, *slash;
	bool bracketed;
	size_t len;

	if (!s)
		return -FI_EINVAL;
	len = strnlen(s, SHIM_ADDR_STRLEN);
	if (len == SHIM_ADDR_STRLEN ||
	    strncmp(s, SHIM_ADDR_PREFIX, SHIM_ADDR_PREFIX_LEN))
		return -FI_EINVAL;
	p = s + SHIM_ADDR_PREFIX_LEN;
	end = s + len;

	/* The host: [IPV6], or everything up to ':' or '/'. */
	bracketed = *p == '[';
	if (bracketed) {
		h = p + 1;
		h_end = memchr(h, ']', end - h);
		if (!h_end)
			return -FI_EINVAL;
		p = h_end + 1;
	} else {
		h = p;
		h_end = h + strcspn(h, ":/");
		p = h_end;
	}
	if ((size_t)(h_end - h) >= sizeof(host))
		return -FI_EINVAL;
	memcpy(host, h, h_end - h);
	host[h_end - h] = '\0';

	slash = memchr(p, '/', end - p);
	if (!slash)
		return -FI_EINVAL;
	if (bracketed) {
		/* Brackets hold an IPv6 address and nothing else. */
		if (shim_parse_numeric(host, true, out.node))
			return -FI_EINVAL;
		out.family = KFAB_ADDR_INET;
	} else if (!strcmp(host, SHIM_ADDR_HOST_LOCAL)) {
		out.family = KFAB_ADDR_LOCAL;
	} else if (!strcmp(host, SHIM_ADDR_HOST_ANY)) {
		out.family = KFAB_ADDR_UNSPEC;
	} else {
		struct in_addr in4;

		if (inet_pton(AF_INET, host, &in4) != 1)
			return -FI_EINVAL;
		memcpy(out.node, shim_v4mapped_prefix, 12);
		memcpy(out.node + 12, &in4, 4);
		out.family = KFAB_ADDR_INET;
	}

	/* ":PORT" for a node on the network only */
	if (p < slash) {
		uint16_t port;

		if (*p != ':' || out.family != KFAB_ADDR_INET ||
		    !shim_parse_port(p + 1, slash, &port))
			return -FI_EINVAL;
		out.port = htobe16(port);
	} else if (out.family == KFAB_ADDR_INET) {
		out.port = htobe16(KFAB_PORT_DEFAULT);
	}

	if (!shim_parse_ep(slash + 1, end, &out) || shim_addr_check(&out, kinds))
		return -FI_EINVAL;
	*a = out;
	return 0;
}

/* ---- printing ---- */

/**
 * shim_addr_format() - the string form of an address
 * @a: the address
 * @buf: where it goes, truncated to @len bytes with a NUL (nothing when
 *	@len is 0)
 * @len: the size of @buf
 *
 * An address of either kind (shim_addr_check()) is printed in the grammar
 * above, and shim_addr_parse() reads it back to the same bytes.  Anything
 * else prints as "fi_kfab://invalid/" and its 32 bytes in hex, which the
 * parser refuses.
 *
 * Return: the length of the whole string, without its NUL (at most
 * SHIM_ADDR_STRLEN - 1), as snprintf() counts it.
 */
size_t shim_addr_format(const struct kfab_addr *a, char *buf, size_t len)
{
	char str[SHIM_ADDR_STRLEN], host[INET6_ADDRSTRLEN + 2];
	uint64_t ep = be64toh(a->ep);
	size_t n, i;
	int w;

	if (shim_addr_check(a, SHIM_ADDR_EP | SHIM_ADDR_SRC)) {
		const uint8_t *b = (const uint8_t *)a;

		n = snprintf(str, sizeof(str), SHIM_ADDR_PREFIX "%s/",
			     SHIM_ADDR_HOST_INVALID);
		for (i = 0; i < sizeof(*a); i++)
			n += snprintf(str + n, sizeof(str) - n, "%02x", b[i]);
		goto out;
	}

	switch (a->family) {
	case KFAB_ADDR_LOCAL:
		strcpy(host, SHIM_ADDR_HOST_LOCAL);
		break;
	case KFAB_ADDR_UNSPEC:
		strcpy(host, SHIM_ADDR_HOST_ANY);
		break;
	default:
		if (shim_addr_is_v4mapped(a->node)) {
			inet_ntop(AF_INET, a->node + 12, host, sizeof(host));
		} else {
			host[0] = '[';
			inet_ntop(AF_INET6, a->node, host + 1, sizeof(host) - 2);
			strcat(host, "]");
		}
		break;
	}
	w = snprintf(str, sizeof(str), SHIM_ADDR_PREFIX "%s", host);
	if (a->family == KFAB_ADDR_INET)
		w += snprintf(str + w, sizeof(str) - w, ":%u",
			      be16toh(a->port));
	if (ep > KFAB_SERVICE_MAX)
		w += snprintf(str + w, sizeof(str) - w, "/%" PRIu64 ".%08" PRIx32,
			      ep, be32toh(a->incarnation));
	else
		w += snprintf(str + w, sizeof(str) - w, "/%" PRIu64, ep);
	n = w;
out:
	if (len) {
		size_t copy = n < len ? n : len - 1;

		memcpy(buf, str, copy);
		buf[copy] = '\0';
	}
	return n;
}

/* ---- nodes and services (fi_getinfo(3), fi_av_insertsvc(3)) ---- */

/**
 * shim_addr_is_str() - does @node name a whole address ("fi_kfab://...")?
 * @node: a node as fi_getinfo() and fi_av_insertsvc() take it, or NULL
 *
 * Any string with "://" counts (fi_getinfo(3): an FI_ADDR_STR node), so a
 * malformed or foreign one is refused instead of looked up as a host name.
 */
bool shim_addr_is_str(const char *node)
{
	return node && strstr(node, "://");
}

/**
 * shim_addr_service() - a service: decimal 1..KFAB_SERVICE_MAX
 * @service: the string; NULL is no service
 * @ep: out: its number
 *
 * Return: 0 or -FI_EINVAL.
 */
int shim_addr_service(const char *service, uint64_t *ep)
{
	uint64_t v;

	if (!service ||
	    !shim_parse_dec(service, service + strlen(service),
			    KFAB_SERVICE_MAX, &v) || !v)
		return -FI_EINVAL;
	*ep = v;
	return 0;
}

/**
 * shim_addr_split_node() - a node's host and port
 * @node: "local", "HOST", "HOST:PORT" (a name or an IPv4 address),
 *	"IPV6" (two colons or more: no port) or "[IPV6]" with an optional
 *	":PORT"
 * @host: out: the host, NUL-terminated; @hostlen bytes
 * @port: out: the port, KFAB_PORT_DEFAULT when none is given, 0 for
 *	"local"
 * @v6: out: the host was bracketed, so it must be a numeric IPv6 address
 *
 * Return: 0, or -FI_EINVAL for an empty or overlong host, a bad port, a
 * port with "local", or junk around brackets.
 */
int shim_addr_split_node(const char *node, char *host, size_t hostlen,
			 uint16_t *port, bool *v6)
{
	const char *h = node, *h_end, *colon;
	size_t len = strnlen(node, hostlen + 8);

	*v6 = false;
	if (len > hostlen + 7)
		return -FI_EINVAL;
	if (*node == '[') {
		h = node + 1;
		h_end = strchr(h, ']');
		if (!h_end)
			return -FI_EINVAL;
		colon = h_end[1] ? h_end + 1 : NULL;
		if (colon && *colon != ':')
			return -FI_EINVAL;
		*v6 = true;
	} else {
		colon = strchr(node, ':');
		if (colon && strchr(colon + 1, ':'))
			colon = NULL;	/* a bare IPv6 address */
		h_end = colon ? colon : node + len;
	}
	if (h_end == h || (size_t)(h_end - h) >= hostlen)
		return -FI_EINVAL;
	memcpy(host, h, h_end - h);
	host[h_end - h] = '\0';

	*port = KFAB_PORT_DEFAULT;
	if (colon && !shim_parse_port(colon + 1, colon + strlen(colon), port))
		return -FI_EINVAL;
	if (!*v6 && !strcmp(host, SHIM_ADDR_HOST_LOCAL)) {
		if (colon)
			return -FI_EINVAL;
		*port = 0;
	}
	return 0;
}

/*
 * A host of digits and dots only is an IPv4 address or nothing: never
 * handed to getaddrinfo(), whose inet_aton() reads "10" as 0.0.0.10.
 */
static bool shim_addr_looks_numeric(const char *host)
{
	return host[strspn(host, "0123456789.")] == '\0';
}

/* Add @n to an IPv4 (mapped) or IPv6 address: false when it overflows. */
static bool shim_addr_node_add(uint8_t node[16], uint64_t n)
{
	int i, last = shim_addr_is_v4mapped(node) ? 12 : 0;

	for (i = 15; i >= last && n; i--) {
		n += node[i];
		node[i] = n & 0xff;
		n >>= 8;
	}
	return !n;
}

/**
 * shim_addr_resolve_host() - a host's node address
 * @host: a host name or numeric address (shim_addr_split_node())
 * @v6: only a numeric IPv6 address will do
 * @numeric: FI_NUMERICHOST: no name lookup
 * @node: out: the address, IPv4 mapped into IPv6
 *
 * A name is looked up with getaddrinfo() (AF_UNSPEC) and its first answer
 * taken.  The unspecified address names no node.
 *
 * Return: 0; -FI_EINVAL for a malformed or unspecified address;
 * -FI_ENODATA when the name does not resolve; -FI_ENOMEM.
 */
int shim_addr_resolve_host(const char *host, bool v6, bool numeric,
			   uint8_t node[16])
{
	struct addrinfo hints = {
		.ai_family = AF_UNSPEC,
		.ai_socktype = SOCK_STREAM,
	};
	struct addrinfo *ai;
	int ret;

	if (!shim_parse_numeric(host, v6, node))
		return shim_addr_node_unspecified(node) ? -FI_EINVAL : 0;
	/* Brackets hold a numeric IPv6 address only. */
	if (v6 || shim_addr_looks_numeric(host))
		return -FI_EINVAL;
	if (numeric)
		return -FI_ENODATA;	/* a name, which we may not look up */
	ret = getaddrinfo(host, NULL, &hints, &ai);
	if (ret)
		return ret == EAI_MEMORY ? -FI_ENOMEM : -FI_ENODATA;
	if (ai->ai_family == AF_INET) {
		const struct sockaddr_in *sin = (const void *)ai->ai_addr;

		memcpy(node, shim_v4mapped_prefix, 12);
		memcpy(node + 12, &sin->sin_addr, 4);
		ret = 0;
	} else if (ai->ai_family == AF_INET6) {
		const struct sockaddr_in6 *sin6 = (const void *)ai->ai_addr;

		memcpy(node, &sin6->sin6_addr, 16);
		ret = 0;
	} else {
		ret = -FI_ENODATA;
	}
	freeaddrinfo(ai);
	if (!ret && shim_addr_node_unspecified(node))
		ret = -FI_EINVAL;
	return ret;
}

/**
 * shim_addr_from_node() - the node of fi_getinfo() or fi_av_insertsvc()
 * @node: NULL or "local" (KFAB_ADDR_LOCAL), else a host with an optional
 *	port (shim_addr_split_node())
 * @numeric: FI_NUMERICHOST
 * @a: out: family, port and node set; @ep and @incarnation 0
 *
 * Return: 0, -FI_EINVAL, -FI_ENODATA or -FI_ENOMEM
 * (shim_addr_resolve_host()).
 */
int shim_addr_from_node(const char *node, bool numeric, struct kfab_addr *a)
{
	char host[SHIM_ADDR_HOSTLEN];
	uint16_t port;
	bool v6;
	int ret;

	*a = (struct kfab_addr){ .family = KFAB_ADDR_LOCAL };
	if (!node)
		return 0;
	ret = shim_addr_split_node(node, host, sizeof(host), &port, &v6);
	if (ret)
		return ret;
	if (!port)
		return 0;	/* "local" */
	ret = shim_addr_resolve_host(host, v6, numeric, a->node);
	if (ret)
		return ret;
	a->family = KFAB_ADDR_INET;
	a->port = htobe16(port);
	return 0;
}

/**
 * shim_addr_sym_nodes() - the nodes of fi_av_insertsym()
 * @node: as for shim_addr_from_node(), but not NULL: a numeric address
 *	(IPv4, IPv6 or [IPv6], with an optional port), "local", or a host
 *	name, which must end in a number when @nodecnt > 1
 * @nodecnt: how many nodes, from @node on (not 0)
 * @out: out: @nodecnt addresses, family, port and node set
 *
 * fi_av(3): a numeric address counts up as a number (10.1.1.255 is followed
 * by 10.1.2.0); a host name's numeric suffix counts up with the width it
 * has ("node08" is followed by "node09", "node10"), each name looked up.
 * "local" names one node only.
 *
 * Return: 0; -FI_EINVAL for a malformed node, a range that overflows, or
 * several nodes of "local" or of a name without a number; -FI_ENODATA when
 * a name does not resolve; -FI_ENOMEM.
 */
int shim_addr_sym_nodes(const char *node, size_t nodecnt,
			struct kfab_addr *out)
{
	char host[SHIM_ADDR_HOSTLEN], name[SHIM_ADDR_HOSTLEN];
	struct kfab_addr base = { .family = KFAB_ADDR_INET };
	size_t i, digits, stem;
	uint16_t port;
	uint64_t first;
	bool v6;
	int ret;

	if (!node || !nodecnt || shim_addr_is_str(node))
		return -FI_EINVAL;
	ret = shim_addr_split_node(node, host, sizeof(host), &port, &v6);
	if (ret)
		return ret;
	if (!port) {
		/* "local" */
		if (nodecnt > 1)
			return -FI_EINVAL;
		out[0] = (struct kfab_addr){ .family = KFAB_ADDR_LOCAL };
		return 0;
	}
	base.port = htobe16(port);

	if (!shim_parse_numeric(host, v6, base.node)) {
		for (i = 0; i < nodecnt; i++) {
			out[i] = base;
			if (!shim_addr_node_add(out[i].node, i) ||
			    shim_addr_node_unspecified(out[i].node))
				return -FI_EINVAL;
		}
		return 0;
	}
	if (v6 || shim_addr_looks_numeric(host))
		return -FI_EINVAL;

	/* A host name: "stem" and a numeric suffix of @digits digits. */
	stem = strlen(host);
	while (stem && host[stem - 1] >= '0' && host[stem - 1] <= '9')
		stem--;
	digits = strlen(host) - stem;
	if (nodecnt > 1 && (!digits || digits > 18))
		return -FI_EINVAL;
	first = 0;
	for (i = stem; i < stem + digits; i++)
		first = first * 10 + (host[i] - '0');
	for (i = 0; i < nodecnt; i++) {
		if (nodecnt == 1) {
			strcpy(name, host);
		} else {
			int n = snprintf(name, sizeof(name), "%.*s%0*" PRIu64,
					 (int)stem, host, (int)digits,
					 first + i);

			if (n < 0 || (size_t)n >= sizeof(name) ||
			    first + i < first)
				return -FI_EINVAL;
		}
		out[i] = base;
		ret = shim_addr_resolve_host(name, false, false, out[i].node);
		if (ret)
			return ret;
	}
	return 0;
}

/**
 * shim_addr_out() - an address as an application gets it
 * @a: the address
 * @format: FI_ADDR_STR: its string form with the NUL; else its bytes
 * @buf: where it goes, @*len bytes of it (a string cut short keeps a NUL)
 * @len: in: the size of @buf; out: the size the whole address needs
 *
 * Return: true when the whole address fit.
 */
bool shim_addr_out(const struct kfab_addr *a, uint32_t format, void *buf,
		   size_t *len)
{
	size_t want, have = *len;

	if (format == FI_ADDR_STR) {
		want = shim_addr_format(a, buf, have) + 1;
	} else {
		want = sizeof(*a);
		if (have)
			memcpy(buf, a, have < want ? have : want);
	}
	*len = want;
	return have >= want;
}

/**
 * shim_addr_in() - an address as an application passes it
 * @buf: FI_ADDR_STR: a string, NUL-terminated within @len bytes (@len 0:
 *	within SHIM_ADDR_STRLEN); else a struct kfab_addr of @len bytes
 * @len: see @buf
 * @format: FI_ADDR_STR or FI_FORMAT_UNSPEC
 * @kinds: what the address may be (shim_addr_check())
 * @a: out: the address
 *
 * Return: 0 or -FI_EINVAL.
 */
int shim_addr_in(const void *buf, size_t len, uint32_t format,
		 unsigned int kinds, struct kfab_addr *a)
{
	struct kfab_addr tmp;

	if (!buf)
		return -FI_EINVAL;
	if (format == FI_ADDR_STR) {
		if (len && strnlen(buf, len) == len)
			return -FI_EINVAL;
		return shim_addr_parse(buf, kinds, a);
	}
	if (format != FI_FORMAT_UNSPEC || len != sizeof(tmp))
		return -FI_EINVAL;
	memcpy(&tmp, buf, sizeof(tmp));
	if (shim_addr_check(&tmp, kinds))
		return -FI_EINVAL;
	*a = tmp;
	return 0;
}
