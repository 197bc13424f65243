// SPDX-License-Identifier: GPL-2.0
/*
 * memprepop: a populate call from start to end. The caller validates the
 * call and its ranges, plans them (policy.c), starts the workers
 * (workers.c), faults in what only it may fault (userfaultfd-armed
 * mappings, found when planning or handed back by a worker), and reports
 * how far each range got (request.c). A background call stops after the
 * start; the thread that reaps it does the rest.
 *
 * The caller never waits for a worker where a fatal signal cannot end the
 * wait: a killed caller returns at once, and the workers, which hold their
 * own references, stop within a batch and go away on their own.
 */
#include <linux/bitmap.h>
#include <linux/errno.h>
#include <linux/eventfd.h>
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
 * Returns 0, -EINTR when the caller was killed (the workers are then not
 * waited for), -ERESTARTNOINTR when it is being frozen with its workers,
 * or with @nowait -EAGAIN when only workers have work left.
 */
static int mpp_caller_work(struct mpp_request *req, bool nowait)
{
	unsigned long tick = msecs_to_jiffies(MPP_SYNC_MS);
	unsigned int next_seg = 0;
	struct mpp_chunk chunk;

	for (;;) {
		unsigned long reached;
		long ret;

		if (mpp_claim(req, NUMA_NO_NODE, &next_seg, &chunk) ||
		    mpp_take_handoff(req, &chunk)) {
			ret = mpp_fault_caller(req, &chunk, req->node_pages,
					       &reached);
			mpp_chunk_finish(req, &chunk, reached, ret);
			if (fatal_signal_pending(current))
				return -EINTR;
			if (mpp_task_caller_freezing())
				return -ERESTARTNOINTR;
			continue;
		}
		/* What only the caller may fault is all done or taken */
		WRITE_ONCE(req->caller_segs, false);
		if (!atomic_read(&req->active) && !mpp_has_handoff(req))
			return 0;
		if (nowait)
			return -EAGAIN;
		ret = wait_event_killable_timeout(req->wq,
						  !atomic_read(&req->active) ||
						  mpp_has_handoff(req), tick);
		if (ret < 0)
			return -EINTR;
		if (mpp_task_caller_freezing())
			return -ERESTARTNOINTR;
		mpp_control_sync(req, true);
	}
}

/**
 * mpp_populate_ready() - does the request want its caller now?
 * @req: a background request
 *
 * Return: true when its workers are done, or when part of it is left to a
 * thread of the caller (a userfaultfd-armed mapping).
 */
bool mpp_populate_ready(struct mpp_request *req)
{
	return !atomic_read(&req->active) || READ_ONCE(req->caller_segs) ||
	       mpp_has_handoff(req);
}

/**
 * mpp_populate_orphaned() - is the process that started @req gone?
 * @req: a background request
 *
 * Its mm has no user left: the process exited, or replaced it by exec. Then
 * no thread can reap the request.
 *
 * Return: true when nobody can reap @req.
 */
bool mpp_populate_orphaned(struct mpp_request *req)
{
	return !atomic_read(&req->mm->mm_users);
}

/* The outcome of one range, as a call of that range alone would report it */
static int mpp_range_result(struct mpp_request *req, struct mpp_range *range,
			    u64 *populated)
{
	unsigned long end = mpp_populated_end(req, range);

	*populated = end - range->start;
	if (range->bad)
		return range->bad;
	if (end == range->end)
		return 0;
	if (req->abort_err)
		return req->abort_err;
	if (range->stop_at < range->end)
		return range->err;
	if (range->hole_at < range->end)
		return -ENOMEM;
	return -EINTR;
}

/*
 * Each range's populated and error into the caller's array, their sum to
 * @total and the first error by index to @first_err. Returns 0, or -EFAULT
 * when the array is not writable.
 */
static int mpp_ranges_put(struct mpp_request *req, u64 *total,
			  int *first_err)
{
	struct memprepop_populate *p = &req->args;
	u8 __user *uranges = u64_to_user_ptr(p->ranges);
	int ret = 0;
	unsigned int i;

	*total = 0;
	*first_err = 0;
	for (i = 0; i < req->nr_ranges; i++) {
		struct memprepop_range __user *ur;
		u64 populated;
		int err;

		err = mpp_range_result(req, &req->ranges[i], &populated);
		*total += populated;
		if (err && !*first_err)
			*first_err = err;
		if (!p->ranges || ret)
			continue;
		ur = (void __user *)(uranges + (size_t)i * p->range_size);
		if (put_user(populated, &ur->populated) ||
		    put_user(err, &ur->error))
			ret = -EFAULT;
		if (i % 256 == 255)
			cond_resched();
	}
	return ret;
}

/*
 * Hand the node counts of every thread, summed, to the caller's array,
 * whose entries past what was counted are already zero.
 */
static int mpp_node_pages_put(struct mpp_request *req)
{
	u64 __user *dst = u64_to_user_ptr(req->args.node_pages);
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

/* The call's structure's outputs, written back to where the caller has it */
static int mpp_args_put(struct mpp_request *req)
{
	if (copy_to_user(req->uargs, &req->args,
			 min(req->usize, sizeof(req->args))))
		return -EFAULT;
	return 0;
}

/**
 * mpp_populate_finish() - the caller's share of a request, and its outcome
 * @req: a started request, in a thread of its mm: the caller, or the thread
 *	reaping it from the background
 * @nowait: do not wait for the workers
 *
 * Faults what only the caller may, waits for the workers, then writes the
 * outputs where the call had them: the structure, the ranges, the node
 * counts and @control.
 *
 * Return: 0 or the negative errno documented for %MEMPREPOP_IOC_POPULATE;
 * with @nowait, -EAGAIN when workers are still at work, nothing written;
 * -ERESTARTNOINTR, nothing written, when the caller is to be frozen: a
 * call is cancelled, to start again once thawed, a background request
 * goes on.
 */
int mpp_populate_finish(struct mpp_request *req, bool nowait)
{
	struct memprepop_populate *p = &req->args;
	int ret, put_err, first_err;
	u64 populated;

	ret = mpp_caller_work(req, nowait);
	if (ret == -EAGAIN)
		return ret;
	if (ret == -ERESTARTNOINTR) {
		if (!(req->flags & MEMPREPOP_F_BACKGROUND))
			mpp_cancel(req);
		return ret;
	}
	if (ret) {
		/* Killed: the workers stop on their own, not waited for */
		mpp_kill(req);
		mpp_ranges_put(req, &populated, &first_err);
		p->populated = populated;
		p->nsecs = ktime_get_ns() - req->t0;
		mpp_args_put(req);
		goto out;
	}

	p->workers = req->nr_workers ? req->nr_workers : 1;
	put_err = mpp_ranges_put(req, &populated, &first_err);
	ret = first_err;
	p->populated = populated;
	if (mpp_node_pages_put(req))
		put_err = -EFAULT;
	/* The last word on progress; a cancel this late changes nothing */
	if (req->control &&
	    put_user(atomic64_read(&req->bytes_done), &req->control->done))
		put_err = -EFAULT;
	p->nsecs = ktime_get_ns() - req->t0;
	if (mpp_args_put(req))
		put_err = -EFAULT;

	if (fatal_signal_pending(current))
		ret = -EINTR;
	else if (put_err)
		ret = put_err;
out:
	trace_memprepop_populate_end(p->addr, p->populated, p->nsecs, ret);
	mpp_stats_account(p, ret);
	return ret;
}

/* The checks of the call's structure, before anything is done */
static int mpp_args_check(const struct memprepop_populate *p)
{
	if (p->flags & ~MEMPREPOP_F_SUPPORTED)
		return -EINVAL;
	if ((p->flags & MEMPREPOP_F_EVENTFD) &&
	    !(p->flags & MEMPREPOP_F_BACKGROUND))
		return -EINVAL;
	if (p->__reserved || p->__reserved2)
		return -EINVAL;
	if (!p->node_pages != !p->nr_node_pages ||
	    p->nr_node_pages > MEMPREPOP_NODE_PAGES_MAX)
		return -EINVAL;
	if (!p->ranges != !p->nr_ranges)
		return -EINVAL;
	if (p->ranges && (p->addr || p->len || p->nr_ranges > MPP_MAX_RANGES ||
			  p->range_size < MEMPREPOP_RANGE_SIZE_VER0))
		return -EINVAL;
	if (p->ranges && p->range_size > MEMPREPOP_RANGE_SIZE_MAX)
		return -E2BIG;
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
	return 0;
}

/*
 * A range as do_madvise() checks it: its own -EINVAL when it does not pass,
 * and then nothing of it is done.
 */
static void mpp_range_init(struct mpp_range *range, u64 addr, u64 len)
{
	u64 end = addr + PAGE_ALIGN(len);

	range->start = addr;
	range->end = end;
	if (!PAGE_ALIGNED(addr) || (len && !PAGE_ALIGN(len)) || end < addr) {
		range->bad = -EINVAL;
		range->end = addr;
	}
	range->stop_at = range->end;
	range->hole_at = range->end;
}

/*
 * The caller's ranges, each entry as copy_struct_from_user() takes one, its
 * outputs zeroed. Returns 0, -EINTR (a fatal signal), or the copy's errno.
 */
static int mpp_ranges_get(struct mpp_request *req)
{
	const struct memprepop_populate *p = &req->args;
	const u8 __user *uranges = u64_to_user_ptr(p->ranges);
	unsigned int i;

	for (i = 0; i < req->nr_ranges; i++) {
		const u8 __user *entry = uranges + (size_t)i * p->range_size;
		struct memprepop_range __user *ur = (void __user *)entry;
		struct memprepop_range r;
		int ret;

		ret = copy_struct_from_user(&r, sizeof(r), entry,
					    p->range_size);
		if (ret)
			return ret;
		if (r.__reserved)
			return -EINVAL;
		/* The outputs: zero until known, and writable before anything */
		if (put_user((u64)0, &ur->populated) || put_user(0, &ur->error))
			return -EFAULT;
		mpp_range_init(&req->ranges[i], untagged_addr(r.addr), r.len);
		if (i % 256 == 255) {
			if (fatal_signal_pending(current))
				return -EINTR;
			cond_resched();
		}
	}
	return 0;
}

/*
 * The background's notification: the file's poll queue, an eventfd.
 * Returns 0 or -EBADF.
 */
static int mpp_notify_init(struct mpp_request *req,
			   struct wait_queue_head *poll_wq)
{
	struct eventfd_ctx *efd;

	if (!(req->flags & MEMPREPOP_F_BACKGROUND))
		return 0;
	req->poll_wq = poll_wq;
	if (!(req->flags & MEMPREPOP_F_EVENTFD))
		return 0;
	efd = eventfd_ctx_fdget(req->args.eventfd);
	if (IS_ERR(efd))
		return -EBADF;
	req->eventfd = efd;
	return 0;
}

/**
 * mpp_populate_start() - validate, plan and start a populate call
 * @args: the call's structure, as the module knows it; its outputs zeroed
 * @uargs: where the caller has it
 * @usize: its size there
 * @poll_wq: the file's poll wait queue, for a background call
 * @keep: the file's pool, in which the caller's threads may stay
 *
 * In the caller's context. Everything that can fail the whole call fails it
 * here, before anything is populated.
 *
 * Return: the started request, with a reference for the caller, NULL when
 * there is nothing to do (a synchronous call of length 0), or an ERR_PTR()
 * of the errno documented for %MEMPREPOP_IOC_POPULATE.
 */
struct mpp_request *mpp_populate_start(struct memprepop_populate *args,
				       void __user *uargs, size_t usize,
				       struct wait_queue_head *poll_wq,
				       struct mpp_pool **keep)
{
	unsigned int nr_ranges = args->ranges ? args->nr_ranges : 1;
	u64 t0 = ktime_get_ns();
	struct mpp_request *req;
	int ret;

	args->populated = 0;
	args->workers = 0;
	args->nsecs = 0;
	ret = mpp_args_check(args);
	if (ret)
		return ERR_PTR(ret);
	if (!args->ranges) {
		/* The one range: its checks are the call's */
		struct mpp_range one = { };

		mpp_range_init(&one, args->addr, args->len);
		if (one.bad)
			return ERR_PTR(one.bad);
		if (one.start == one.end &&
		    !(args->flags & MEMPREPOP_F_BACKGROUND))
			return NULL;
	}

	req = mpp_request_alloc(current->mm, nr_ranges,
				min_t(unsigned int, args->nr_node_pages,
				      nr_node_ids));
	if (!req)
		return ERR_PTR(-ENOMEM);
	req->args = *args;
	req->uargs = uargs;
	req->usize = usize;
	req->t0 = t0;
	req->flags = args->flags;
	req->control = u64_to_user_ptr(args->control);
	req->next_sync = jiffies + msecs_to_jiffies(MPP_SYNC_MS);
	if (args->ranges)
		ret = mpp_ranges_get(req);
	else
		mpp_range_init(&req->ranges[0], args->addr, args->len);
	if (!ret)
		ret = mpp_notify_init(req, poll_wq);
	if (ret)
		goto out_put;

	mpp_policy_init(req);
	ret = mpp_plan(req);
	if (ret)
		goto out_put;
	/* A bit per chunk: 1 MiB for MEMPREPOP_PLAN_LEN_MAX, so kvcalloc() */
	req->chunk_done = kvcalloc(BITS_TO_LONGS(req->nr_chunks) ?: 1,
				   sizeof(unsigned long), GFP_KERNEL_ACCOUNT);
	if (!req->chunk_done) {
		ret = -ENOMEM;
		goto out_put;
	}
	ret = mpp_workers_start(req, args->max_workers, keep);
	if (ret)
		goto out_put;
	trace_memprepop_populate_start(req->ranges[0].start,
				       req->ranges[0].end -
				       req->ranges[0].start,
				       req->flags, req->nr_workers,
				       req->nr_segs);
	/* Started with nothing for the workers: reap it at once */
	if ((req->flags & MEMPREPOP_F_BACKGROUND) && mpp_populate_ready(req))
		mpp_notify(req);
	return req;

out_put:
	mpp_request_put(req);
	return ERR_PTR(ret);
}
