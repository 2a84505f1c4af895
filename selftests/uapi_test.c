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

TEST(test_commands_do_not_collide_with_production_ones)
{
	EXPECT_LT(KFAB_CMD_DOMAIN_ALLOC, KFAB_CMD_TEST_BASE);
	EXPECT_EQ(KFAB_CMD_TEST_BASE, _IOC_NR(KFAB_IOC_TEST_FAULT));
	EXPECT_EQ(_IOC_READ | _IOC_WRITE, _IOC_DIR(KFAB_IOC_TEST_FAULT));
}

TEST_HARNESS_MAIN
