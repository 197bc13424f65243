/* SPDX-License-Identifier: GPL-2.0 */
/*
 * memprepop: internal interfaces between the device and the populate engine.
 */
#ifndef _MEMPREPOP_H
#define _MEMPREPOP_H

#include <linux/memprepop.h>

struct mm_struct;

/* Flags the module accepts in struct memprepop_populate.flags. */
#define MEMPREPOP_F_SUPPORTED	(MEMPREPOP_F_LOCK | MEMPREPOP_F_NODE_STATS)

int memprepop_populate(struct mm_struct *mm, struct memprepop_populate *req);

#endif /* _MEMPREPOP_H */
