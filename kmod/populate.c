// SPDX-License-Identifier: GPL-2.0
/*
 * memprepop: the job of one populate call, from start to end. A request is
 * allocated for the call the edge read (uapi.c), its placement is recorded
 * (policy.c), its ranges are planned (plan.c), its crew sized (workers.c),
 * room is made for its outcome (outcome.c), and its workers start. The
 * caller then faults in what only it may fault (userfaultfd-armed
 * mappings, found when planning or handed back by a worker), waits for the
 * workers, and the outcome is worked out for the edge to write. A
 * background call stops after the start; the thread that reaps it does
 * the rest.
 *
 * The caller never waits for a worker where a fatal signal cannot end the
 * wait: a killed caller returns at once, and the workers, which hold their
 * own references, stop within a batch. Nor does it wait for them through
 * a signal (a stop, a ptrace trap, a freezer, a handler): it leaves, to be
 * stopped or to run the handler with them, and resumes the call after. A
 * cancelled call returns once none of its workers is inside one of its
 * chunks, so that what it reports is exact.
 */
#include <linux/errno.h>
#include <linux/jiffies.h>
#include <linux/kref.h>
#include <linux/mm.h>
#include <linux/pid.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/timekeeping.h>

#include "internal.h"
#include "trace.h"

/*
 * A request for @call, in the caller's context, which takes over @call's
 * ranges. It holds the caller's mm with mmgrab() and its identity. Returns
 * the request, with one reference for the caller, or an ERR_PTR(): -EINVAL
 * for a caller without an mm (a kernel thread has nothing to populate),
 * -ENOMEM.
 */
static struct mpp_request *mpp_request_alloc(struct mpp_call *call)
{
	struct mpp_request *req;

	if (!current->mm)
		return ERR_PTR(-EINVAL);
	req = kzalloc(sizeof(*req), GFP_KERNEL_ACCOUNT);
	if (!req)
		return ERR_PTR(-ENOMEM);
	req->call = *call;
	call->ranges = NULL;
	req->t0 = ktime_get_ns();
	kref_init(&req->ref);
	mmgrab(current->mm);
	req->mm = current->mm;
	req->tgid = get_pid(task_tgid(current));
	mpp_identity_init(&req->id);
	return req;
}

/* The last reference: each part is freed by the file that owns it */
void mpp_request_release(struct kref *ref)
{
	struct mpp_request *req = container_of(ref, struct mpp_request, ref);

	mpp_crew_destroy(&req->crew);
	mpp_outcome_destroy(&req->out);
	mpp_plan_destroy(&req->plan);
	mpp_identity_destroy(&req->id);
	mpp_uapi_call_release(&req->call);
	put_pid(req->tgid);
	mmdrop(req->mm);
	kfree(req);
}

/**
 * mpp_populate_start() - a request for a call, planned, its workers started
 * @call: the call, as the edge read it, with ranges; the request takes them
 *	over
 * @poll_wq: the file's poll wait queue, for a background call
 * @pools: the file's pools, in which the caller's threads may stay
 *
 * Everything that can fail the whole call fails it here, before anything is
 * populated.
 *
 * Return: the request, with one reference for the caller, or an ERR_PTR()
 * of the negative errno documented for %MEMPREPOP_IOC_POPULATE.
 */
struct mpp_request *mpp_populate_start(struct mpp_call *call,
				       struct wait_queue_head *poll_wq,
				       struct mpp_pools *pools)
{
	bool background = call->flags & MEMPREPOP_F_BACKGROUND;
	struct mpp_request *req;
	unsigned int nr_workers;
	int ret;

	req = mpp_request_alloc(call);
	if (IS_ERR(req))
		return req;
	ret = mpp_crew_init(&req->crew, &req->call, poll_wq);
	if (ret)
		goto out_put;
	req->next_sync = jiffies + msecs_to_jiffies(MPP_SYNC_MS);
	mpp_policy_init(&req->place);
	ret = mpp_plan_make(req);
	if (ret)
		goto out_put;
	nr_workers = mpp_crew_size(req);
	/* Where each thread got, the caller's included */
	ret = mpp_outcome_init(&req->out, req->plan.nr_chunks, nr_workers + 1,
			       req->call.nr_stat_nodes);
	if (ret)
		goto out_put;
	req->fault = (struct mpp_fault_ctx) {
		.mm = req->mm, .id = &req->id, .flags = req->call.flags,
		.killed = &req->killed, .bytes_done = &req->out.bytes_done,
		.nr_nodes = req->out.nr_stat_nodes,
	};
	ret = mpp_crew_start(req, pools);
	if (ret)
		goto out_put;
	trace_memprepop_populate_start(req->call.ranges[0].start,
				       req->call.ranges[0].end -
				       req->call.ranges[0].start,
				       req->call.flags, req->crew.nr_workers,
				       req->plan.nr_segs);
	/* Started with nothing for the workers: reap it at once */
	if (background && mpp_populate_ready(req))
		mpp_notify(req);
	return req;

out_put:
	mpp_request_put(req);
	return ERR_PTR(ret);
}

/*
 * The caller has a signal to take that is not fatal: a stop, a ptrace
 * trap, a freezer, a handler. Its workers take theirs between chunks; it
 * leaves its wait to take its own, once the call has run MPP_SYNC_MS, and
 * the restarted syscall resumes the call where it was (main.c keeps it on
 * the file meanwhile): a caller signalled however often (a profiling
 * timer, say) still gets its call done.
 */
/*
 * A chunk a worker handed back is the caller's to fault, unless the request
 * is cancelled: then it stays where it is, and the outcome counts it up to
 * where its worker stopped (mpp_plan_handed_back()).
 */
static bool mpp_caller_handoff(struct mpp_request *req)
{
	return !READ_ONCE(req->killed) && mpp_plan_has_handoff(&req->plan);
}

/* Its workers are done, or handed it a chunk */
static bool mpp_caller_wanted(struct mpp_request *req)
{
	return mpp_crew_done(req) || mpp_caller_handoff(req);
}

static bool mpp_caller_interrupted(const struct mpp_request *req)
{
	return signal_pending(current) && !fatal_signal_pending(current) &&
	       ktime_get_ns() - req->t0 >= MPP_SYNC_MS * NSEC_PER_MSEC;
}

/*
 * The caller faults @chunk, pausing every MPP_SYNC_MS, when it has a
 * @control, to tell it how far the call got and to read a cancel.
 */
static int mpp_caller_chunk(struct mpp_request *req,
			    const struct mpp_chunk *chunk,
			    unsigned long *reached)
{
	unsigned long pause_at;
	int ret;

	*reached = chunk->start;
	for (;;) {
		pause_at = jiffies + MAX_JIFFY_OFFSET;
		if (req->call.control && !READ_ONCE(req->out.abort_err))
			pause_at = READ_ONCE(req->next_sync);
		ret = mpp_fault_caller(&req->fault, chunk, req->out.node_pages,
				       pause_at, reached);
		if (ret != -EAGAIN)
			return ret;
		mpp_control_sync(req, true);
	}
}

/*
 * The calling thread's share: the segments only it may fault, then what
 * workers hand back, until the last worker is done, then what no worker
 * took (mpp_plan_leave_unclaimed()). Every wait ends at a
 * fatal signal, and at least every MPP_SYNC_MS the progress goes to
 * @control, a cancel is read from it, and the caller looks whether it is
 * to stop. Once the request is cancelled, its workers stop at their next
 * batch, so that @populated stays exact, and are waited for, killably: one
 * in a wait of a file system that does not answer is waited for as a
 * thread of the caller inside madvise() would be (a worker cannot be
 * killed alone: a fatal signal is its process's).
 *
 * Returns 0, -EINTR when the caller was killed (the workers are then not
 * waited for), -ERESTARTNOINTR when it has another signal to take, or with
 * @nowait -EAGAIN when only workers have work left.
 */
static int mpp_caller_work(struct mpp_request *req, bool nowait)
{
	unsigned long tick = msecs_to_jiffies(MPP_SYNC_MS);
	struct mpp_plan *plan = &req->plan;
	unsigned int next_seg = 0;
	struct mpp_chunk chunk;

	for (;;) {
		unsigned long reached;
		long ret;

		/* Nothing more after a cancel: each thread leaves one partial */
		if (!READ_ONCE(req->killed) &&
		    (mpp_plan_claim(req, NUMA_NO_NODE, false, &next_seg,
				    &chunk) ||
		     mpp_plan_take_handoff(plan, &chunk))) {
			ret = mpp_caller_chunk(req, &chunk, &reached);
			if (ret == -EINTR)
				mpp_kill(req);
			mpp_chunk_finish(req, &chunk, reached, ret);
			/* Between chunks as well as within one */
			mpp_control_sync(req, true);
			if (fatal_signal_pending(current))
				return -EINTR;
			if (mpp_caller_interrupted(req))
				return -ERESTARTNOINTR;
			continue;
		}
		/* What only the caller may fault is all done or taken */
		WRITE_ONCE(plan->caller_segs, false);
		if (mpp_crew_done(req) && !mpp_caller_handoff(req)) {
			if (READ_ONCE(req->killed) ||
			    !mpp_plan_leave_unclaimed(plan))
				return 0;
			next_seg = 0;
			continue;
		}
		if (nowait)
			return -EAGAIN;
		/* A signal the call is too young to leave for: not a spin */
		if (signal_pending(current))
			wait_event_killable_timeout(req->crew.wq,
						    mpp_caller_wanted(req), tick);
		else
			wait_event_interruptible_timeout(req->crew.wq,
							 mpp_caller_wanted(req),
							 tick);
		if (fatal_signal_pending(current))
			return -EINTR;
		if (mpp_caller_interrupted(req))
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
	return mpp_crew_done(req) || READ_ONCE(req->plan.caller_segs) ||
	       mpp_caller_handoff(req);
}

/**
 * mpp_populate_orphaned() - is the process that started @req gone?
 * @req: a background request
 *
 * Its mm has no user left (the process exited, or replaced it by exec), or
 * the process has exited while another that shares its mm
 * (clone(CLONE_VM)) keeps it. Then no thread can reap the request: only
 * the process that started it may, in that mm.
 *
 * Return: true when nobody can reap @req.
 */
bool mpp_populate_orphaned(struct mpp_request *req)
{
	return !atomic_read(&req->mm->mm_users) ||
	       !pid_has_task(req->tgid, PIDTYPE_TGID);
}

/**
 * mpp_populate_finish() - the caller's share of a request, and its outcome
 * @req: a started request, in a thread of its mm: the caller, or the thread
 *	reaping it from the background
 * @nowait: do not wait for the workers
 *
 * Faults what only the caller may, waits for the workers, then works out
 * how far each range got, for the edge to write (mpp_uapi_populate_put()).
 *
 * Return: 0 or the negative errno documented for %MEMPREPOP_IOC_POPULATE;
 * with @nowait, -EAGAIN when workers are still at work, nothing worked
 * out; -ERESTARTNOINTR, nothing worked out, when the caller has another
 * signal to take: a call is left, to be resumed by calling this again once
 * the thread has taken its signal; a background request goes on.
 */
int mpp_populate_finish(struct mpp_request *req, bool nowait)
{
	bool sync = !(req->call.flags & MEMPREPOP_F_BACKGROUND);
	int ret;

	if (sync)
		mpp_crew_caller_away(req, false);
	ret = mpp_caller_work(req, nowait);
	if (ret == -ERESTARTNOINTR && sync)
		mpp_crew_caller_away(req, true);
	if (ret == -EAGAIN || ret == -ERESTARTNOINTR)
		return ret;
	/* Killed: the workers stop on their own, not waited for */
	if (ret)
		mpp_kill(req);
	ret = mpp_outcome_finish(req) ?: ret;
	if (fatal_signal_pending(current))
		ret = -EINTR;
	req->nsecs = ktime_get_ns() - req->t0;
	trace_memprepop_populate_end(req->call.ranges[0].start,
				     req->out.populated,
				     req->nsecs, ret);
	return ret;
}

/**
 * mpp_populate_resumable() - may a call its thread left go on?
 * @req: a synchronous request its thread left for a signal
 *
 * Not once it was given up (mpp_populate_abandon(), interrupted) or its
 * process is dying: made again, the call then starts anew. One cancelled
 * through @control goes on, to report its cancel.
 *
 * Return: true when the call, made again, resumes @req.
 */
bool mpp_populate_resumable(struct mpp_request *req)
{
	return !READ_ONCE(req->killed) || READ_ONCE(req->out.abort_err);
}

/**
 * mpp_populate_abandon() - a thread gives up the call it left
 * @req: a synchronous request its thread left for a signal, in a thread of
 *	its mm
 *
 * Cancels it and waits, interruptibly, until none of its workers is inside
 * one of its chunks: they stop at their next batch.
 *
 * Return: 0; -EINTR when the caller was killed (the workers stop on their
 * own, not waited for); -ERESTARTNOINTR when it has another signal to take
 * first, @req cancelled and still at work.
 */
int mpp_populate_abandon(struct mpp_request *req)
{
	mpp_kill(req);
	if (!wait_event_interruptible(req->crew.wq, mpp_crew_done(req)))
		return 0;
	return fatal_signal_pending(current) ? -EINTR : -ERESTARTNOINTR;
}

/**
 * mpp_populate_result() - what a request that is over reports
 * @req: the request, mpp_populate_finish() having returned its result
 * @res: filled in; it points into @req, for as long as @req is held
 *
 * Return: @res.
 */
const struct mpp_result *mpp_populate_result(const struct mpp_request *req,
					     struct mpp_result *res)
{
	*res = (struct mpp_result) {
		.ranges = req->call.ranges, .nr_ranges = req->call.nr_ranges,
		.populated = req->out.populated, .nsecs = req->nsecs,
		.done = atomic64_read(&req->out.bytes_done),
		.workers = req->crew.nr_workers ?: 1,
		.node_pages = req->out.node_pages,
		.nr_stat_nodes = req->out.nr_stat_nodes,
	};
	return res;
}

/**
 * mpp_populate() - a synchronous call, from start to end
 * @call: the call, as the edge read it, with ranges; its request takes them
 *	over
 * @pools: the file's pools, in which the caller's threads may stay
 * @ret: set to the call's result (mpp_populate_finish()), or to the errno
 *	of a call that failed before it had an outcome
 *
 * Return: the request, with one reference for the caller, whose outcome
 * the edge writes, or which the caller left for a signal (*@ret
 * -ERESTARTNOINTR: nothing is written); NULL when the call failed before
 * it had an outcome.
 */
struct mpp_request *mpp_populate(struct mpp_call *call, struct mpp_pools *pools,
				 int *ret)
{
	struct mpp_request *req;

	req = mpp_populate_start(call, NULL, pools);
	if (IS_ERR(req)) {
		*ret = PTR_ERR(req);
		return NULL;
	}
	*ret = mpp_populate_finish(req, false);
	return req;
}
