// SPDX-License-Identifier: GPL-2.0
/*
 * memprepop: the /dev/memprepop misc device and its ioctls.
 */
#include <linux/cpumask.h>
#include <linux/fs.h>
#include <linux/miscdevice.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/poll.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/sched.h>
#include <linux/uaccess.h>

#include "internal.h"

#define CREATE_TRACE_POINTS
#include "trace.h"

static bool memprepop_cmd_is(unsigned int cmd, unsigned int want)
{
	return _IOC_TYPE(cmd) == _IOC_TYPE(want) &&
	       _IOC_NR(cmd) == _IOC_NR(want) &&
	       _IOC_DIR(cmd) == _IOC_DIR(want);
}

/**
 * struct mpp_file - an open /dev/memprepop
 * @lock: serializes starting and reaping its background request
 * @bg_lock: protects @bg for poll()
 * @bg: its background request, until reaped
 * @poll_wq: poll() waits here for @bg to want its caller
 * @pool: the threads it keeps for the process that first populated through
 *	it, once its calls are done (pool.c)
 */
struct mpp_file {
	struct mutex lock;	/* starting and reaping @bg */
	spinlock_t bg_lock;	/* @bg */
	struct mpp_request *bg;
	struct wait_queue_head poll_wq;
	struct mpp_pool *pool;
};

static void mpp_file_set_bg(struct mpp_file *f, struct mpp_request *req)
{
	spin_lock(&f->bg_lock);
	f->bg = req;
	spin_unlock(&f->bg_lock);
}

/*
 * The file lets go of its background request, reaped or given up, under
 * @f->lock: from here on the request's threads do not touch the file.
 */
static void mpp_file_drop_bg(struct mpp_file *f)
{
	struct mpp_request *req = f->bg;

	mpp_notify_detach(req);
	mpp_file_set_bg(f, NULL);
	mpp_request_put(req);
}

/*
 * A background request whose process is gone (exited, or replaced its mm by
 * exec) while another holds the file: nobody can reap it, so it is
 * cancelled and let go, and the file takes new requests. Under @f->lock.
 */
static void mpp_file_drop_orphan(struct mpp_file *f)
{
	if (!f->bg || !mpp_populate_orphaned(f->bg))
		return;
	mpp_kill(f->bg);
	mpp_file_drop_bg(f);
}

/*
 * A call is over, whichever way: its outputs written, counted. Returns its
 * result.
 */
static int mpp_call_end(const struct mpp_call *call,
			const struct mpp_request *req, int ret)
{
	if (!call->uargs)
		return ret;
	ret = mpp_uapi_populate_put(call, req, ret);
	if (req)
		mpp_stats_account(req->out.populated, req->nsecs, ret);
	return ret;
}

static long memprepop_ioctl_populate(struct mpp_file *f, void __user *uarg,
				     size_t usize)
{
	struct mpp_request *req = NULL;
	struct mpp_call call;
	int ret;

	ret = mpp_uapi_call_get(&call, uarg, usize);
	if (ret || !call.nr_ranges)
		goto out_end;

	if (!(call.flags & MEMPREPOP_F_BACKGROUND)) {
		req = mpp_populate(&call, &f->pool, &ret);
		/* Nothing written: the call starts again once thawed */
		if (ret == -ERESTARTNOINTR)
			goto out_release;
		goto out_end;
	}

	if (mutex_lock_killable(&f->lock)) {
		ret = -EINTR;
		goto out_end;
	}
	mpp_file_drop_orphan(f);
	if (f->bg) {
		ret = -EBUSY;
		goto out_unlock;
	}
	req = mpp_populate_start(&call, &f->poll_wq, &f->pool);
	if (IS_ERR(req)) {
		ret = PTR_ERR(req);
		req = NULL;
		goto out_unlock;
	}
	/* The file's reference, until reaped */
	mpp_file_set_bg(f, req);
	/*
	 * Its workers may be done already, and poll() woken while the file
	 * had no request to report: wake it again, now that it has one (poll
	 * looks for itself whether the request is ready).
	 */
	wake_up_poll(&f->poll_wq, EPOLLIN | EPOLLRDNORM);
	mutex_unlock(&f->lock);
	goto out_release;

out_unlock:
	mutex_unlock(&f->lock);
out_end:
	/* Without a request, the outputs of nothing */
	ret = mpp_call_end(&call, req, ret);
	if (req)
		mpp_request_put(req);
out_release:
	mpp_uapi_call_release(&call);
	return ret;
}

static long memprepop_ioctl_wait(struct mpp_file *f, void __user *uarg,
				 size_t usize)
{
	struct memprepop_wait args;
	struct mpp_request *req;
	int ret;

	ret = mpp_uapi_wait_get(uarg, usize, &args);
	if (ret)
		return ret;
	if (mutex_lock_killable(&f->lock))
		return -EINTR;
	mpp_file_drop_orphan(f);
	req = f->bg;
	if (!req) {
		ret = -ENOENT;
		goto out_unlock;
	}
	if (req->mm != current->mm) {
		ret = -EPERM;
		goto out_unlock;
	}
	ret = mpp_populate_finish(req, args.flags & MEMPREPOP_WAIT_NOHANG);
	/* Not done yet, or to be frozen first (then the wait starts again) */
	if (ret == -EAGAIN || ret == -ERESTARTNOINTR)
		goto out_unlock;
	args.result = mpp_call_end(&req->call, req, ret);
	if (args.result == -EINTR && fatal_signal_pending(current)) {
		/* Dying: the release of the file will see to the request */
		ret = -EINTR;
		goto out_unlock;
	}
	mpp_file_drop_bg(f);
	ret = mpp_uapi_wait_put(uarg, usize, &args);
out_unlock:
	mutex_unlock(&f->lock);
	return ret;
}

static long memprepop_ioctl(struct file *file, unsigned int cmd,
			    unsigned long arg)
{
	struct mpp_file *f = file->private_data;
	void __user *uarg = (void __user *)arg;
	size_t usize = _IOC_SIZE(cmd);

	if (memprepop_cmd_is(cmd, MEMPREPOP_IOC_INFO))
		return mpp_uapi_info_put(uarg, usize);
	if (memprepop_cmd_is(cmd, MEMPREPOP_IOC_POPULATE))
		return memprepop_ioctl_populate(f, uarg, usize);
	if (memprepop_cmd_is(cmd, MEMPREPOP_IOC_WAIT))
		return memprepop_ioctl_wait(f, uarg, usize);
	return -ENOTTY;
}

static __poll_t memprepop_poll(struct file *file, poll_table *wait)
{
	struct mpp_file *f = file->private_data;
	__poll_t mask = 0;

	poll_wait(file, &f->poll_wq, wait);
	spin_lock(&f->bg_lock);
	/* Not for a request nobody can reap: a level-triggered loop would spin */
	if (f->bg && mpp_populate_ready(f->bg) &&
	    !mpp_populate_orphaned(f->bg))
		mask = EPOLLIN | EPOLLRDNORM;
	spin_unlock(&f->bg_lock);
	return mask;
}

static int memprepop_open(struct inode *inode, struct file *file)
{
	struct mpp_file *f;

	f = kzalloc(sizeof(*f), GFP_KERNEL_ACCOUNT);
	if (!f)
		return -ENOMEM;
	mutex_init(&f->lock);
	spin_lock_init(&f->bg_lock);
	init_waitqueue_head(&f->poll_wq);
	file->private_data = f;
	return nonseekable_open(inode, file);
}

/* The last close: a background request not reaped is cancelled */
static int memprepop_release(struct inode *inode, struct file *file)
{
	struct mpp_file *f = file->private_data;
	struct mpp_request *req = f->bg;

	if (req) {
		mpp_notify_detach(req);
		mpp_kill(req);
		mpp_request_put(req);
	}
	mpp_pool_release(f->pool);
	kfree(f);
	return 0;
}

static const struct file_operations memprepop_fops = {
	.owner		= THIS_MODULE,
	.open		= memprepop_open,
	.release	= memprepop_release,
	.unlocked_ioctl	= memprepop_ioctl,
	.compat_ioctl	= compat_ptr_ioctl,
	.poll		= memprepop_poll,
	.llseek		= noop_llseek,
};

static struct miscdevice memprepop_misc = {
	.minor	= MISC_DYNAMIC_MINOR,
	.name	= "memprepop",
	.fops	= &memprepop_fops,
	.mode	= 0660,
	.groups	= memprepop_stats_groups,
};

static int __init memprepop_init(void)
{
	int ret = mpp_tasks_init();

	if (ret)
		return ret;
	ret = misc_register(&memprepop_misc);
	if (ret)
		goto out_tasks_exit;
	return 0;

out_tasks_exit:
	mpp_tasks_exit();
	return ret;
}

static void __exit memprepop_exit(void)
{
	misc_deregister(&memprepop_misc);
	mpp_tasks_exit();
}

module_init(memprepop_init);
module_exit(memprepop_exit);

MODULE_DESCRIPTION("Fast populate and lock of a process's own memory");
MODULE_LICENSE("GPL");
