// SPDX-License-Identifier: GPL-2.0
/*
 * memprepop: how far a request got. Which chunks were populated completely,
 * each range's lowest failure, where a kill stopped a thread inside a chunk,
 * the bytes done and the progress told to @control; and from all that,
 * exactly how far each range got, as a call of that range alone to
 * madvise(MADV_POPULATE_WRITE) would have.
 */
#include <linux/bitmap.h>
#include <linux/jiffies.h>
#include <linux/mm.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "internal.h"

/**
 * mpp_outcome_init() - room for how far a request gets
 * @out: the request's outcome, zeroed
 * @nr_chunks: chunks in its plan
 * @nr_threads: threads that may work for it, the caller included
 * @nr_stat_nodes: nodes to count pages on, 0 for no statistics
 *
 * A bit per chunk is 1 MiB for %MEMPREPOP_PLAN_LEN_MAX, hence kvcalloc().
 *
 * Return: 0 or -ENOMEM.
 */
int mpp_outcome_init(struct mpp_outcome *out, unsigned long nr_chunks,
		     unsigned int nr_threads, unsigned int nr_stat_nodes)
{
	spin_lock_init(&out->lock);
	out->chunk_done = kvcalloc(BITS_TO_LONGS(nr_chunks) ?: 1,
				   sizeof(unsigned long), GFP_KERNEL_ACCOUNT);
	out->partial = kcalloc(nr_threads, sizeof(*out->partial),
			       GFP_KERNEL_ACCOUNT);
	if (!out->chunk_done || !out->partial)
		return -ENOMEM;
	out->max_partial = nr_threads;
	if (nr_stat_nodes) {
		out->node_pages = kvcalloc(nr_threads * nr_stat_nodes,
					   sizeof(*out->node_pages),
					   GFP_KERNEL_ACCOUNT);
		if (!out->node_pages)
			return -ENOMEM;
		out->nr_stat_nodes = nr_stat_nodes;
	}
	return 0;
}

/* What mpp_outcome_init() allocated, however far it got */
void mpp_outcome_destroy(struct mpp_outcome *out)
{
	kvfree(out->node_pages);
	kfree(out->partial);
	kvfree(out->chunk_done);
}

/**
 * mpp_stop() - nothing at or above @addr of @range is to be populated
 * @req: the request
 * @range: the range
 * @addr: where it failed
 * @err: why
 *
 * The lowest failure wins: everything of the range below it is still
 * populated, so that the range ends exactly where
 * madvise(MADV_POPULATE_WRITE) of it would have. Other ranges go on.
 */
void mpp_stop(struct mpp_request *req, struct mpp_range *range,
	      unsigned long addr, int err)
{
	spin_lock(&req->out.lock);
	if (addr < range->stop_at) {
		WRITE_ONCE(range->stop_at, addr);
		range->err = err;
	}
	spin_unlock(&req->out.lock);
}

/**
 * mpp_chunk_finish() - record how a chunk ended
 * @req: the request
 * @chunk: the chunk
 * @reached: populated from its start up to here
 * @err: 0, -ECANCELED (stopped), -EINTR (a kill) or a failure
 */
void mpp_chunk_finish(struct mpp_request *req, struct mpp_chunk *chunk,
		      unsigned long reached, int err)
{
	struct mpp_outcome *out = &req->out;

	if (!err) {
		set_bit(chunk->index, out->chunk_done);
		return;
	}
	if (err != -ECANCELED && err != -EINTR) {
		mpp_stop(req, chunk->range, reached, err);
		return;
	}
	/*
	 * Stopped below the chunk's end. Only a kill (or cancel) leaves chunks
	 * below the lowest failure incomplete, and after one a thread stops
	 * for good: one record per thread, so remember just those.
	 */
	if (!READ_ONCE(req->killed))
		return;
	spin_lock(&out->lock);
	if (out->nr_partial < out->max_partial) {
		out->partial[out->nr_partial].range = chunk->range;
		out->partial[out->nr_partial].chunk = chunk->index;
		out->partial[out->nr_partial].addr = reached;
		out->nr_partial++;
	}
	spin_unlock(&out->lock);
}

/**
 * mpp_control_sync() - tell @control how far the call got, read @cancel
 * @req: the request, without mmap_lock
 * @caller: true in the calling thread, false in a worker
 *
 * One thread at a time does it, whichever reaches @next_sync first. A
 * control the caller cannot write or read fails the call with EFAULT. A
 * worker, which is not killable, never faults @control in (it might be
 * userfaultfd-armed): when it is not present the caller, or the reaping
 * thread, does it. Nor does it once the request is killed, nor while a
 * synchronous call's thread is away from it (mpp_crew_caller_away()).
 */
void mpp_control_sync(struct mpp_request *req, bool caller)
{
	unsigned long next = READ_ONCE(req->next_sync);
	u32 cancel;
	u64 done;
	int ret;

	if (!req->call.control || READ_ONCE(req->out.abort_err) ||
	    time_before(jiffies, next))
		return;
	if (cmpxchg(&req->next_sync, next,
		    jiffies + msecs_to_jiffies(MPP_SYNC_MS)) != next)
		return;
	done = atomic64_read(&req->out.bytes_done);
	if (caller) {
		ret = mpp_uapi_control_sync(req->call.control, done, &cancel);
	} else {
		/*
		 * Under the crew's lock, which mpp_kill() takes: once the
		 * request is killed (its file released, its call over without
		 * it) no worker writes @control any more.
		 */
		spin_lock(&req->crew.lock);
		ret = -ECANCELED;
		if (!READ_ONCE(req->killed) && !req->crew.caller_away) {
			pagefault_disable();
			ret = mpp_uapi_control_sync(req->call.control, done,
						    &cancel);
			pagefault_enable();
		}
		spin_unlock(&req->crew.lock);
		if (ret)
			return;
	}
	if (ret)
		cmpxchg(&req->out.abort_err, 0, -EFAULT);
	else if (cancel)
		cmpxchg(&req->out.abort_err, 0, -ECANCELED);
	if (READ_ONCE(req->out.abort_err))
		mpp_cancel(req);
}

/*
 * Where a range got, before the records of how far chunks got are read: to
 * its end, or to the start of its first chunk that did not complete, or the
 * failure inside it. Chunks below the lowest failure all complete unless
 * the request was killed: then that first chunk's records count
 * (mpp_outcome_raise()).
 */
static void mpp_outcome_reach(struct mpp_request *req, struct mpp_range *range)
{
	unsigned long stop_at = READ_ONCE(range->stop_at);
	struct mpp_chunk undone;

	range->undone = ULONG_MAX;
	if (range->bad) {
		range->reached = range->start;
		return;
	}
	if (!mpp_plan_undone(&req->plan, range, req->out.chunk_done,
			     &undone)) {
		range->reached = range->end;
		return;
	}
	range->undone = undone.index;
	range->reached = undone.start;
	if (stop_at >= undone.start && stop_at < undone.end)
		range->reached = stop_at;
}

/**
 * mpp_outcome_raise() - a record of how far a chunk got
 * @range: the chunk's range, its first chunk not done worked out
 * @index: the chunk
 * @addr: populated from the chunk's start up to here
 *
 * Each record is a populated prefix of its chunk: where a kill or cancel
 * stopped a thread in it, or where its worker handed it back. It counts
 * only in the range's first chunk that did not complete: what is above is
 * not contiguous with the range's start.
 */
void mpp_outcome_raise(struct mpp_range *range, unsigned long index,
		       unsigned long addr)
{
	if (index == range->undone)
		range->reached = max(range->reached, addr);
}

/* The result of one range, as a call of that range alone would report it */
static int mpp_outcome_error(struct mpp_request *req,
			     const struct mpp_range *range, unsigned long end)
{
	if (range->bad)
		return range->bad;
	if (end == range->end)
		return 0;
	/* Populated up to its own failure: its errno, cancelled or not */
	if (end == range->stop_at)
		return range->err;
	if (req->out.abort_err)
		return req->out.abort_err;
	if (range->stop_at < range->end)
		return range->err;
	return -EINTR;
}

/**
 * mpp_outcome_finish() - the request's outcome, once its threads are done
 * @req: the request, its threads done or the caller killed
 *
 * Sets each range's @populated and @error, the request's @populated, and
 * sums every thread's node counts into the first row. Once per request:
 * the chunks left handed back are counted and freed. In steps of the ranges
 * and of the records, never of one for each of the other.
 *
 * Return: the first range's error by index, or 0.
 */
int mpp_outcome_finish(struct mpp_request *req)
{
	struct mpp_outcome *out = &req->out;
	unsigned int i, nid, rows = out->max_partial;
	int first_err = 0;

	for (i = 0; i < req->call.nr_ranges; i++) {
		mpp_outcome_reach(req, &req->call.ranges[i]);
		if (i % 256 == 255)
			cond_resched();
	}
	spin_lock(&out->lock);
	for (i = 0; i < out->nr_partial; i++)
		mpp_outcome_raise(out->partial[i].range, out->partial[i].chunk,
				  out->partial[i].addr);
	spin_unlock(&out->lock);
	mpp_plan_handed_back(&req->plan);

	out->populated = 0;
	for (i = 0; i < req->call.nr_ranges; i++) {
		struct mpp_range *range = &req->call.ranges[i];
		unsigned long end = min(range->reached,
					READ_ONCE(range->stop_at));

		range->populated = end - range->start;
		range->error = mpp_outcome_error(req, range, end);
		out->populated += range->populated;
		if (range->error && !first_err)
			first_err = range->error;
		if (i % 256 == 255)
			cond_resched();
	}
	for (i = 1; out->node_pages && i < rows; i++)
		for (nid = 0; nid < out->nr_stat_nodes; nid++)
			out->node_pages[nid] +=
				out->node_pages[i * out->nr_stat_nodes + nid];
	return first_err;
}
