// SPDX-License-Identifier: GPL-2.0
/*
 * memprepop: a populate call from start to end. The caller validates the
 * range, plans it (policy.c), starts the workers (workers.c), faults in what
 * only it may fault (userfaultfd-armed mappings, found when planning or
 * handed back by a worker), and reports how far the range got (request.c).
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

#include "internal.h"
#include "trace.h"

/*
 * The calling thread's share: the segments only it may fault, then what
 * workers hand back, until the last worker is done. Every wait ends at a
 * fatal signal, and at least every MPP_SYNC_MS the progress goes to
 * @control and a cancel is read from it.
 *
 * Returns 0, or -EINTR when the caller was killed: the workers are then
 * not waited for.
 */
static int mpp_caller_work(struct mpp_request *req)
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
			ret = mpp_fault_chunk(req, &chunk, true,
					      req->node_pages, &reached);
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
 * Hand the node counts of every thread, summed, to the caller's array,
 * whose entries past what was counted are already zero.
 */
static int mpp_node_pages_put(struct mpp_request *req,
			      struct memprepop_populate *p)
{
	u64 __user *dst = u64_to_user_ptr(p->node_pages);
	unsigned int i, nid;

	if (!req->node_pages)
		return 0;
	for (i = 1; i <= req->nr_workers; i++)
		for (nid = 0; nid < req->nr_stat_nodes; nid++)
			req->node_pages[nid] +=
				req->node_pages[i * req->nr_stat_nodes + nid];
	if (copy_to_user(dst, req->node_pages,
			 req->nr_stat_nodes * sizeof(*dst)))
		return -EFAULT;
	return 0;
}

static int mpp_run(struct mpp_request *req, struct memprepop_populate *p)
{
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

	ret = mpp_caller_work(req);
	if (ret) {
		/* Killed: the workers stop on their own, not waited for */
		mpp_kill(req);
		p->populated = mpp_populated_end(req) - req->start;
		return ret;
	}

	p->workers = req->nr_workers ? req->nr_workers : 1;
	p->populated = mpp_populated_end(req) - req->start;
	if (mpp_node_pages_put(req, p))
		req->abort_err = req->abort_err ?: -EFAULT;
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

	/* The range checks of do_madvise(), no more: see compat.h for holes */
	if (!PAGE_ALIGNED(p->addr))
		return -EINVAL;
	len = PAGE_ALIGN(p->len);
	if (p->len && !len)
		return -EINVAL;
	if (p->addr + len < p->addr)
		return -EINVAL;
	if (p->__reserved || !p->node_pages != !p->nr_node_pages)
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
	/* Checked writable before anything is done; uncounted entries zero */
	if (p->nr_node_pages &&
	    clear_user(u64_to_user_ptr(p->node_pages),
		       (unsigned long)p->nr_node_pages * sizeof(u64)))
		return -EFAULT;
	if (!len)
		return 0;

	req = mpp_request_alloc(mm, p->addr, p->addr + len, p->flags,
				min_t(unsigned int, p->nr_node_pages,
				      nr_node_ids));
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
