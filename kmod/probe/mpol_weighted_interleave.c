// SPDX-License-Identifier: GPL-2.0
/* The weighted interleave policy (6.9) */
#include <linux/mempolicy.h>

int mpp_probe = MPOL_WEIGHTED_INTERLEAVE;
