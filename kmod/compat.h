/* SPDX-License-Identifier: GPL-2.0 */
/*
 * memprepop: what differs between the kernels it builds for (6.1 to 6.12).
 */
#ifndef _MEMPREPOP_COMPAT_H
#define _MEMPREPOP_COMPAT_H

#include <linux/mempolicy.h>
#include <linux/mm.h>
#include <linux/version.h>

/* 6.5 dropped the vmas argument of get_user_pages_remote() */
static inline long mpp_get_user_pages_remote(struct mm_struct *mm,
					     unsigned long start,
					     unsigned long nr_pages,
					     unsigned int gup_flags,
					     struct page **pages, int *locked)
{
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 5, 0)
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
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 9, 0)
	if (mode == MPOL_WEIGHTED_INTERLEAVE)
		return true;
#endif
	return mode == MPOL_INTERLEAVE;
}

#endif /* _MEMPREPOP_COMPAT_H */
