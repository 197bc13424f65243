// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libmemprepop: what every request goes through whatever runs it: the
 * caller's structures checked and copied in, its ranges turned into work
 * for a backend, locking, and the outcome written back.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "internal.h"

#ifndef MLOCK_ONFAULT
#define MLOCK_ONFAULT	0x01
#endif

/*
 * The caller's options, as the kernel's copy_struct_from_user() takes a
 * structure: @opts->size bytes of it, the rest of ours zero; -EINVAL below
 * the first version, -E2BIG for a longer one whose tail we do not know and
 * is not zero.
 */
int mpl_opts_copy(struct memprepop_opts *dst,
		  const struct memprepop_opts *opts)
{
	const unsigned char *tail = (const unsigned char *)opts;
	size_t size, i;

	memset(dst, 0, sizeof(*dst));
	dst->size = sizeof(*dst);
	if (!opts)
		return 0;
	size = opts->size;
	if (size < MPL_OPTS_SIZE_VER0)
		return -EINVAL;
	for (i = sizeof(*dst); i < size; i++)
		if (tail[i])
			return -E2BIG;
	memcpy(dst, opts, size < sizeof(*dst) ? size : sizeof(*dst));
	dst->size = sizeof(*dst);
	return 0;
}

/* The caller's flags, read before its options are copied: 0 if none */
unsigned int mpl_opts_flags(const struct memprepop_opts *opts)
{
	return opts && opts->size >= MPL_OFFSETOFEND(struct memprepop_opts,
						     flags) ? opts->flags : 0;
}

/*
 * The outcome into the caller's result, never past its @size: what we do
 * not know of a longer one is zeroed, @size itself is left as it is.
 */
void mpl_result_copy(struct memprepop_result *res,
		     const struct memprepop_result *ours)
{
	size_t size = res->size, skip = sizeof(res->size);

	memcpy((char *)res + skip, (const char *)ours + skip,
	       (size < sizeof(*ours) ? size : sizeof(*ours)) - skip);
	if (size > sizeof(*ours))
		memset((char *)res + sizeof(*ours), 0, size - sizeof(*ours));
}

void mpl_req_free(struct mpl_req *req)
{
	/* req->index is in the same block */
	free(req->work);
	free(req->node_pages);
	memset(req, 0, sizeof(*req));
}

/*
 * A range as madvise() checks it: page-aligned start, no wrap once rounded
 * up. Its rounded length, or -EINVAL.
 */
static int64_t mpl_range_len(const struct memprepop_range *r, long page_size)
{
	if (r->addr % page_size || r->addr > UINTPTR_MAX ||
	    r->len > UINTPTR_MAX - page_size ||
	    r->addr + r->len < r->addr || r->addr + r->len > UINTPTR_MAX)
		return -EINVAL;
	return (r->len + page_size - 1) & ~(uint64_t)(page_size - 1);
}

/**
 * mpl_req_prepare() - check a call and make its work
 * @req: filled; free it with mpl_req_finish() or mpl_req_free()
 * @target: whose memory, prepared here for the plan (mpl_target_prepare())
 * @ranges: the caller's; their outputs are reset, a range that madvise()
 *	would refuse alone gets its -EINVAL
 * @nr: entries of @ranges
 * @opts: the options, copied already
 *
 * Return: 0, or -errno for the call, nothing written: -EINVAL, -ENOMEM,
 * or for another process's memory -EINVAL with MEMPREPOP_OPT_LOCK and the
 * errors of mpl_target_prepare().
 */
int mpl_req_prepare(struct mpl_req *req, struct mpl_target *target,
		    struct memprepop_range *ranges, unsigned int nr,
		    const struct memprepop_opts *opts)
{
	long page_size = sysconf(_SC_PAGESIZE);
	unsigned int i;
	int ret;

	memset(req, 0, sizeof(*req));
	req->target = target;
	req->opts = *opts;
	if (opts->flags & ~MPL_OPT_FLAGS)
		return -EINVAL;
	/* Another process's memory is locked by its own mlock(), not ours */
	if (target->pidfd >= 0 && (opts->flags & MEMPREPOP_OPT_LOCK))
		return -EINVAL;
	if (!opts->node_pages != !opts->nr_nodes)
		return -EINVAL;
	if (nr && !ranges)
		return -EINVAL;
	for (i = 0; i < nr; i++)
		if (ranges[i].__reserved)
			return -EINVAL;
	/* Another process's mappings, as they are now: nothing written yet */
	ret = nr ? mpl_target_prepare(target) : 0;
	if (ret)
		return ret;
	/* The work, then each entry's index, in one allocation */
	req->work = calloc((size_t)nr + 1,
			   sizeof(*req->work) + sizeof(*req->index));
	if (req->work)
		req->index = (unsigned int *)(req->work + nr + 1);
	if (opts->node_pages)
		req->node_pages = calloc(2 * (size_t)opts->nr_nodes,
					 sizeof(*req->node_pages));
	if (!req->work || (opts->node_pages && !req->node_pages)) {
		mpl_req_free(req);
		return -ENOMEM;
	}
	if (opts->node_pages) {
		req->batch_pages = req->node_pages + opts->nr_nodes;
		memset(opts->node_pages, 0,
		       opts->nr_nodes * sizeof(*opts->node_pages));
	}
	for (i = 0; i < nr; i++) {
		int64_t len = mpl_range_len(&ranges[i], page_size);

		ranges[i].populated = 0;
		ranges[i].error = len < 0 ? len : 0;
		if (len <= 0)
			continue;
		req->work[req->nr].addr = ranges[i].addr;
		req->work[req->nr].len = len;
		req->index[req->nr++] = i;
		req->total += len;
	}
	return 0;
}

/*
 * Lock-on-fault first: mlock2() does the RLIMIT_MEMLOCK check and the
 * accounting, and each page is then locked as it is faulted in on the node
 * its policy selects, never locked first and moved later. A range mlock2()
 * refuses fails with its errno and leaves the work.
 */
void mpl_req_lock(struct mpl_req *req, struct memprepop_range *ranges)
{
	unsigned int i, kept = 0;

	if (!(req->opts.flags & MEMPREPOP_OPT_LOCK))
		return;
	for (i = 0; i < req->nr; i++) {
		struct memprepop_range *w = &req->work[i];

		if (mlock2((void *)(uintptr_t)w->addr, w->len, MLOCK_ONFAULT)) {
			ranges[req->index[i]].error = -errno;
			req->total -= w->len;
			continue;
		}
		req->work[kept] = *w;
		req->index[kept++] = req->index[i];
	}
	req->nr = kept;
}

/* Bytes populated of the work so far, as the backend wrote them */
uint64_t mpl_req_populated(const struct mpl_req *req)
{
	uint64_t sum = 0;
	unsigned int i;

	for (i = 0; i < req->nr; i++)
		sum += req->work[i].populated;
	return sum;
}

/**
 * mpl_req_finish() - write the outcome to the caller, free the request
 * @req: the request, its work done
 * @ranges: the caller's, @nr of them
 * @nr: entries of @ranges
 * @res: the populated sum goes there
 * @call_err: 0, or an error of the whole call (no threads, a cancel
 *	between two module calls...): each work range that neither failed
 *	nor completed fails with it, as it would have alone
 *
 * Return: the error of the first range, by index, that failed; else
 * @call_err.
 */
int mpl_req_finish(struct mpl_req *req, struct memprepop_range *ranges,
		   unsigned int nr, struct memprepop_result *res,
		   int call_err)
{
	uint64_t populated = 0;
	unsigned int i;
	int ret = 0;

	for (i = 0; i < req->nr; i++) {
		struct memprepop_range *w = &req->work[i];

		if (call_err && !w->error && w->populated < w->len)
			w->error = call_err;
		ranges[req->index[i]].populated = w->populated;
		ranges[req->index[i]].error = w->error;
	}
	for (i = 0; i < nr; i++) {
		populated += ranges[i].populated;
		if (!ret)
			ret = ranges[i].error;
	}
	if (req->opts.node_pages)
		memcpy(req->opts.node_pages, req->node_pages,
		       req->opts.nr_nodes * sizeof(*req->node_pages));
	res->populated = populated;
	mpl_req_free(req);
	return ret ? ret : call_err;
}
