// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libmemprepop: on which node each page of a range is, exactly.
 *
 * move_pages(2) without target nodes says where each page is, but not for
 * a page whose PTE NUMA balancing (on by default where there are several
 * nodes) has made PROT_NONE to take a hinting fault: it does not follow such
 * a PTE and reports -EFAULT or -ENOENT, as for a page that is not there.
 * /proc/self/pagemap tells the two apart (bit 63, present, is set for a
 * PROT_NONE PTE). A present page is then read once through
 * process_vm_readv(2), which takes the hinting fault and makes the PTE
 * accessible again, and which fails with EFAULT where a plain read would
 * raise a signal; and move_pages() is asked again. Marking may go on
 * meanwhile, so this is repeated, a few rounds at most. A page that pagemap
 * does not show present is never read: nothing is faulted in.
 */
#include <errno.h>
#include <fcntl.h>
#include <numa.h>
#include <numaif.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "internal.h"

/* Pages asked about per move_pages() call; at most IOV_MAX */
#define MPL_STAT_BATCH		1024
/* Times a batch's unreported present pages are read and asked again */
#define MPL_STAT_ROUNDS		4
/* /proc/self/pagemap: the page is present (mapped, maybe PROT_NONE) */
#define MPL_PAGEMAP_PRESENT	(1ull << 63)

struct mpl_stat {
	pid_t pid;			/* whose pages: 0 for ours */
	long page_size;
	int pagemap;			/* fd; -1: not yet, -2: none */
	size_t n;			/* pages[0, n) are being asked about */
	void *pages[MPL_STAT_BATCH];
	int status[MPL_STAT_BATCH];
	uint64_t entry[MPL_STAT_BATCH];	/* pagemap, from pages[0] on */
	struct iovec remote[MPL_STAT_BATCH];
	char sink[MPL_STAT_BATCH];
};

unsigned int mpl_possible_nodes(void)
{
	int n = numa_num_possible_nodes();

	return n > 0 ? n : 1;
}

/* Counts the pages move_pages() reported; keeps the others in pages[] */
static void mpl_stat_count(struct mpl_stat *st, uint64_t *counts,
			   unsigned int nr_nodes)
{
	size_t i, left = 0;

	for (i = 0; i < st->n; i++) {
		if (st->status[i] < 0)
			st->pages[left++] = st->pages[i];
		else if ((unsigned int)st->status[i] < nr_nodes)
			counts[st->status[i]]++;
	}
	st->n = left;
}

/* Keeps in pages[] those that pagemap shows present; false without it */
static bool mpl_stat_present(struct mpl_stat *st)
{
	uintptr_t first = (uintptr_t)st->pages[0];
	size_t i, left = 0, span;
	ssize_t got;

	if (st->pagemap == -1) {
		char path[64];

		if (st->pid)
			snprintf(path, sizeof(path), "/proc/%d/pagemap",
				 st->pid);
		else
			snprintf(path, sizeof(path), "/proc/self/pagemap");
		st->pagemap = open(path, O_RDONLY | O_CLOEXEC);
		if (st->pagemap < 0)
			st->pagemap = -2;
	}
	if (st->pagemap < 0)
		return false;
	/* pages[] is in address order, within one batch */
	span = ((uintptr_t)st->pages[st->n - 1] - first) / st->page_size + 1;
	got = pread(st->pagemap, st->entry, span * sizeof(st->entry[0]),
		    first / st->page_size * sizeof(st->entry[0]));
	if (got < 0)
		return false;
	span = got / sizeof(st->entry[0]);
	for (i = 0; i < st->n; i++) {
		size_t at = ((uintptr_t)st->pages[i] - first) / st->page_size;

		if (at < span && (st->entry[at] & MPL_PAGEMAP_PRESENT))
			st->pages[left++] = st->pages[i];
	}
	st->n = left;
	return true;
}

/*
 * Reads a byte of each page in pages[] as another process would: a NUMA
 * hinting fault is taken, an inaccessible page fails alone with EFAULT and
 * is dropped from pages[], no use asking about it again.
 */
static void mpl_stat_read(struct mpl_stat *st)
{
	size_t i, left = 0;

	for (i = 0; i < st->n; i++) {
		st->remote[i].iov_base = st->pages[i];
		st->remote[i].iov_len = 1;
	}
	for (i = 0; i < st->n;) {
		struct iovec local = { st->sink, st->n - i };
		ssize_t got = process_vm_readv(st->pid ? st->pid : getpid(),
					       &local, 1,
					       &st->remote[i], st->n - i, 0);

		if (got < 0 && errno != EFAULT) {
			/* Not allowed here (seccomp, ...): ask as they are */
			while (i < st->n)
				st->pages[left++] = st->pages[i++];
			break;
		}
		/* The pages read; then, if short, the one that could not be */
		for (got = got < 0 ? 0 : got; got; got--)
			st->pages[left++] = st->pages[i++];
		i++;
	}
	st->n = left;
}

/* Counts pages [start, start + n) into @counts */
static int mpl_stat_batch(struct mpl_stat *st, const char *start, size_t n,
			  uint64_t *counts, unsigned int nr_nodes)
{
	size_t i;
	int round;

	for (i = 0; i < n; i++)
		st->pages[i] = (void *)(start + i * st->page_size);
	st->n = n;
	for (round = 0;; round++) {
		if (move_pages(st->pid, st->n, st->pages, NULL, st->status,
			       0))
			return -errno;
		mpl_stat_count(st, counts, nr_nodes);
		/* Left: pages not there, and maybe some not reported */
		if (!st->n || round == MPL_STAT_ROUNDS ||
		    !mpl_stat_present(st))
			return 0;
		mpl_stat_read(st);
		if (!st->n)
			return 0;
	}
}

int mpl_node_pages(pid_t pid, const void *addr, size_t len, uint64_t *counts,
		   unsigned int nr_nodes)
{
	long page_size = sysconf(_SC_PAGESIZE);
	size_t npages = len / page_size + !!(len % page_size);
	const char *p = addr;
	struct mpl_stat *st;
	size_t done;
	int ret = 0;

	if ((uintptr_t)addr % page_size ||
	    (uintptr_t)addr + len < (uintptr_t)addr)
		return -EINVAL;
	if (!nr_nodes)
		return 0;
	memset(counts, 0, nr_nodes * sizeof(*counts));
	st = malloc(sizeof(*st));
	if (!st)
		return -ENOMEM;
	st->pid = pid;
	st->page_size = page_size;
	st->pagemap = -1;
	for (done = 0; done < npages && !ret; done += MPL_STAT_BATCH) {
		size_t n = npages - done;

		if (n > MPL_STAT_BATCH)
			n = MPL_STAT_BATCH;
		ret = mpl_stat_batch(st, p + done * page_size, n, counts,
				     nr_nodes);
	}
	if (st->pagemap >= 0)
		close(st->pagemap);
	free(st);
	return ret;
}

int memprepop_node_pages(const void *addr, size_t len, uint64_t *counts,
			 unsigned int nr_nodes)
{
	return mpl_node_pages(0, addr, len, counts, nr_nodes);
}
