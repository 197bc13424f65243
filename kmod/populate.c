// SPDX-License-Identifier: GPL-2.0
/*
 * memprepop: a populate call from start to end. The caller validates the
 * range, plans it (policy.c), starts the workers (workers.c), faults in what
 * only it may fault (userfaultfd-armed mappings, found when planning or
 * handed back by a worker), and works out exactly how far the range got.
 * The caller never waits for a worker where a fatal signal cannot end the
 * wait: a killed caller returns at once, and the workers, which hold their
 * own references, stop within a batch and go away on their own.
 */
#include <linux/bitmap.h>
#include <linux/jiffies.h>
#include <linux/mm.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/timekeeping.h>
#include <linux/uaccess.h>

#include "memprepop.h"
#include "trace.h"

static struct mpp_request *mpp_request_alloc(struct mm_struct *mm,
					     unsigned long start,
					     unsigned long end, u64 flags)
{
	struct mpp_request *req;

	req = kzalloc(sizeof(*req), GFP_KERNEL_ACCOUNT);
	if (!req)
		return NULL;
	kref_init(&req->ref);
	mmget(mm);
	req->mm = mm;
	req->flags = flags;
	req->start = start;
	req->end = end;
	req->stop_at = end;
	req->hole_at = end;
	spin_lock_init(&req->lock);
	INIT_LIST_HEAD(&req->handoffs);
	init_waitqueue_head(&req->wq);
	mpp_identity_init(&req->id, mm);
	return req;
}

static void mpp_request_release(struct kref *ref)
{
	struct mpp_request *req = container_of(ref, struct mpp_request, ref);
	struct mpp_handoff *h, *tmp;

	list_for_each_entry_safe(h, tmp, &req->handoffs, node)
		kfree(h);
	mpp_identity_destroy(&req->id);
	kfree(req->partial);
	kvfree(req->workers);
	kvfree(req->chunk_done);
	kvfree(req->segs);
	mmput(req->mm);
	kfree(req);
}

void mpp_request_put(struct mpp_request *req)
{
	kref_put(&req->ref, mpp_request_release);
}

/**
 * mpp_stop() - nothing at or above @addr is to be populated any more
 * @req: the request
 * @addr: where it failed
 * @err: why
 *
 * The lowest failure wins: everything below it is still populated, so that
 * the call ends exactly where madvise(MADV_POPULATE_WRITE) would have.
 */
void mpp_stop(struct mpp_request *req, unsigned long addr, int err)
{
	spin_lock(&req->lock);
	if (addr < req->stop_at) {
		WRITE_ONCE(req->stop_at, addr);
		req->err = err;
	}
	spin_unlock(&req->lock);
}

static void mpp_kill(struct mpp_request *req)
{
	WRITE_ONCE(req->killed, true);
}

/* The start of chunk @index of @seg */
static unsigned long mpp_chunk_start(const struct mpp_segment *seg,
				     unsigned long index)
{
	unsigned long base = ALIGN_DOWN(seg->start, seg->chunk_size);

	return max(seg->start, base + index * seg->chunk_size);
}

/**
 * mpp_claim() - hand out the next chunk for a thread
 * @req: the request
 * @node: the worker's node, or %NUMA_NO_NODE for the calling thread
 * @next_seg: the thread's cursor: segments before it have nothing for it
 * @chunk: filled with the claimed chunk
 *
 * Workers take chunks of the segments their node serves, the caller takes
 * the segments only it may fault, in address order, dynamically.
 *
 * Return: true when @chunk was claimed, false when there is nothing left.
 */
bool mpp_claim(struct mpp_request *req, int node, unsigned int *next_seg,
	       struct mpp_chunk *chunk)
{
	for (; *next_seg < req->nr_segs; (*next_seg)++) {
		struct mpp_segment *seg = &req->segs[*next_seg];
		unsigned long index;

		if (READ_ONCE(req->killed))
			return false;
		if (node == NUMA_NO_NODE ? !seg->caller_only :
		    seg->caller_only || !node_isset(node, seg->served_by))
			continue;
		index = atomic_long_fetch_inc(&seg->next_chunk);
		if (index >= seg->nr_chunks)
			continue;

		chunk->seg = seg;
		chunk->index = seg->first_chunk + index;
		chunk->start = mpp_chunk_start(seg, index);
		chunk->end = min(seg->end, mpp_chunk_start(seg, index + 1));
		/* Segments are in address order: all the rest is stopped too */
		if (chunk->start >= READ_ONCE(req->stop_at))
			return false;
		return true;
	}
	return false;
}

/**
 * mpp_chunk_finish() - record how a chunk ended
 * @req: the request
 * @chunk: the chunk
 * @reached: populated from its start up to here
 * @err: 0, -ECANCELED (stopped), -EINTR (the caller was killed) or a
 *	failure
 */
void mpp_chunk_finish(struct mpp_request *req, struct mpp_chunk *chunk,
		      unsigned long reached, int err)
{
	if (!err) {
		set_bit(chunk->index, req->chunk_done);
		return;
	}
	if (err == -EINTR)
		mpp_kill(req);
	if (err != -ECANCELED && err != -EINTR) {
		mpp_stop(req, reached, err);
		return;
	}
	/*
	 * Stopped below the chunk's end. Only a kill (or cancel) leaves chunks
	 * below the lowest failure incomplete, and after one a thread stops
	 * for good: one record per thread, so remember just those.
	 */
	if (!READ_ONCE(req->killed))
		return;
	spin_lock(&req->lock);
	if (req->nr_partial < req->nr_workers + 1) {
		req->partial[req->nr_partial].chunk = chunk->index;
		req->partial[req->nr_partial].addr = reached;
		req->nr_partial++;
	}
	spin_unlock(&req->lock);
}

/**
 * mpp_handoff() - leave the rest of a chunk to the calling thread
 * @req: the request
 * @chunk: the chunk, populated from its start up to @reached
 * @reached: where a worker found a userfaultfd-armed mapping
 *
 * Faults in a userfaultfd-armed mapping wait for its handler, and only the
 * caller can be killed out of that wait: such a mapping, found by a worker
 * at any lookup, is the caller's to fault.
 */
void mpp_handoff(struct mpp_request *req, struct mpp_chunk *chunk,
		 unsigned long reached)
{
	struct mpp_handoff *h;

	h = kmalloc(sizeof(*h), GFP_KERNEL_ACCOUNT);
	if (!h) {
		mpp_chunk_finish(req, chunk, reached, -ENOMEM);
		return;
	}
	h->chunk = *chunk;
	h->chunk.start = reached;
	spin_lock(&req->lock);
	list_add_tail(&h->node, &req->handoffs);
	spin_unlock(&req->lock);
	wake_up(&req->wq);
}

static bool mpp_take_handoff(struct mpp_request *req, struct mpp_chunk *chunk)
{
	struct mpp_handoff *h;

	spin_lock(&req->lock);
	h = list_first_entry_or_null(&req->handoffs, struct mpp_handoff,
				     node);
	if (h)
		list_del(&h->node);
	spin_unlock(&req->lock);
	if (!h)
		return false;
	*chunk = h->chunk;
	kfree(h);
	return true;
}

static bool mpp_has_handoff(struct mpp_request *req)
{
	bool has;

	spin_lock(&req->lock);
	has = !list_empty(&req->handoffs);
	spin_unlock(&req->lock);
	return has;
}

/**
 * mpp_control_sync() - tell @control how far the call got, read @cancel
 * @req: the request, in the caller's context, without mmap_lock
 *
 * A control the caller cannot write or read fails the call with EFAULT.
 */
void mpp_control_sync(struct mpp_request *req)
{
	u32 cancel;

	req->next_sync = jiffies + msecs_to_jiffies(MPP_SYNC_MS);
	if (!req->control || req->abort_err)
		return;
	if (put_user(atomic64_read(&req->bytes_done), &req->control->done) ||
	    get_user(cancel, &req->control->cancel))
		req->abort_err = -EFAULT;
	else if (cancel)
		req->abort_err = -ECANCELED;
	if (req->abort_err)
		mpp_kill(req);
}

/*
 * The calling thread's share: the segments only it may fault, then what
 * workers hand back, until the last worker is done. Every wait ends at a
 * fatal signal, and at least every MPP_SYNC_MS the progress goes to
 * @control and a cancel is read from it.
 *
 * Returns 0, or -EINTR when the caller was killed: the workers are then
 * not waited for.
 */
static int mpp_caller_work(struct mpp_request *req, u64 *node_pages)
{
	unsigned long tick = msecs_to_jiffies(MPP_SYNC_MS);
	unsigned int next_seg = 0;
	struct mpp_chunk chunk;

	req->next_sync = jiffies + tick;
	for (;;) {
		unsigned long reached;
		long ret;

		if (mpp_claim(req, NUMA_NO_NODE, &next_seg, &chunk) ||
		    mpp_take_handoff(req, &chunk)) {
			ret = mpp_fault_chunk(req, &chunk, true, node_pages,
					      &reached);
			mpp_chunk_finish(req, &chunk, reached, ret);
			if (fatal_signal_pending(current))
				return -EINTR;
			continue;
		}
		if (!atomic_read(&req->active) && !mpp_has_handoff(req))
			return 0;
		ret = wait_event_killable_timeout(req->wq,
						  !atomic_read(&req->active) ||
						  mpp_has_handoff(req), tick);
		if (ret < 0)
			return -EINTR;
		if (time_after_eq(jiffies, req->next_sync))
			mpp_control_sync(req);
	}
}

/*
 * The end of what is populated from the start of the range. Chunks below the
 * lowest failure all complete unless the caller is killed, so it is: the
 * start of the first chunk that did not complete, or the failure in it, or
 * where a kill stopped it; never past the lowest failure, nor past a hole
 * the plan stepped over.
 */
static unsigned long mpp_populated_end(struct mpp_request *req)
{
	unsigned long first = find_first_zero_bit(req->chunk_done,
						  req->nr_chunks);
	unsigned long end = req->end, stop_at = req->stop_at;
	unsigned int i;

	for (i = 0; first < req->nr_chunks && i < req->nr_segs; i++) {
		const struct mpp_segment *seg = &req->segs[i];
		unsigned long index = first - seg->first_chunk;
		unsigned long chunk_end;

		if (first >= seg->first_chunk + seg->nr_chunks)
			continue;
		end = mpp_chunk_start(seg, index);
		chunk_end = min(seg->end, mpp_chunk_start(seg, index + 1));
		if (stop_at >= end && stop_at < chunk_end)
			end = stop_at;
		break;
	}
	spin_lock(&req->lock);
	for (i = 0; i < req->nr_partial; i++)
		if (req->partial[i].chunk == first)
			end = req->partial[i].addr;
	spin_unlock(&req->lock);
	return min3(end, stop_at, req->hole_at);
}

static int mpp_run(struct mpp_request *req, struct memprepop_populate *p)
{
	unsigned int i;
	int ret;

	mpp_policy_init(req);
	ret = mpp_plan(req);
	if (ret)
		return ret;
	/* A bit per 16 MiB: 1 MiB for 128 TiB, so not necessarily contiguous */
	req->chunk_done = kvcalloc(BITS_TO_LONGS(req->nr_chunks),
				   sizeof(unsigned long), GFP_KERNEL_ACCOUNT);
	if (!req->chunk_done)
		return -ENOMEM;
	ret = mpp_workers_start(req, p->max_workers);
	if (ret)
		return ret;
	trace_memprepop_populate_start(req->start, req->end - req->start,
				       req->flags, req->nr_workers,
				       req->nr_segs);

	ret = mpp_caller_work(req, p->node_pages);
	if (ret) {
		/* Killed: the workers stop on their own, not waited for */
		mpp_kill(req);
		p->populated = mpp_populated_end(req) - req->start;
		return ret;
	}

	p->workers = req->nr_workers ? req->nr_workers : 1;
	for (i = 0; i < req->nr_workers; i++) {
		int nid;

		for (nid = 0; nid < MEMPREPOP_STAT_NODES; nid++)
			p->node_pages[nid] += req->workers[i].node_pages[nid];
	}
	p->populated = mpp_populated_end(req) - req->start;
	/* The last word on progress; a cancel this late changes nothing */
	if (req->control && !req->abort_err &&
	    put_user(atomic64_read(&req->bytes_done), &req->control->done))
		req->abort_err = -EFAULT;

	if (fatal_signal_pending(current))
		return -EINTR;
	if (req->abort_err)
		return req->abort_err;
	if (req->stop_at < req->end)
		return req->err;
	if (req->hole_at < req->end)
		return -ENOMEM;
	if (req->start + p->populated < req->end)
		return -EINTR;
	return 0;
}

/**
 * memprepop_populate() - carry out a populate request on @mm
 * @mm: the caller's mm
 * @p: the request, validated by the ioctl except for its range
 *
 * Fills the output fields of @p.
 *
 * Return: 0 or the negative errno documented for %MEMPREPOP_IOC_POPULATE.
 */
int memprepop_populate(struct mm_struct *mm, struct memprepop_populate *p)
{
	u64 t0 = ktime_get_ns();
	struct mpp_request *req;
	u64 len;
	int ret;

	p->populated = 0;
	p->workers = 0;
	p->nsecs = 0;
	memset(p->node_pages, 0, sizeof(p->node_pages));

	/* The range checks of do_madvise(), no more: see compat.h for holes */
	if (!PAGE_ALIGNED(p->addr))
		return -EINVAL;
	len = PAGE_ALIGN(p->len);
	if (p->len && !len)
		return -EINVAL;
	if (p->addr + len < p->addr)
		return -EINVAL;
	if (!IS_ALIGNED(p->control, sizeof(u64)))
		return -EINVAL;
	if (p->control) {
		struct memprepop_control __user *ctl =
			u64_to_user_ptr(p->control);
		u32 reserved;

		if (get_user(reserved, &ctl->__reserved))
			return -EFAULT;
		if (reserved)
			return -EINVAL;
	}
	if (!len)
		return 0;

	req = mpp_request_alloc(mm, p->addr, p->addr + len, p->flags);
	if (!req)
		return -ENOMEM;
	req->control = u64_to_user_ptr(p->control);
	ret = mpp_run(req, p);
	mpp_request_put(req);

	p->nsecs = ktime_get_ns() - t0;
	trace_memprepop_populate_end(p->addr, p->populated, p->nsecs, ret);
	mpp_stats_account(p, ret);
	return ret;
}
