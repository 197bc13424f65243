// SPDX-License-Identifier: GPL-2.0
/* get_user_pages_remote() without its vmas argument (6.5) */
#include <linux/mm.h>

long (*mpp_probe)(struct mm_struct *mm, unsigned long start,
		  unsigned long nr_pages, unsigned int gup_flags,
		  struct page **pages, int *locked) = get_user_pages_remote;
