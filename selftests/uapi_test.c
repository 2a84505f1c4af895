// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Host-side test of uapi/linux/kfab.h: the layout asserts of uapi_layout.h
 * hold (at compile time, in C here and in C++ in uapi_test_cxx.cc), and the
 * command numbers follow the ABI conventions at run time.
 */
#include <stdint.h>
#include <linux/kfab.h>

#include "uapi_layout.h"
#include "kselftest_harness.h"

TEST(commands_are_iowr_with_the_kfab_type)
{
	static const unsigned long cmds[] = {
		KFAB_IOC_QUERY, KFAB_IOC_DESTROY, KFAB_IOC_DOMAIN_ALLOC,
	};
	unsigned int i;

	for (i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		EXPECT_EQ(KFAB_TYPE, _IOC_TYPE(cmds[i]));
		EXPECT_EQ(_IOC_READ | _IOC_WRITE, _IOC_DIR(cmds[i]));
		EXPECT_EQ(i, _IOC_NR(cmds[i]));
		/* Every struct starts with its own size. */
		EXPECT_LE(sizeof(uint32_t), _IOC_SIZE(cmds[i]));
		/* Natural alignment of a u64 member never adds padding. */
		EXPECT_EQ(0, _IOC_SIZE(cmds[i]) % sizeof(uint32_t));
	}
}

/* The one command without a struct: an integer argument, nothing else. */
TEST(ring_is_io_beside_the_doorbell)
{
	EXPECT_EQ(KFAB_TYPE, _IOC_TYPE(KFAB_IOC_RING));
	EXPECT_EQ(_IOC_NONE, _IOC_DIR(KFAB_IOC_RING));
	EXPECT_EQ(0, _IOC_SIZE(KFAB_IOC_RING));
	EXPECT_EQ(KFAB_CMD_CANCEL + 1, _IOC_NR(KFAB_IOC_RING));
	EXPECT_NE(KFAB_IOC_DOORBELL, KFAB_IOC_RING);
	EXPECT_NE(0, KFAB_FEATURE_RING & ~KFAB_FEATURE_TEST);
}

TEST(cq_and_counter_commands_are_iowr_in_their_ranges)
{
	static const unsigned long cmds[] = {
		KFAB_IOC_CQ_OPEN, KFAB_IOC_CQ_DRAIN, KFAB_IOC_CQ_READERR,
		KFAB_IOC_CNTR_OPEN, KFAB_IOC_CNTR_UPDATE, KFAB_IOC_CNTR_WAIT,
	};
	unsigned int i;

	for (i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		EXPECT_EQ(KFAB_TYPE, _IOC_TYPE(cmds[i]));
		EXPECT_EQ(_IOC_READ | _IOC_WRITE, _IOC_DIR(cmds[i]));
		EXPECT_LE(0x20, _IOC_NR(cmds[i]));
		EXPECT_GE(0x2f, _IOC_NR(cmds[i]));
		EXPECT_EQ(0, _IOC_SIZE(cmds[i]) % sizeof(uint64_t));
	}
	EXPECT_GE(0x27, _IOC_NR(KFAB_IOC_CQ_READERR));
	EXPECT_LE(0x28, _IOC_NR(KFAB_IOC_CNTR_OPEN));
	EXPECT_EQ(KFAB_CMD_TEST_BASE + 1, _IOC_NR(KFAB_IOC_TEST_CQ_POST));
	/* A ring slot and the ring words stay cache-line sized. */
	EXPECT_EQ(64, sizeof(struct kfab_cq_entry));
	EXPECT_EQ(64, sizeof(struct kfab_cq_ring));
}

TEST(test_commands_do_not_collide_with_production_ones)
{
	EXPECT_LT(KFAB_CMD_DOMAIN_ALLOC, KFAB_CMD_TEST_BASE);
	EXPECT_EQ(KFAB_CMD_TEST_BASE, _IOC_NR(KFAB_IOC_TEST_FAULT));
	EXPECT_EQ(_IOC_READ | _IOC_WRITE, _IOC_DIR(KFAB_IOC_TEST_FAULT));
	/* A range of their own after every production range, none between. */
	EXPECT_EQ(0xf0, KFAB_CMD_TEST_BASE);
	EXPECT_LT(0x4f, KFAB_CMD_TEST_BASE);
	EXPECT_LT(KFAB_CMD_SRX_OPEN, KFAB_CMD_TEST_BASE);
	EXPECT_LT(KFAB_CMD_RX_BUFFERED, KFAB_CMD_TEST_BASE);
	EXPECT_GE(0xff, _IOC_NR(KFAB_IOC_TEST_CQ_POST));
}

TEST_HARNESS_MAIN
