// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// The uapi header must compile as C++ (-std=c++11 and later, -pedantic) with
// the same layout as in C.
#include "uapi_layout.h"

int main()
{
	struct kfab_query q = {};

	q.size = sizeof(q);
	return q.size == 32 ? 0 : 1;
}
