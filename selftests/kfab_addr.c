// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * kfab addresses on the host, without a device: libshim/addr.c, linked
 * into this program (libkfab exports none of it).  Every string form of
 * Documentation/av.rst ("Addresses"), both ways; round trips of random
 * addresses; hostile strings, which must all be -FI_EINVAL; random
 * mutations of valid strings, whatever they parse to; the printer's
 * truncation; nodes and services as fi_getinfo(3) and fi_av(3) take them.
 * What needs the provider and the kernel (fi_getinfo, fi_av_insertsvc,
 * endpoints) is in kfab_av and kfab_provider, in the VM.
 */
#include <endian.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "kselftest_harness.h"
#pragma GCC diagnostic pop
#include "kfab_test.h"

#define EP	SHIM_ADDR_EP
#define SRC	SHIM_ADDR_SRC
#define BOTH	(SHIM_ADDR_EP | SHIM_ADDR_SRC)

/* ---- building addresses ---- */

static struct kfab_addr local_addr(uint64_t ep, uint32_t inc)
{
	return kfab_test_addr(KFAB_ADDR_LOCAL, NULL, 0, ep, inc);
}

static struct kfab_addr net_addr(const char *ip, uint16_t port, uint64_t ep,
				 uint32_t inc)
{
	return kfab_test_addr(KFAB_ADDR_INET, ip, port, ep, inc);
}

static struct kfab_addr any_addr(uint64_t ep)
{
	return kfab_test_addr(KFAB_ADDR_UNSPEC, NULL, 0, ep, 0);
}

static bool addr_eq(const struct kfab_addr *a, const struct kfab_addr *b)
{
	return !memcmp(a, b, sizeof(*a));
}

/* The printer's string, which must fit a SHIM_ADDR_STRLEN buffer. */
static const char *fmt(const struct kfab_addr *a, char *buf)
{
	size_t n = shim_addr_format(a, buf, SHIM_ADDR_STRLEN);

	if (n >= SHIM_ADDR_STRLEN || strlen(buf) != n)
		abort();
	return buf;
}

/* A small deterministic generator: the same cases on every run. */
static uint64_t rnd_state = 0x6b666162;	/* "kfab" */

static uint64_t rnd(void)
{
	rnd_state ^= rnd_state << 13;
	rnd_state ^= rnd_state >> 7;
	rnd_state ^= rnd_state << 17;
	return rnd_state;
}

/* A random valid address of @kinds. */
static struct kfab_addr rnd_addr(unsigned int kinds)
{
	struct kfab_addr a = { 0 };
	uint64_t r = rnd();
	size_t i;

	switch (r % (kinds == SRC ? 4 : 3)) {
	case 0:
		a.family = KFAB_ADDR_LOCAL;
		break;
	case 1:		/* IPv4, mapped */
		a.family = KFAB_ADDR_INET;
		a.node[10] = a.node[11] = 0xff;
		for (i = 12; i < 16; i++)
			a.node[i] = rnd();
		a.node[12] |= 1;	/* never 0.0.0.0 */
		a.port = htobe16(rnd() % 65535 + 1);
		break;
	case 2:		/* IPv6, with runs of zeros now and then */
		a.family = KFAB_ADDR_INET;
		for (i = 0; i < 16; i++)
			a.node[i] = rnd() % 3 ? 0 : rnd();
		a.node[15] |= 1;
		if (shim_addr_is_v4mapped(a.node))
			a.node[0] = 0x20;
		a.port = htobe16(rnd() % 65535 + 1);
		break;
	default:	/* any address of this node (sources only) */
		break;
	}
	if (kinds == SRC) {
		a.ep = htobe64(rnd() % (KFAB_SERVICE_MAX + 1));
	} else if (rnd() % 2) {
		a.ep = htobe64(rnd() % KFAB_SERVICE_MAX + 1);
	} else {
		a.ep = htobe64(KFAB_SERVICE_MAX + 1 +
			       rnd() % (UINT64_MAX - KFAB_SERVICE_MAX));
		a.incarnation = htobe32(rnd() | 1);
	}
	if (rnd() % 16 == 0)
		a.ep = htobe64(a.incarnation ? UINT64_MAX : KFAB_SERVICE_MAX);
	return a;
}

/* ---- every form, both ways ---- */

struct form {
	const char *in;		/* what is parsed */
	unsigned int kinds;	/* as what */
	const char *out;	/* what the printer makes of it: NULL = in */
	struct kfab_addr addr;	/* what it is */
};

TEST(every_form_parses_and_prints)
{
	const struct form forms[] = {
		{ "fi_kfab://10.1.2.3:7471/5", EP, NULL,
		  net_addr("10.1.2.3", 7471, 5, 0) },
		{ "fi_kfab://10.1.2.3/5", EP, "fi_kfab://10.1.2.3:7471/5",
		  net_addr("10.1.2.3", 7471, 5, 0) },
		{ "fi_kfab://192.168.0.1:1/65535", EP, NULL,
		  net_addr("192.168.0.1", 1, 65535, 0) },
		{ "fi_kfab://255.255.255.255:65535/1", EP, NULL,
		  net_addr("255.255.255.255", 65535, 1, 0) },
		{ "fi_kfab://127.0.0.1:7471/65536.00000001", EP, NULL,
		  net_addr("127.0.0.1", 7471, 65536, 1) },
		{ "fi_kfab://[fe80::1]:9000/42", EP, NULL,
		  net_addr("fe80::1", 9000, 42, 0) },
		{ "fi_kfab://[2001:db8::7]/70000.0a1b2c3d", EP,
		  "fi_kfab://[2001:db8::7]:7471/70000.0a1b2c3d",
		  net_addr("2001:db8::7", 7471, 70000, 0x0a1b2c3d) },
		{ "fi_kfab://[::1]:7471/8", EP, NULL,
		  net_addr("::1", 7471, 8, 0) },
		{ "fi_kfab://[1:2:3:4:5:6:7:8]:7471/8", EP, NULL,
		  net_addr("1:2:3:4:5:6:7:8", 7471, 8, 0) },
		/* IPv4 written as mapped IPv6 is IPv4 */
		{ "fi_kfab://[::ffff:10.0.0.1]/5", EP,
		  "fi_kfab://10.0.0.1:7471/5", net_addr("10.0.0.1", 7471, 5, 0) },
		/* Hex in either case; printed in lower case. */
		{ "fi_kfab://[FE80::ABCD]:7471/99999.DEADBEEF", EP,
		  "fi_kfab://[fe80::abcd]:7471/99999.deadbeef",
		  net_addr("fe80::abcd", 7471, 99999, 0xdeadbeef) },
		/* IPv6 spelled out is printed compressed */
		{ "fi_kfab://[2001:0db8:0000:0000:0000:0000:0000:0001]/5", EP,
		  "fi_kfab://[2001:db8::1]:7471/5",
		  net_addr("2001:db8::1", 7471, 5, 0) },
		{ "fi_kfab://local/1", EP, NULL, local_addr(1, 0) },
		{ "fi_kfab://local/65535", EP, NULL, local_addr(65535, 0) },
		{ "fi_kfab://local/18446744073709551615.ffffffff", EP, NULL,
		  local_addr(UINT64_MAX, 0xffffffff) },
		/* Sources: any node, a number of the module's */
		{ "fi_kfab://any/5", SRC, NULL, any_addr(5) },
		{ "fi_kfab://any/0", SRC, NULL, any_addr(0) },
		{ "fi_kfab://local/0", SRC, NULL, local_addr(0, 0) },
		{ "fi_kfab://local/7", SRC, NULL, local_addr(7, 0) },
		{ "fi_kfab://10.0.0.2/0", SRC, "fi_kfab://10.0.0.2:7471/0",
		  net_addr("10.0.0.2", 7471, 0, 0) },
		{ "fi_kfab://[fd00::2]:8000/9", BOTH, NULL,
		  net_addr("fd00::2", 8000, 9, 0) },
	};
	char buf[SHIM_ADDR_STRLEN];
	struct kfab_addr a;
	size_t i;

	for (i = 0; i < sizeof(forms) / sizeof(forms[0]); i++) {
		const struct form *f = &forms[i];
		const char *out = f->out ? f->out : f->in;

		memset(&a, 0x5a, sizeof(a));
		ASSERT_EQ(0, shim_addr_parse(f->in, f->kinds, &a)) {
			TH_LOG("%s", f->in);
		}
		EXPECT_TRUE(addr_eq(&f->addr, &a)) {
			TH_LOG("%s", f->in);
		}
		EXPECT_EQ(0, shim_addr_check(&a, f->kinds));
		EXPECT_STREQ(out, fmt(&a, buf));
		/* The printed form is canonical: it comes back the same. */
		ASSERT_EQ(0, shim_addr_parse(out, f->kinds, &a));
		EXPECT_TRUE(addr_eq(&f->addr, &a));
		EXPECT_STREQ(out, fmt(&a, buf));
	}
}

/* An address of one kind is refused as the other. */
TEST(kinds_are_kept_apart)
{
	struct kfab_addr a;

	EXPECT_EQ(-FI_EINVAL, shim_addr_parse("fi_kfab://any/5", EP, &a));
	EXPECT_EQ(-FI_EINVAL, shim_addr_parse("fi_kfab://local/0", EP, &a));
	EXPECT_EQ(-FI_EINVAL, shim_addr_parse("fi_kfab://1.2.3.4/0", EP, &a));
	EXPECT_EQ(-FI_EINVAL,
		  shim_addr_parse("fi_kfab://local/70000.00000001", SRC, &a));
	EXPECT_EQ(-FI_EINVAL,
		  shim_addr_parse("fi_kfab://1.2.3.4/70000.00000001", SRC, &a));
	EXPECT_EQ(0, shim_addr_parse("fi_kfab://local/70000.00000001", BOTH,
				     &a));
	EXPECT_EQ(0, shim_addr_parse("fi_kfab://any/0", BOTH, &a));
}

/* ---- round trips ---- */

TEST(random_addresses_round_trip)
{
	static const unsigned int kinds[] = { EP, SRC };
	char buf[SHIM_ADDR_STRLEN], again[SHIM_ADDR_STRLEN];
	struct kfab_addr a, b;
	size_t k, i;

	for (k = 0; k < 2; k++) {
		for (i = 0; i < 20000; i++) {
			a = rnd_addr(kinds[k]);
			ASSERT_EQ(0, shim_addr_check(&a, kinds[k]));
			fmt(&a, buf);
			memset(&b, 0xa5, sizeof(b));
			ASSERT_EQ(0, shim_addr_parse(buf, kinds[k], &b)) {
				TH_LOG("%s", buf);
			}
			ASSERT_TRUE(addr_eq(&a, &b)) {
				TH_LOG("%s", buf);
			}
			ASSERT_STREQ(buf, fmt(&b, again));
		}
	}
}

/* ---- hostile strings ---- */

TEST(hostile_strings_are_refused)
{
	static const struct {
		const char *s;
		unsigned int kinds;
	} bad[] = {
		/* the prefix */
		{ "", BOTH }, { "fi_kfab:", BOTH }, { "fi_kfab://", BOTH },
		{ "fi_kfab:/local/5", BOTH }, { "fi_kfab:local/5", BOTH },
		{ "FI_KFAB://local/5", BOTH }, { " fi_kfab://local/5", BOTH },
		{ "fi_sockaddr://10.0.0.1:7471/5", BOTH },
		{ "fi_kfab:///5", BOTH }, { "fi_kfab://local", BOTH },
		{ "fi_kfab://10.0.0.1:7471", BOTH },
		/* the endpoint */
		{ "fi_kfab://local/", BOTH }, { "fi_kfab://local/0", EP },
		{ "fi_kfab://local/5x", BOTH }, { "fi_kfab://local/5 ", BOTH },
		{ "fi_kfab://local/ 5", BOTH }, { "fi_kfab://local/05", BOTH },
		{ "fi_kfab://local/00", BOTH }, { "fi_kfab://local/+5", BOTH },
		{ "fi_kfab://local/-5", BOTH }, { "fi_kfab://local/0x5", BOTH },
		{ "fi_kfab://local/5/6", BOTH }, { "fi_kfab://local//5", BOTH },
		{ "fi_kfab://local/5?qos=3", BOTH }, { "fi_kfab://local/5\n", BOTH },
		/* incarnations */
		{ "fi_kfab://local/70000", BOTH },
		{ "fi_kfab://local/70000.", BOTH },
		{ "fi_kfab://local/70000.00000000", BOTH },
		{ "fi_kfab://local/70000.1234567", BOTH },
		{ "fi_kfab://local/70000.123456789", BOTH },
		{ "fi_kfab://local/70000.1234567g", BOTH },
		{ "fi_kfab://local/70000.-1234567", BOTH },
		{ "fi_kfab://local/70000.0x123456", BOTH },
		{ "fi_kfab://local/70000.12345678.", BOTH },
		{ "fi_kfab://local/70000..12345678", BOTH },
		{ "fi_kfab://local/.12345678", BOTH },
		{ "fi_kfab://local/5.00000001", BOTH },
		{ "fi_kfab://local/5.00000000", BOTH },
		{ "fi_kfab://local/65535.00000001", BOTH },
		{ "fi_kfab://local/0.00000001", BOTH },
		{ "fi_kfab://local/70000.00000001", SRC },
		{ "fi_kfab://local/18446744073709551616.12345678", BOTH },
		{ "fi_kfab://local/99999999999999999999.12345678", BOTH },
		{ "fi_kfab://local/65536", SRC },
		/* hosts */
		{ "fi_kfab://any/5", EP }, { "fi_kfab://any:7471/5", SRC },
		{ "fi_kfab://local:7471/5", BOTH }, { "fi_kfab://LOCAL/5", BOTH },
		{ "fi_kfab://localhost/5", BOTH },
		{ "fi_kfab://host.example/5", BOTH },
		{ "fi_kfab://1.2.3/5", BOTH }, { "fi_kfab://1.2.3.4.5/5", BOTH },
		{ "fi_kfab://256.1.1.1/5", BOTH }, { "fi_kfab://01.2.3.4/5", BOTH },
		{ "fi_kfab://10/5", BOTH }, { "fi_kfab://0x7f.0.0.1/5", BOTH },
		{ "fi_kfab://0.0.0.0/5", BOTH }, { "fi_kfab://[::]/5", BOTH },
		{ "fi_kfab://[::ffff:0.0.0.0]/5", BOTH },
		{ "fi_kfab://fe80::1/5", BOTH }, { "fi_kfab://[fe80::1/5", BOTH },
		{ "fi_kfab://fe80::1]/5", BOTH }, { "fi_kfab://[fe80::1]x/5", BOTH },
		{ "fi_kfab://[fe80::1]]/5", BOTH },
		{ "fi_kfab://[[fe80::1]]/5", BOTH },
		{ "fi_kfab://[1.2.3.4]/5", BOTH }, { "fi_kfab://[]/5", BOTH },
		{ "fi_kfab://[fe80::1%eth0]/5", BOTH },
		{ "fi_kfab://[fe80::1::2]/5", BOTH },
		{ "fi_kfab://[12345::1]/5", BOTH },
		{ "fi_kfab://[local]/5", BOTH },
		/* ports */
		{ "fi_kfab://1.2.3.4:/5", BOTH }, { "fi_kfab://1.2.3.4:0/5", BOTH },
		{ "fi_kfab://1.2.3.4:65536/5", BOTH },
		{ "fi_kfab://1.2.3.4:99999999999999999999/5", BOTH },
		{ "fi_kfab://1.2.3.4:07471/5", BOTH },
		{ "fi_kfab://1.2.3.4:+80/5", BOTH },
		{ "fi_kfab://1.2.3.4:80:80/5", BOTH },
		{ "fi_kfab://1.2.3.4:http/5", BOTH },
		{ "fi_kfab://[fe80::1]:/5", BOTH },
		{ "fi_kfab://[fe80::1]:0/5", BOTH },
		{ "fi_kfab://[fe80::1]7471/5", BOTH },
	};
	char overlong[SHIM_ADDR_STRLEN + 64];
	struct kfab_addr a, untouched;
	size_t i;

	memset(&untouched, 0x77, sizeof(untouched));
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		a = untouched;
		EXPECT_EQ(-FI_EINVAL, shim_addr_parse(bad[i].s, bad[i].kinds, &a)) {
			TH_LOG("\"%s\" parsed", bad[i].s);
		}
		EXPECT_TRUE(addr_eq(&untouched, &a));
	}
	EXPECT_EQ(-FI_EINVAL, shim_addr_parse(NULL, BOTH, &a));

	/* Too long to be an address, however it goes on. */
	snprintf(overlong, sizeof(overlong), "fi_kfab://local/%0*d",
		 (int)(sizeof(overlong) - 17), 7);
	EXPECT_EQ(-FI_EINVAL, shim_addr_parse(overlong, BOTH, &a));
	memset(overlong, '1', sizeof(overlong));
	memcpy(overlong, "fi_kfab://local/", 16);
	/* Not even NUL-terminated within reach: never read past the limit. */
	EXPECT_EQ(-FI_EINVAL, shim_addr_parse(overlong, BOTH, &a));
}

/* The longest address there is still fits, exactly. */
TEST(the_longest_address_fits)
{
	struct kfab_addr a = net_addr("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
				       65535, UINT64_MAX, 0xffffffff);
	char buf[SHIM_ADDR_STRLEN];
	const char *s;

	s = fmt(&a, buf);
	EXPECT_STREQ("fi_kfab://[ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff]:65535/18446744073709551615.ffffffff",
		     s);
	EXPECT_GT(SHIM_ADDR_STRLEN, strlen(s) + 1);
	EXPECT_EQ(0, shim_addr_parse(s, EP, &a));
}

/*
 * Valid strings, mutated at random (a byte changed, dropped, doubled or
 * cut): whatever the parser accepts must be a valid address that prints
 * and parses back to itself.
 */
TEST(mutated_strings_parse_to_valid_addresses_or_not_at_all)
{
	char s[SHIM_ADDR_STRLEN + 2], buf[SHIM_ADDR_STRLEN];
	static const char alphabet[] = "0123456789abcdefABCDEF.:/[]%+- xlocany\xff";
	unsigned int accepted = 0, kinds;
	struct kfab_addr a, b;
	size_t i, len, at;

	for (i = 0; i < 200000; i++) {
		kinds = i % 2 ? EP : SRC;
		a = rnd_addr(kinds);
		len = shim_addr_format(&a, s, SHIM_ADDR_STRLEN);
		at = rnd() % len;
		switch (rnd() % 4) {
		case 0:
			s[at] = alphabet[rnd() % (sizeof(alphabet) - 1)];
			break;
		case 1:
			memmove(s + at, s + at + 1, len - at);
			break;
		case 2:
			memmove(s + at + 1, s + at, len - at + 1);
			break;
		default:
			s[at] = '\0';
			break;
		}
		if (shim_addr_parse(s, kinds, &b))
			continue;
		accepted++;
		ASSERT_EQ(0, shim_addr_check(&b, kinds)) {
			TH_LOG("\"%s\"", s);
		}
		fmt(&b, buf);
		ASSERT_EQ(0, shim_addr_parse(buf, kinds, &a));
		ASSERT_TRUE(addr_eq(&a, &b)) {
			TH_LOG("\"%s\" -> \"%s\"", s, buf);
		}
	}
	TH_LOG("%u of 200000 mutations still parsed", accepted);
}

/* ---- the printer ---- */

TEST(the_printer_truncates_like_snprintf)
{
	struct kfab_addr a = net_addr("10.0.0.1", 7471, 42, 0);
	const char *full = "fi_kfab://10.0.0.1:7471/42";
	char buf[SHIM_ADDR_STRLEN];
	size_t n = strlen(full), len;

	for (len = 0; len <= n + 1; len++) {
		memset(buf, '#', sizeof(buf));
		EXPECT_EQ(n, shim_addr_format(&a, buf, len));
		if (!len) {
			EXPECT_EQ('#', buf[0]);
			continue;
		}
		EXPECT_EQ(len - 1 < n ? len - 1 : n, strlen(buf));
		EXPECT_EQ(0, strncmp(full, buf, strlen(buf)));
		EXPECT_EQ('#', buf[len]);
	}
}

/* What is no address prints as such, in a form the parser refuses. */
TEST(invalid_addresses_print_as_invalid)
{
	struct kfab_addr bad[] = {
		{ .family = 9, .ep = htobe64(5) },
		local_addr(5, 0), local_addr(5, 0), local_addr(5, 0),
		local_addr(5, 1), local_addr(70000, 0),
		net_addr("10.0.0.1", 7471, 5, 0),
		net_addr("10.0.0.1", 7471, 5, 0),
		net_addr("::", 7471, 5, 0),
		net_addr("0.0.0.0", 7471, 5, 0),
		{ .family = KFAB_ADDR_UNSPEC, .ep = htobe64(70000),
		  .incarnation = htobe32(1) },
	};
	char buf[SHIM_ADDR_STRLEN];
	struct kfab_addr a;
	size_t i;

	bad[1].__reserved = 1;
	bad[2].port = htobe16(7471);
	bad[3].node[15] = 1;
	bad[6].port = 0;
	bad[7].node[12] = bad[7].node[13] = bad[7].node[14] = 0;
	bad[7].node[15] = 0;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		EXPECT_EQ(-FI_EINVAL, shim_addr_check(&bad[i], BOTH));
		fmt(&bad[i], buf);
		EXPECT_EQ(0, strncmp("fi_kfab://invalid/", buf, 18)) {
			TH_LOG("%zu: %s", i, buf);
		}
		EXPECT_EQ(18 + 64, strlen(buf));
		EXPECT_EQ(-FI_EINVAL, shim_addr_parse(buf, BOTH, &a));
	}
	/* The bytes, in order: family 9 first, ep 5 last. */
	fmt(&bad[0], buf);
	EXPECT_EQ(0, strncmp(buf + 18, "09", 2));
	EXPECT_EQ(61, strspn(buf + 20, "0"));
	EXPECT_STREQ("5", buf + 81);
}

TEST(check_judges_each_field)
{
	struct kfab_addr a;

	a = local_addr(5, 0);
	EXPECT_EQ(0, shim_addr_check(&a, EP));
	EXPECT_EQ(0, shim_addr_check(&a, SRC));
	a = local_addr(0, 0);
	EXPECT_EQ(-FI_EINVAL, shim_addr_check(&a, EP));
	EXPECT_EQ(0, shim_addr_check(&a, SRC));
	a = local_addr(70000, 0xabcdef01);
	EXPECT_EQ(0, shim_addr_check(&a, EP));
	EXPECT_EQ(-FI_EINVAL, shim_addr_check(&a, SRC));
	a = local_addr(70000, 0);
	EXPECT_EQ(-FI_EINVAL, shim_addr_check(&a, BOTH));
	a = local_addr(65535, 1);
	EXPECT_EQ(-FI_EINVAL, shim_addr_check(&a, BOTH));
	a = any_addr(5);
	EXPECT_EQ(-FI_EINVAL, shim_addr_check(&a, EP));
	EXPECT_EQ(0, shim_addr_check(&a, SRC));
	a = net_addr("10.0.0.1", 7471, 5, 0);
	EXPECT_EQ(0, shim_addr_check(&a, BOTH));
	a.family = 3;
	EXPECT_EQ(-FI_EINVAL, shim_addr_check(&a, BOTH));
	a = net_addr("10.0.0.1", 7471, 5, 0);
	a.port = 0;
	EXPECT_EQ(-FI_EINVAL, shim_addr_check(&a, BOTH));
	a = any_addr(5);
	a.node[15] = 1;
	EXPECT_EQ(-FI_EINVAL, shim_addr_check(&a, SRC));
}

/* ---- nodes and services ---- */

TEST(services)
{
	static const char *const bad[] = {
		"0", "65536", "", "05", "+5", "-5", " 5", "5 ", "5x", "0x10",
		"http", "99999999999999999999999",
	};
	uint64_t ep = 0;
	size_t i;

	EXPECT_EQ(0, shim_addr_service("1", &ep));
	EXPECT_EQ(1, ep);
	EXPECT_EQ(0, shim_addr_service("65535", &ep));
	EXPECT_EQ(65535, ep);
	EXPECT_EQ(0, shim_addr_service("7471", &ep));
	EXPECT_EQ(7471, ep);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		EXPECT_EQ(-FI_EINVAL, shim_addr_service(bad[i], &ep)) {
			TH_LOG("\"%s\"", bad[i]);
		}
	}
	EXPECT_EQ(-FI_EINVAL, shim_addr_service(NULL, &ep));
}

TEST(nodes)
{
	static const struct {
		const char *node;
		int ret;
		const char *ip;	/* NULL: KFAB_ADDR_LOCAL */
		uint16_t port;
	} cases[] = {
		{ "local", 0, NULL, 0 },
		{ "10.0.0.1", 0, "10.0.0.1", 7471 },
		{ "10.0.0.1:9000", 0, "10.0.0.1", 9000 },
		{ "fe80::1", 0, "fe80::1", 7471 },
		{ "[fe80::1]", 0, "fe80::1", 7471 },
		{ "[fe80::1]:1", 0, "fe80::1", 1 },
		{ "::ffff:10.0.0.1", 0, "10.0.0.1", 7471 },
		{ "[::ffff:10.0.0.1]:5", 0, "10.0.0.1", 5 },
		{ "local:7471", -FI_EINVAL, NULL, 0 }, { "", -FI_EINVAL, NULL, 0 },
		{ ":7471", -FI_EINVAL, NULL, 0 }, { "10.0.0.1:", -FI_EINVAL, NULL, 0 },
		{ "10.0.0.1:0", -FI_EINVAL, NULL, 0 }, { "10.0.0.1:65536", -FI_EINVAL, NULL, 0 },
		{ "10.0.0.1:x", -FI_EINVAL, NULL, 0 }, { "[fe80::1]x", -FI_EINVAL, NULL, 0 },
		{ "[fe80::1", -FI_EINVAL, NULL, 0 }, { "[fe80::1]:", -FI_EINVAL, NULL, 0 },
		{ "[10.0.0.1]", -FI_EINVAL, NULL, 0 }, { "[host]", -FI_EINVAL, NULL, 0 },
		{ "[]", -FI_EINVAL, NULL, 0 }, { "0.0.0.0", -FI_EINVAL, NULL, 0 },
		{ "::", -FI_EINVAL, NULL, 0 }, { "[::]:5", -FI_EINVAL, NULL, 0 },
		/* digits and dots are an IPv4 address or nothing */
		{ "10", -FI_EINVAL, NULL, 0 }, { "10.1", -FI_EINVAL, NULL, 0 },
		{ "1.2.3.4.5", -FI_EINVAL, NULL, 0 }, { "256.0.0.1", -FI_EINVAL, NULL, 0 },
		/* a name that does not resolve (RFC 6761: .invalid never does) */
		{ "no-such-node.invalid", -FI_ENODATA, NULL, 0 },
		{ "no-such-node.invalid:7000", -FI_ENODATA, NULL, 0 },
	};
	char name[SHIM_ADDR_HOSTLEN + 16];
	struct kfab_addr a, want;
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		memset(&a, 0x33, sizeof(a));
		ASSERT_EQ(cases[i].ret,
			  shim_addr_from_node(cases[i].node, false, &a)) {
			TH_LOG("\"%s\"", cases[i].node);
		}
		if (cases[i].ret)
			continue;
		want = cases[i].ip ? net_addr(cases[i].ip, cases[i].port, 0, 0) :
				     local_addr(0, 0);
		EXPECT_TRUE(addr_eq(&want, &a)) {
			TH_LOG("\"%s\"", cases[i].node);
		}
	}
	/* NULL is this machine. */
	ASSERT_EQ(0, shim_addr_from_node(NULL, false, &a));
	want = local_addr(0, 0);
	EXPECT_TRUE(addr_eq(&want, &a));
	/* A node name longer than any host name */
	memset(name, 'a', sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	EXPECT_EQ(-FI_EINVAL, shim_addr_from_node(name, false, &a));
}

/* localhost resolves from /etc/hosts; FI_NUMERICHOST never looks it up. */
TEST(host_names)
{
	struct kfab_addr a;
	static const uint8_t v4lo[16] = { [10] = 0xff, [11] = 0xff,
					  127, 0, 0, 1 };
	static const uint8_t v6lo[16] = { [15] = 1 };

	ASSERT_EQ(0, shim_addr_from_node("localhost", false, &a));
	EXPECT_EQ(KFAB_ADDR_INET, a.family);
	EXPECT_EQ(7471, be16toh(a.port));
	EXPECT_TRUE(!memcmp(a.node, v4lo, 16) || !memcmp(a.node, v6lo, 16));
	ASSERT_EQ(0, shim_addr_from_node("localhost:9", false, &a));
	EXPECT_EQ(9, be16toh(a.port));
	EXPECT_EQ(-FI_ENODATA, shim_addr_from_node("localhost", true, &a));
	EXPECT_EQ(0, shim_addr_from_node("127.0.0.1", true, &a));
	EXPECT_TRUE(!memcmp(a.node, v4lo, 16));
}

TEST(symmetric_nodes_count_up)
{
	struct kfab_addr out[4], want;

	ASSERT_EQ(0, shim_addr_sym_nodes("10.1.1.254", 3, out));
	want = net_addr("10.1.1.254", 7471, 0, 0);
	EXPECT_TRUE(addr_eq(&want, &out[0]));
	want = net_addr("10.1.1.255", 7471, 0, 0);
	EXPECT_TRUE(addr_eq(&want, &out[1]));
	want = net_addr("10.1.2.0", 7471, 0, 0);
	EXPECT_TRUE(addr_eq(&want, &out[2]));

	ASSERT_EQ(0, shim_addr_sym_nodes("[2001:db8::ffff]:9000", 2, out));
	want = net_addr("2001:db8::ffff", 9000, 0, 0);
	EXPECT_TRUE(addr_eq(&want, &out[0]));
	want = net_addr("2001:db8::1:0", 9000, 0, 0);
	EXPECT_TRUE(addr_eq(&want, &out[1]));

	ASSERT_EQ(0, shim_addr_sym_nodes("fd00::1", 1, out));
	want = net_addr("fd00::1", 7471, 0, 0);
	EXPECT_TRUE(addr_eq(&want, &out[0]));

	ASSERT_EQ(0, shim_addr_sym_nodes("local", 1, out));
	want = local_addr(0, 0);
	EXPECT_TRUE(addr_eq(&want, &out[0]));

	/* A name of one node need not end in a number. */
	ASSERT_EQ(0, shim_addr_sym_nodes("localhost", 1, out));
	EXPECT_EQ(KFAB_ADDR_INET, out[0].family);

	/* Ranges past the last address, and what cannot count */
	EXPECT_EQ(-FI_EINVAL, shim_addr_sym_nodes("255.255.255.255", 2, out));
	EXPECT_EQ(-FI_EINVAL, shim_addr_sym_nodes("::ffff:255.255.255.254", 3,
						  out));
	EXPECT_EQ(-FI_EINVAL,
		  shim_addr_sym_nodes("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
				      2, out));
	EXPECT_EQ(-FI_EINVAL, shim_addr_sym_nodes("local", 2, out));
	EXPECT_EQ(-FI_EINVAL, shim_addr_sym_nodes("localhost", 2, out));
	EXPECT_EQ(-FI_EINVAL, shim_addr_sym_nodes("0.0.0.0", 1, out));
	EXPECT_EQ(-FI_EINVAL, shim_addr_sym_nodes("10.1", 2, out));
	EXPECT_EQ(-FI_EINVAL, shim_addr_sym_nodes("fi_kfab://local/5", 1, out));
	EXPECT_EQ(-FI_EINVAL, shim_addr_sym_nodes(NULL, 1, out));
	EXPECT_EQ(-FI_EINVAL, shim_addr_sym_nodes("10.0.0.1", 0, out));
	/* Names with a number are each looked up. */
	EXPECT_EQ(-FI_ENODATA, shim_addr_sym_nodes("no-such-node8.invalid9",
						   2, out));
}

/* ---- in and out, struct or string ---- */

TEST(addresses_in_and_out)
{
	struct kfab_addr a = net_addr("10.0.0.1", 7471, 70000, 0x1234abcd), b;
	const char *s = "fi_kfab://10.0.0.1:7471/70000.1234abcd";
	char buf[SHIM_ADDR_STRLEN];
	size_t len;

	len = sizeof(buf);
	EXPECT_TRUE(shim_addr_out(&a, FI_ADDR_STR, buf, &len));
	EXPECT_EQ(strlen(s) + 1, len);
	EXPECT_STREQ(s, buf);
	len = 10;
	EXPECT_FALSE(shim_addr_out(&a, FI_ADDR_STR, buf, &len));
	EXPECT_EQ(strlen(s) + 1, len);
	EXPECT_STREQ("fi_kfab:/", buf);
	len = 0;
	EXPECT_FALSE(shim_addr_out(&a, FI_ADDR_STR, NULL, &len));
	EXPECT_EQ(strlen(s) + 1, len);
	len = sizeof(b);
	EXPECT_TRUE(shim_addr_out(&a, FI_FORMAT_UNSPEC, &b, &len));
	EXPECT_EQ(sizeof(b), len);
	EXPECT_TRUE(addr_eq(&a, &b));
	len = 4;
	memset(buf, 0, sizeof(buf));
	EXPECT_FALSE(shim_addr_out(&a, FI_FORMAT_UNSPEC, buf, &len));
	EXPECT_EQ(sizeof(a), len);
	EXPECT_EQ(0, memcmp(buf, &a, 4));
	EXPECT_EQ(0, buf[4]);

	EXPECT_EQ(0, shim_addr_in(s, 0, FI_ADDR_STR, EP, &b));
	EXPECT_TRUE(addr_eq(&a, &b));
	EXPECT_EQ(0, shim_addr_in(s, strlen(s) + 1, FI_ADDR_STR, EP, &b));
	/* No NUL within the length given */
	EXPECT_EQ(-FI_EINVAL, shim_addr_in(s, strlen(s), FI_ADDR_STR, EP, &b));
	EXPECT_EQ(-FI_EINVAL, shim_addr_in(s, 0, FI_ADDR_STR, SRC, &b));
	EXPECT_EQ(0, shim_addr_in(&a, sizeof(a), FI_FORMAT_UNSPEC, EP, &b));
	EXPECT_EQ(-FI_EINVAL, shim_addr_in(&a, sizeof(a) - 1,
					   FI_FORMAT_UNSPEC, EP, &b));
	EXPECT_EQ(-FI_EINVAL, shim_addr_in(&a, sizeof(a) + 1,
					   FI_FORMAT_UNSPEC, EP, &b));
	EXPECT_EQ(-FI_EINVAL, shim_addr_in(&a, sizeof(a), FI_FORMAT_UNSPEC,
					   SRC, &b));
	EXPECT_EQ(-FI_EINVAL, shim_addr_in(&a, sizeof(a), FI_SOCKADDR_IN,
					   EP, &b));
	EXPECT_EQ(-FI_EINVAL, shim_addr_in(NULL, 0, FI_ADDR_STR, EP, &b));
}

TEST_HARNESS_MAIN
