// SPDX-License-Identifier: GPL-2.0
/*
 * memprepop: the bookkeeping of one populate request, below everything else:
 * its lifetime, the chunks handed out to threads and how each ended, the
 * lowest failure, the chunks workers hand back to the caller, the progress
 * written to @control, and, from all that, exactly how far the range got.
 */
#include <linux/bitmap.h>
#include <linux/eventfd.h>
#include <linux/poll.h>
#include <linux/jiffies.h>
#include <linux/mm.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "compat.h"
#include "internal.h"

/**
 * mpp_request_alloc() - a request of @nr_ranges ranges of @mm
 * @mm: the caller's mm, which the request holds with mmgrab()
 * @nr_ranges: its ranges, filled in by the caller
 * @nr_stat_nodes: nodes to count pages on, 0 for no statistics
 *
 * Return: the request, with one reference for the caller, or NULL.
 */
struct mpp_request *mpp_request_alloc(struct mm_struct *mm,
				      unsigned int nr_ranges,
				      unsigned int nr_stat_nodes)
{
	struct mpp_request *req;

	req = kzalloc(sizeof(*req), GFP_KERNEL_ACCOUNT);
	if (!req)
		return NULL;
	req->ranges = kvcalloc(nr_ranges, sizeof(*req->ranges),
			       GFP_KERNEL_ACCOUNT);
	if (!req->ranges) {
		kfree(req);
		return NULL;
	}
	req->nr_ranges = nr_ranges;
	kref_init(&req->ref);
	mmgrab(mm);
	req->mm = mm;
	req->nr_stat_nodes = nr_stat_nodes;
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
	if (req->eventfd)
		eventfd_ctx_put(req->eventfd);
	mpp_identity_destroy(&req->id);
	kvfree(req->node_pages);
	kfree(req->partial);
	kvfree(req->workers);
	kvfree(req->chunk_done);
	kvfree(req->segs);
	kvfree(req->ranges);
	mmdrop(req->mm);
	kfree(req);
}

void mpp_request_put(struct mpp_request *req)
{
	kref_put(&req->ref, mpp_request_release);
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
	spin_lock(&req->lock);
	if (addr < range->stop_at) {
		WRITE_ONCE(range->stop_at, addr);
		range->err = err;
	}
	spin_unlock(&req->lock);
}

/**
 * mpp_notify() - wake whoever waits for the request to want its caller
 * @req: the request: its last worker is done, or a chunk was handed back
 *
 * The calling thread waits on @wq; in the background, while the request is
 * attached to its file, poll() on the file and the eventfd are told as
 * well, under @lock, so that once mpp_notify_detach() has run no thread of
 * the request touches either.
 */
void mpp_notify(struct mpp_request *req)
{
	wake_up(&req->wq);
	spin_lock(&req->lock);
	if (req->poll_wq) {
		wake_up_poll(req->poll_wq, EPOLLIN | EPOLLRDNORM);
		if (req->eventfd)
			mpp_eventfd_signal(req->eventfd);
	}
	spin_unlock(&req->lock);
}

/**
 * mpp_notify_detach() - the request's file is told nothing more of it
 * @req: a background request, reaped or given up by its file
 *
 * After it the file may be freed, and its next request's eventfd count is
 * that request's own: a worker still finishing this one either told the
 * file before, or sees it detached.
 */
void mpp_notify_detach(struct mpp_request *req)
{
	spin_lock(&req->lock);
	req->poll_wq = NULL;
	spin_unlock(&req->lock);
}

/**
 * mpp_cancel() - everyone stops at their next batch
 * @req: the request, cancelled through @control or with a bad @control
 *
 * Nobody is interrupted: what each thread faulted is counted, so that
 * @populated stays exact.
 */
void mpp_cancel(struct mpp_request *req)
{
	WRITE_ONCE(req->killed, true);
}

/**
 * mpp_kill() - everyone stops now: the caller is dying, or gone
 * @req: the request: its caller has a fatal signal, its file was released,
 *	or its process is gone
 *
 * As mpp_cancel(), and a worker that waits where only a fatal signal ends
 * the wait (a page lock, a userfaultfd handler, a file system's read), as
 * a thread of the caller would in madvise(), is sent SIGKILL, which ends
 * the wait and nothing else: workers allow no other signal and take no
 * action on it (pool.c). A page the fault path faulted just before it saw
 * the signal may then go uncounted, as for a killed madvise(): after a
 * kill, @populated is a lower bound.
 */
void mpp_kill(struct mpp_request *req)
{
	unsigned int i;

	spin_lock(&req->lock);
	WRITE_ONCE(req->killed, true);
	for (i = 0; i < req->nr_workers; i++)
		if (req->workers[i].working)
			mpp_thread_kill(req->workers[i].thread);
	spin_unlock(&req->lock);
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
		/*
		 * A range's segments are in address order: the rest of the
		 * range is stopped too, go on with the next range.
		 */
		if (chunk->start >= READ_ONCE(seg->range->stop_at)) {
			*next_seg = seg->range->first_seg +
				    seg->range->nr_segs - 1;
			continue;
		}
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
		mpp_stop(req, chunk->seg->range, reached, err);
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
	mpp_notify(req);
}

/* The calling thread takes a chunk a worker handed back, if there is one */
bool mpp_take_handoff(struct mpp_request *req, struct mpp_chunk *chunk)
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

bool mpp_has_handoff(struct mpp_request *req)
{
	bool has;

	spin_lock(&req->lock);
	has = !list_empty(&req->handoffs);
	spin_unlock(&req->lock);
	return has;
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
 * thread, does it.
 */
void mpp_control_sync(struct mpp_request *req, bool caller)
{
	unsigned long next = READ_ONCE(req->next_sync);
	u32 cancel;
	int ret;

	if (!req->control || READ_ONCE(req->abort_err) ||
	    time_before(jiffies, next))
		return;
	if (cmpxchg(&req->next_sync, next,
		    jiffies + msecs_to_jiffies(MPP_SYNC_MS)) != next)
		return;
	if (!caller)
		pagefault_disable();
	ret = put_user(atomic64_read(&req->bytes_done), &req->control->done);
	if (!ret)
		ret = get_user(cancel, &req->control->cancel);
	if (!caller) {
		pagefault_enable();
		if (ret)
			return;
	}
	if (ret)
		cmpxchg(&req->abort_err, 0, -EFAULT);
	else if (cancel)
		cmpxchg(&req->abort_err, 0, -ECANCELED);
	if (READ_ONCE(req->abort_err))
		mpp_cancel(req);
}

/**
 * mpp_populated_end() - how far a range got
 * @req: the request, its threads done or the caller killed
 * @range: the range
 *
 * The end of what is populated from the start of the range. Chunks below the
 * lowest failure all complete unless the caller is killed, so it is: the
 * start of the first chunk that did not complete, or the failure in it, or
 * where a kill stopped it; never past the lowest failure, nor past a hole
 * the plan stepped over.
 *
 * Return: the end address of the populated start of the range.
 */
unsigned long mpp_populated_end(struct mpp_request *req,
				struct mpp_range *range)
{
	unsigned long last = range->first_chunk + range->nr_chunks;
	unsigned long first = find_next_zero_bit(req->chunk_done, last,
						 range->first_chunk);
	unsigned long end = range->end, stop_at = range->stop_at;
	unsigned int i;

	if (range->bad)
		return range->start;
	for (i = range->first_seg;
	     first < last && i < range->first_seg + range->nr_segs; i++) {
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
	for (i = 0; first < last && i < req->nr_partial; i++)
		if (req->partial[i].chunk == first)
			end = req->partial[i].addr;
	spin_unlock(&req->lock);
	return min3(end, stop_at, range->hole_at);
}
