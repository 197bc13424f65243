// SPDX-License-Identifier: GPL-2.0
/*
 * memprepop: a call its caller does alone. A synchronous call of less in
 * all than one worker's share (%MPP_CREW_MIN_PER_WORKER) gets no worker
 * (workers.c), so, as padata_do_multithreaded() runs a job of one piece in
 * its caller, it is not made a request: nothing is planned, shared or
 * referenced, nothing allocated but the node counts asked for. The calling
 * thread faults each range from its start (fault.c), one after the other,
 * each mapping checked as it is reached, so that each range ends where
 * madvise(MADV_POPULATE_WRITE) of it alone would, with its errno; a range
 * that fails does not stop the others.
 *
 * As in a call with workers, @control is told the progress, and a cancel
 * read from it, every MPP_SYNC_MS, and the caller leaves for a signal that
 * is not fatal once the call has run that long. Nothing is kept for it: the
 * restarted syscall starts the call anew and passes over what it populated,
 * at most %MPP_CREW_MIN_PER_WORKER of pages already there.
 */
#include <linux/jiffies.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/timekeeping.h>

#include "internal.h"
#include "trace.h"

/**
 * mpp_call_alone() - is @call for its caller alone?
 * @call: a call as the edge read it, with at least one range
 *
 * Return: true for a synchronous call of less than
 * %MPP_CREW_MIN_PER_WORKER over all its ranges.
 */
bool mpp_call_alone(const struct mpp_call *call)
{
	u64 len = 0;
	unsigned int i;

	if (call->flags & MEMPREPOP_F_BACKGROUND)
		return false;
	for (i = 0; i < call->nr_ranges; i++) {
		u64 range_len = call->ranges[i].end - call->ranges[i].start;

		if (range_len >= MPP_CREW_MIN_PER_WORKER - len)
			return false;
		len += range_len;
	}
	return true;
}

/**
 * mpp_alone_init() - set up a call its caller does alone
 * @a: the call's state, on the caller's stack
 * @call: the call, for which mpp_call_alone() is true
 *
 * Return: 0, -EINVAL for a caller without an mm (a kernel thread has
 * nothing to populate) or -ENOMEM; then nothing is to be destroyed.
 */
int mpp_alone_init(struct mpp_alone *a, const struct mpp_call *call)
{
	if (!current->mm)
		return -EINVAL;
	memset(a, 0, sizeof(*a));
	if (call->nr_stat_nodes) {
		a->node_pages = kcalloc(call->nr_stat_nodes,
					sizeof(*a->node_pages),
					GFP_KERNEL_ACCOUNT);
		if (!a->node_pages)
			return -ENOMEM;
	}
	a->t0 = ktime_get_ns();
	a->next_sync = jiffies + msecs_to_jiffies(MPP_SYNC_MS);
	a->control = call->control;
	atomic64_set(&a->bytes_done, 0);
	mpp_identity_init(&a->id);
	a->fault = (struct mpp_fault_ctx) {
		.mm = current->mm, .id = &a->id, .flags = call->flags,
		.killed = &a->killed, .bytes_done = &a->bytes_done,
		.nr_nodes = call->nr_stat_nodes,
	};
	return 0;
}

/**
 * mpp_alone_destroy() - what mpp_alone_init() took
 * @a: the call's state, once its result is written
 */
void mpp_alone_destroy(struct mpp_alone *a)
{
	mpp_identity_destroy(&a->id);
	kfree(a->node_pages);
}

/*
 * Between batches and between ranges: every MPP_SYNC_MS @control is told
 * how far the call got and its cancel is read (one it cannot be written or
 * read through fails the call with EFAULT); then, is the caller to leave?
 * Returns 0 to go on (the call perhaps cancelled: @a->killed), -EINTR at a
 * fatal signal, or -ERESTARTNOINTR at another once the call has run
 * MPP_SYNC_MS. A cancelled call is not left: what is left of it faults
 * nothing, and a call made anew would read the cancel only MPP_SYNC_MS
 * later, and leave again if a signal were pending then.
 */
static int mpp_alone_pause(struct mpp_alone *a)
{
	u32 cancel;

	if (time_after_eq(jiffies, a->next_sync)) {
		a->next_sync = jiffies + msecs_to_jiffies(MPP_SYNC_MS);
		if (a->control && !a->abort_err) {
			if (mpp_uapi_control_sync(a->control,
						  atomic64_read(&a->bytes_done),
						  &cancel))
				a->abort_err = -EFAULT;
			else if (cancel)
				a->abort_err = -ECANCELED;
			a->killed = a->abort_err != 0;
		}
	}
	if (!signal_pending(current))
		return 0;
	if (fatal_signal_pending(current))
		return -EINTR;
	if (a->killed)
		return 0;
	if (ktime_get_ns() - a->t0 >= MPP_SYNC_MS * NSEC_PER_MSEC)
		return -ERESTARTNOINTR;
	return 0;
}

/*
 * Fault @range from its start, pausing every MPP_SYNC_MS, and set its
 * @populated and @error. After a cancel, a range not begun is left as it
 * is, and one begun ends where the walk stopped in it (fault.c moves past
 * a huge page it ended inside). Returns 0, or what ends the call: -EINTR or
 * -ERESTARTNOINTR.
 */
static int mpp_alone_range(struct mpp_alone *a, struct mpp_range *range)
{
	struct mpp_chunk chunk = {
		.range = range, .start = range->start, .end = range->end,
	};
	unsigned long reached = range->start;
	int ret;

	if (range->bad || range->start == range->end) {
		range->error = range->bad;
		return 0;
	}
	/* Not begun: a failure at its start is still its own */
	if (a->killed) {
		range->error = mpp_fault_check(&a->fault, range->start) ?:
			       a->abort_err;
		return 0;
	}
	for (;;) {
		ret = mpp_fault_caller(&a->fault, &chunk, a->node_pages,
				       a->next_sync, &reached);
		if (ret != -EAGAIN)
			break;
		ret = mpp_alone_pause(a);
		if (ret)
			break;
	}
	range->populated = reached - range->start;
	if (reached == range->end)
		range->error = 0;
	else if (ret == -ECANCELED)
		range->error = a->abort_err;
	else
		range->error = ret;
	return ret == -EINTR || ret == -ERESTARTNOINTR ? ret : 0;
}

/**
 * mpp_alone_run() - a call its caller does alone, from start to end
 * @a: the call's state, from mpp_alone_init()
 * @call: the call; its ranges get their @populated and @error
 * @res: filled in with what the call reports, unless it is left
 *
 * Return: 0, the first range's error by index, -EINTR when the caller was
 * killed, or -ERESTARTNOINTR, nothing filled in, when it has another signal
 * to take: the restarted syscall makes the call anew.
 */
int mpp_alone_run(struct mpp_alone *a, struct mpp_call *call,
		  struct mpp_result *res)
{
	int ret = 0, first_err = 0;
	unsigned int i;

	trace_memprepop_populate_start(call->ranges[0].start,
				       call->ranges[0].end -
				       call->ranges[0].start,
				       call->flags, 0, call->nr_ranges);
	for (i = 0; i < call->nr_ranges && !ret; i++) {
		ret = mpp_alone_range(a, &call->ranges[i]);
		if (!ret && i + 1 < call->nr_ranges)
			ret = mpp_alone_pause(a);
		cond_resched();
	}
	if (ret == -ERESTARTNOINTR)
		return ret;
	/* Killed: the ranges not begun end at their start */
	for (; i < call->nr_ranges; i++) {
		struct mpp_range *range = &call->ranges[i];

		range->error = range->bad ?:
			       (range->start == range->end ? 0 : -EINTR);
	}
	*res = (struct mpp_result) {
		.ranges = call->ranges, .nr_ranges = call->nr_ranges,
		.done = atomic64_read(&a->bytes_done), .workers = 1,
		.node_pages = a->node_pages,
		.nr_stat_nodes = a->fault.nr_nodes,
	};
	for (i = 0; i < call->nr_ranges; i++) {
		res->populated += call->ranges[i].populated;
		if (call->ranges[i].error && !first_err)
			first_err = call->ranges[i].error;
	}
	ret = first_err ?: ret;
	if (fatal_signal_pending(current))
		ret = -EINTR;
	res->nsecs = ktime_get_ns() - a->t0;
	trace_memprepop_populate_end(call->ranges[0].start, res->populated,
				     res->nsecs, ret);
	return ret;
}
