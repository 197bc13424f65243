/* SPDX-License-Identifier: GPL-2.0 */
/*
 * memprepop: what differs between the kernels it builds for (6.11 to 7.x,
 * those with vhost_task). What a kernel offers is probed when the module is
 * built (the files of probe/, into probes.h), never read off its version.
 */
#ifndef _MEMPREPOP_COMPAT_H
#define _MEMPREPOP_COMPAT_H

#include <linux/mm.h>

#include "probes.h"

#ifdef MPP_HAVE_FOLIO_BATCH_H
#include <linux/folio_batch.h>
#else
#include <linux/pagevec.h>
#endif

/*
 * lru_add_drain(), which madvise's populate calls when it has faulted, is
 * not exported; releasing an empty batch drains this CPU's LRU and mlock
 * batches the same way.
 */
static inline void mpp_lru_add_drain(void)
{
	struct folio_batch fbatch;

	folio_batch_init(&fbatch);
	__folio_batch_release(&fbatch);
}

#endif /* _MEMPREPOP_COMPAT_H */
