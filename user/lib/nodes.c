// SPDX-License-Identifier: LGPL-2.1-or-later
/* libmemprepop: where a range's pages are, as move_pages(2) reports it. */
#include <errno.h>
#include <numaif.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

/* Pages asked about per move_pages() call. */
#define MPP_STAT_BATCH	1024

int memprepop_node_pages(const void *addr, size_t len, uint64_t *counts,
			 unsigned int nr_nodes)
{
	long page_size = sysconf(_SC_PAGESIZE);
	size_t npages = (len + page_size - 1) / page_size;
	const char *p = addr;
	void *pages[MPP_STAT_BATCH];
	int status[MPP_STAT_BATCH];
	size_t i, done = 0;

	if ((uintptr_t)addr % page_size)
		return -EINVAL;
	memset(counts, 0, nr_nodes * sizeof(*counts));
	while (done < npages) {
		size_t n = npages - done;

		if (n > MPP_STAT_BATCH)
			n = MPP_STAT_BATCH;
		for (i = 0; i < n; i++)
			pages[i] = (void *)(p + (done + i) * page_size);
		if (move_pages(0, n, pages, NULL, status, 0))
			return -errno;
		for (i = 0; i < n; i++)
			if (status[i] >= 0 && (unsigned int)status[i] < nr_nodes)
				counts[status[i]]++;
		done += n;
	}
	return 0;
}
