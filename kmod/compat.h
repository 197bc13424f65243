/* SPDX-License-Identifier: GPL-2.0 */
/*
 * memprepop: what differs between the kernels it builds for (6.1 to 7.x).
 * What a kernel offers is probed when the module is built (the files of
 * probe/, into probes.h), never read off its version; only a change of
 * behaviour that no header shows is (MPP_HOLES_STOP), and a selftest
 * compares it with the kernel's own madvise().
 */
#ifndef _MEMPREPOP_COMPAT_H
#define _MEMPREPOP_COMPAT_H

#include <linux/eventfd.h>
#include <linux/mempolicy.h>
#include <linux/mm.h>
#include <linux/version.h>

#include "probes.h"

#ifdef MPP_HAVE_FOLIO_BATCH_H
#include <linux/folio_batch.h>
#else
#include <linux/pagevec.h>
#endif

/* 6.5 dropped the vmas argument of get_user_pages_remote() */
static inline long mpp_get_user_pages_remote(struct mm_struct *mm,
					     unsigned long start,
					     unsigned long nr_pages,
					     unsigned int gup_flags,
					     struct page **pages, int *locked)
{
#ifdef MPP_HAVE_GUP_REMOTE_NO_VMAS
	return get_user_pages_remote(mm, start, nr_pages, gup_flags, pages,
				     locked);
#else
	return get_user_pages_remote(mm, start, nr_pages, gup_flags, pages,
				     NULL, locked);
#endif
}

/* 6.9 added weighted interleave: placed over its nodes like interleave */
static inline bool mpp_mode_is_interleave(unsigned short mode)
{
#ifdef MPP_HAVE_MPOL_WEIGHTED_INTERLEAVE
	if (mode == MPOL_WEIGHTED_INTERLEAVE)
		return true;
#endif
	return mode == MPOL_INTERLEAVE;
}

/*
 * Before 6.9, madvise(MADV_POPULATE_WRITE) walked the range VMA by VMA as
 * every madvise() does: a hole was remembered as ENOMEM and the walk went
 * on, the first failing mapping ended it with its own errno. Since 6.9
 * (commit "mm/madvise: make MADV_POPULATE_(READ|WRITE) handle
 * VM_FAULT_RETRY properly") it faults page by page and the first hole ends
 * it with ENOMEM. memprepop does what the madvise() of the kernel it runs
 * on does.
 */
#define MPP_HOLES_STOP	(LINUX_VERSION_CODE >= KERNEL_VERSION(6, 9, 0))

/*
 * lru_add_drain(), which madvise's populate calls when it has faulted, is
 * not exported; releasing an empty batch drains this CPU's LRU and mlock
 * batches the same way (6.5 replaced the pagevec with the folio_batch).
 */
static inline void mpp_lru_add_drain(void)
{
#if defined(MPP_HAVE_FOLIO_BATCH_H) || defined(MPP_HAVE_FOLIO_BATCH_RELEASE)
	struct folio_batch fbatch;

	folio_batch_init(&fbatch);
	__folio_batch_release(&fbatch);
#else
	struct pagevec pvec;

	pagevec_init(&pvec);
	__pagevec_release(&pvec);
#endif
}

/* 6.8 dropped the count argument of eventfd_signal(): it adds 1 */
static inline void mpp_eventfd_signal(struct eventfd_ctx *ctx)
{
#ifdef MPP_HAVE_EVENTFD_SIGNAL_ONE
	eventfd_signal(ctx);
#else
	eventfd_signal(ctx, 1);
#endif
}

#endif /* _MEMPREPOP_COMPAT_H */
