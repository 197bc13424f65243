// SPDX-License-Identifier: GPL-2.0
/*
 * memprepop: the one edge to user memory. Every copy from and to user space
 * of the ioctls is here: a call's structure and its ranges are read and
 * checked once, the one range of @addr and @len becomes a range array of one
 * entry, and every output of a populate (the structure's, each range's, the
 * node counts, @control's last word) is written by one function, whatever
 * way the call ended. The core below reads and writes kernel memory only,
 * but for the progress it tells @control while it runs, through
 * mpp_uapi_control_sync().
 */
#include <linux/cpumask.h>
#include <linux/mm.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/stddef.h>
#include <linux/uaccess.h>

#include "internal.h"

/**
 * mpp_uapi_info_put() - what this module takes, for %MEMPREPOP_IOC_INFO
 * @uarg: the caller's struct memprepop_info
 * @usize: its size
 *
 * Return: 0, -EINVAL (too small) or -EFAULT.
 */
int mpp_uapi_info_put(void __user *uarg, size_t usize)
{
	struct memprepop_info info = {
		.flags = MEMPREPOP_F_SUPPORTED,
		.populate_size = sizeof(struct memprepop_populate),
		.info_size = sizeof(struct memprepop_info),
		.max_workers = num_online_cpus(),
		.max_ranges = MPP_MAX_RANGES,
		.range_size = sizeof(struct memprepop_range),
	};

	if (usize < MEMPREPOP_INFO_SIZE_VER0)
		return -EINVAL;
	if (copy_to_user(uarg, &info, min(usize, sizeof(info))))
		return -EFAULT;
	/* A newer caller's fields that this module does not know read as 0 */
	if (usize > sizeof(info) &&
	    clear_user(uarg + sizeof(info), usize - sizeof(info)))
		return -EFAULT;
	return 0;
}

/* The checks of the call's structure, before anything is done */
static int mpp_uapi_args_check(const struct memprepop_populate *p)
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
	return 0;
}

/*
 * A range as do_madvise() checks it: its own -EINVAL when it does not pass,
 * and then nothing of it is done.
 */
static void mpp_uapi_range_init(struct mpp_range *range, u64 addr, u64 len)
{
	u64 end = addr + PAGE_ALIGN(len);

	memset(range, 0, sizeof(*range));
	range->start = addr;
	range->end = end;
	if (!PAGE_ALIGNED(addr) || (len && !PAGE_ALIGN(len)) || end < addr) {
		range->bad = -EINVAL;
		range->end = addr;
	}
	range->stop_at = range->end;
}

/**
 * mpp_uapi_populate_get() - read and check a %MEMPREPOP_IOC_POPULATE call
 * @uarg: the caller's struct memprepop_populate
 * @usize: its size, from the ioctl number
 * @args: filled with it, as this module knows it
 * @call: filled with the call as the core takes it
 *
 * Reads @control's reserved word and clears the node counts, so that both
 * are known writable before anything is done. A synchronous call of the
 * one range @addr, @len of length 0 has nothing to do: @call's @nr_ranges
 * is then 0. Once the structure is read, @call's @uargs is set, and the
 * outputs go there even when the call fails (mpp_uapi_populate_put()).
 *
 * Return: 0, or the errno documented for %MEMPREPOP_IOC_POPULATE: -EINVAL,
 * -E2BIG or -EFAULT.
 */
static int mpp_uapi_populate_get(void __user *uarg, size_t usize,
				 struct memprepop_populate *args,
				 struct mpp_call *call)
{
	struct mpp_range one;
	u32 reserved;
	int ret;

	memset(call, 0, sizeof(*call));
	if (usize < MEMPREPOP_POPULATE_SIZE_VER0)
		return -EINVAL;
	ret = copy_struct_from_user(args, sizeof(*args), uarg, usize);
	if (ret)
		return ret;
	/* As madvise() takes it: a tagged pointer names the same memory */
	args->addr = untagged_addr(args->addr);
	*call = (struct mpp_call) {
		.flags = args->flags,
		.max_workers = args->max_workers,
		.nr_ranges = args->ranges ? args->nr_ranges : 1,
		.nr_stat_nodes = min_t(unsigned int, args->nr_node_pages,
				       nr_node_ids),
		.eventfd = args->eventfd,
		.control = u64_to_user_ptr(args->control),
		.uargs = uarg,
		.usize = usize,
		.uranges = u64_to_user_ptr(args->ranges),
		.range_size = args->range_size,
		.unode_pages = u64_to_user_ptr(args->node_pages),
	};
	ret = mpp_uapi_args_check(args);
	if (ret)
		return ret;
	if (call->control) {
		if (get_user(reserved, &call->control->__reserved))
			return -EFAULT;
		if (reserved)
			return -EINVAL;
	}
	/* Checked writable before anything is done; uncounted entries zero */
	if (args->nr_node_pages &&
	    clear_user(call->unode_pages,
		       (unsigned long)args->nr_node_pages * sizeof(u64)))
		return -EFAULT;
	if (call->uranges)
		return 0;
	/* The one range: its checks are the call's */
	mpp_uapi_range_init(&one, args->addr, args->len);
	if (one.bad)
		return one.bad;
	if (one.start == one.end && !(call->flags & MEMPREPOP_F_BACKGROUND))
		call->nr_ranges = 0;
	return 0;
}

/**
 * mpp_uapi_ranges_get() - the call's ranges, as kernel ranges
 * @call: the call
 * @args: its structure, for the one range of @addr and @len
 * @ranges: filled, @call's @nr_ranges of them
 *
 * Each entry of the caller's array is read as copy_struct_from_user() takes
 * it, and its outputs are zeroed, so that they are known writable; without
 * an array, the one range is the only entry.
 *
 * Return: 0, -EINTR (a fatal signal), -EINVAL or the copy's errno.
 */
static int mpp_uapi_ranges_get(const struct mpp_call *call,
			       const struct memprepop_populate *args,
			       struct mpp_range *ranges)
{
	unsigned int i;

	if (!call->uranges) {
		mpp_uapi_range_init(&ranges[0], args->addr, args->len);
		return 0;
	}
	for (i = 0; i < call->nr_ranges; i++) {
		const u8 __user *entry = call->uranges +
					 (size_t)i * call->range_size;
		struct memprepop_range __user *ur = (void __user *)entry;
		struct memprepop_range r;
		int ret;

		ret = copy_struct_from_user(&r, sizeof(r), entry,
					    call->range_size);
		if (ret)
			return ret;
		if (r.__reserved)
			return -EINVAL;
		if (put_user((u64)0, &ur->populated) || put_user(0, &ur->error))
			return -EFAULT;
		mpp_uapi_range_init(&ranges[i], untagged_addr(r.addr), r.len);
		if (i % 256 == 255) {
			if (fatal_signal_pending(current))
				return -EINTR;
			cond_resched();
		}
	}
	return 0;
}

/**
 * mpp_uapi_call_get() - read a %MEMPREPOP_IOC_POPULATE call, ranges included
 * @call: filled with the call as the core takes it
 * @uarg: the caller's struct memprepop_populate
 * @usize: its size, from the ioctl number
 *
 * Reads the structure (mpp_uapi_populate_get()), then its ranges into an
 * array of @call's (mpp_uapi_ranges_get()): the one place a call's input is
 * read. The array is @call's until a request takes it over; either way
 * mpp_uapi_call_release() frees it.
 *
 * Return: 0, with @call's @nr_ranges 0 when there is nothing to do, or
 * -EINVAL, -E2BIG, -EFAULT, -EINTR or -ENOMEM.
 */
int mpp_uapi_call_get(struct mpp_call *call, void __user *uarg, size_t usize)
{
	struct memprepop_populate args;
	int ret;

	ret = mpp_uapi_populate_get(uarg, usize, &args, call);
	if (ret || !call->nr_ranges)
		return ret;
	call->ranges = kvcalloc(call->nr_ranges, sizeof(*call->ranges),
				GFP_KERNEL_ACCOUNT);
	if (!call->ranges)
		return -ENOMEM;
	ret = mpp_uapi_ranges_get(call, &args, call->ranges);
	if (ret)
		mpp_uapi_call_release(call);
	return ret;
}

/**
 * mpp_uapi_call_release() - free what mpp_uapi_call_get() allocated
 * @call: the call, read or not; its outputs can still be written after
 */
void mpp_uapi_call_release(struct mpp_call *call)
{
	kvfree(call->ranges);
	call->ranges = NULL;
}

/**
 * mpp_uapi_call_same() - are @a and @b the same call?
 * @a: a call as mpp_uapi_call_get() read it, perhaps planned since
 * @b: another
 *
 * The same arguments, outputs at the same places, and the same ranges as
 * they were read.
 *
 * Return: true when they are.
 */
bool mpp_uapi_call_same(const struct mpp_call *a, const struct mpp_call *b)
{
	unsigned int i;

	if (a->flags != b->flags || a->max_workers != b->max_workers ||
	    a->nr_ranges != b->nr_ranges ||
	    a->nr_stat_nodes != b->nr_stat_nodes || a->eventfd != b->eventfd ||
	    a->control != b->control || a->uargs != b->uargs ||
	    a->usize != b->usize || a->uranges != b->uranges ||
	    a->range_size != b->range_size || a->unode_pages != b->unode_pages)
		return false;
	for (i = 0; i < a->nr_ranges; i++)
		if (a->ranges[i].start != b->ranges[i].start ||
		    a->ranges[i].end != b->ranges[i].end ||
		    a->ranges[i].bad != b->ranges[i].bad)
			return false;
	return true;
}

/* Each range's outcome into the caller's array: 0 or -EFAULT */
static int mpp_uapi_ranges_put(const struct mpp_call *call,
			       const struct mpp_result *res)
{
	unsigned int i;

	for (i = 0; call->uranges && i < res->nr_ranges; i++) {
		const struct mpp_range *range = &res->ranges[i];
		struct memprepop_range __user *ur = (void __user *)
			(call->uranges + (size_t)i * call->range_size);

		if (put_user(range->populated, &ur->populated) ||
		    put_user(range->error, &ur->error))
			return -EFAULT;
		if (i % 256 == 255)
			cond_resched();
	}
	return 0;
}

/* Write @val to the field at @off of the caller's structure, if it has it */
static int mpp_uapi_field_put(const struct mpp_call *call, size_t off,
			      const void *val, size_t size)
{
	if (call->usize < off + size)
		return 0;
	return copy_to_user(call->uargs + off, val, size) ? -EFAULT : 0;
}

/**
 * mpp_uapi_populate_put() - every output of a populate call
 * @call: the call
 * @res: what it did, once it is over, or NULL when it failed or had
 *	nothing to do before it ran
 * @ret: the call's result so far
 *
 * The structure's @populated, @workers and @nsecs, and, with @res, each
 * range's @populated and @error, the node counts and @control's last word
 * on progress (a cancel this late changes nothing). The same for
 * synchronous and background calls, calls with workers or without, and
 * calls that failed: without @res the structure's outputs are zero, as are
 * the ranges' and the node counts, which were zeroed when they were read.
 *
 * Return: @ret, or -EFAULT when an output was not writable and @ret is not
 * -EINTR.
 */
int mpp_uapi_populate_put(const struct mpp_call *call,
			  const struct mpp_result *res, int ret)
{
	u64 populated = 0, nsecs = 0;
	u32 workers = 0;
	int err = 0;

	if (res) {
		populated = res->populated;
		nsecs = res->nsecs;
		workers = res->workers;
		err = mpp_uapi_ranges_put(call, res);
		if (res->nr_stat_nodes &&
		    copy_to_user(call->unode_pages, res->node_pages,
				 res->nr_stat_nodes * sizeof(u64)))
			err = -EFAULT;
		if (call->control && put_user(res->done, &call->control->done))
			err = -EFAULT;
	}
	if (mpp_uapi_field_put(call,
			       offsetof(struct memprepop_populate, populated),
			       &populated, sizeof(populated)) ||
	    mpp_uapi_field_put(call,
			       offsetof(struct memprepop_populate, workers),
			       &workers, sizeof(workers)) ||
	    mpp_uapi_field_put(call,
			       offsetof(struct memprepop_populate, nsecs),
			       &nsecs, sizeof(nsecs)))
		err = -EFAULT;
	return err && ret != -EINTR ? err : ret;
}

/**
 * mpp_uapi_wait_get() - read and check a %MEMPREPOP_IOC_WAIT call
 * @uarg: the caller's struct memprepop_wait
 * @usize: its size
 * @args: filled with it
 *
 * Return: 0, -EINVAL or -EFAULT.
 */
int mpp_uapi_wait_get(void __user *uarg, size_t usize,
		      struct memprepop_wait *args)
{
	int ret;

	if (usize < MEMPREPOP_WAIT_SIZE_VER0)
		return -EINVAL;
	ret = copy_struct_from_user(args, sizeof(*args), uarg, usize);
	if (ret)
		return ret;
	if ((args->flags & ~MEMPREPOP_WAIT_NOHANG) || args->__reserved)
		return -EINVAL;
	return 0;
}

/**
 * mpp_uapi_wait_put() - the result of a %MEMPREPOP_IOC_WAIT call
 * @uarg: the caller's struct memprepop_wait
 * @usize: its size
 * @args: the call, its result filled in
 *
 * Return: 0 or -EFAULT.
 */
int mpp_uapi_wait_put(void __user *uarg, size_t usize,
		      const struct memprepop_wait *args)
{
	if (copy_to_user(uarg, args, min(usize, sizeof(*args))))
		return -EFAULT;
	return 0;
}

/**
 * mpp_uapi_control_sync() - tell @control the progress, read its cancel
 * @control: the caller's struct memprepop_control
 * @done: bytes populated so far
 * @cancel: set to its @cancel
 *
 * In the caller's context, or in a worker with page faults disabled: a
 * worker never faults @control in (it might be userfaultfd-armed).
 *
 * Return: 0 or -EFAULT.
 */
int mpp_uapi_control_sync(struct memprepop_control __user *control, u64 done,
			  u32 *cancel)
{
	if (put_user(done, &control->done) || get_user(*cancel, &control->cancel))
		return -EFAULT;
	return 0;
}
