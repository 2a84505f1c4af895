// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The one file that instantiates kfab's tracepoints (trace.h). */
#define CREATE_TRACE_POINTS
#include "trace.h"
