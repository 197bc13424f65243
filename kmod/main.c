// SPDX-License-Identifier: GPL-2.0
/*
 * memprepop: the /dev/memprepop misc device and its ioctls.
 */
#include <linux/cpumask.h>
#include <linux/fdtable.h>
#include <linux/fs.h>
#include <linux/miscdevice.h>
#include <linux/module.h>
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
 * @lock: protects @bg, @busy, @claimer, @closed and @left
 * @bg: its background request, until reaped
 * @busy: a thread is starting or reaping @bg, without @lock: another one
 *	gets -EBUSY rather than wait for it (it may be a userfaultfd handler
 *	the first one waits for)
 * @claimer: while @busy, the process of that thread, compared only
 * @closed: that process closed a descriptor of the file while its thread
 *	started or reaped a background request: what the thread leaves on
 *	the file is given up
 * @left: synchronous calls their threads left for a signal, to resume
 *	when the call is made again (struct mpp_left)
 * @poll_wq: poll() waits here for @bg to want its caller
 * @pools: the worker threads of each process that populated through it,
 *	kept between its calls (pool.c)
 */
struct mpp_file {
	spinlock_t lock;	/* @bg, @busy, @claimer, @closed, @left */
	struct mpp_request *bg;
	bool busy;
	struct pid *claimer;
	bool closed;
	struct list_head left;
	struct wait_queue_head poll_wq;
	struct mpp_pools pools;
};

/**
 * struct mpp_left - a synchronous call its thread left for a signal
 * @node: in the file's @left
 * @thread: the thread, referenced; it has one left call on the file at most
 * @req: the call's request, whose reference the file holds
 *
 * The syscall is restarted once the thread has taken its signal (a stop,
 * the freezer, a handler): made again with the same arguments, by the
 * same thread of the same mm, the call goes on where it was rather than
 * walk again what it populated, which under signals frequent enough would
 * never end. Any other populate call of the thread on the file, and a close
 * of the file by its process, cancel it.
 */
struct mpp_left {
	struct list_head node;
	struct pid *thread;
	struct mpp_request *req;
};

static int mpp_fd_is(const void *file, struct file *found, unsigned int fd)
{
	return found == file;
}

/**
 * mpp_file_held() - does the calling process hold a descriptor of @file?
 * @file: the file
 *
 * A call on the file may have begun before another thread of the process
 * closed the descriptor it was made through; the close's flush saw nothing
 * of what the call goes on to add to the file for the process.
 *
 * Return: true when a descriptor of its table is @file.
 */
bool mpp_file_held(const struct file *file)
{
	return iterate_fd(current->files, 0, mpp_fd_is, file);
}

/*
 * A background request whose process is gone (exited, or replaced its mm by
 * exec) while another holds the file: nobody can reap it, so it is taken
 * from the file, to be cancelled and let go (mpp_file_let_go()), and the
 * file takes new requests.
 */
static struct mpp_request *mpp_file_take_orphan(struct mpp_file *f)
{
	struct mpp_request *req = f->bg;

	lockdep_assert_held(&f->lock);
	if (!req || f->busy || !mpp_populate_orphaned(req))
		return NULL;
	f->bg = NULL;
	return req;
}

/*
 * A request the file let go of, reaped or given up: from here on its
 * threads do not touch the file; a given-up one is killed first.
 */
static void mpp_file_let_go(struct mpp_request *req, bool kill)
{
	if (!req)
		return;
	mpp_notify_detach(req);
	if (kill)
		mpp_kill(req);
	mpp_request_put(req);
}

/*
 * Claim the file's background slot for the calling thread: -EBUSY while
 * another thread starts or reaps a request on it. With @want_bg, the
 * request it has (-ENOENT without one), if its own process started it in
 * its present mm (-EPERM: a process sharing the mm, clone(CLONE_VM), is
 * another), else none (-EBUSY with one).
 */
static int mpp_file_claim(struct mpp_file *f, bool want_bg)
{
	struct mpp_request *orphan;
	int ret = 0;

	spin_lock(&f->lock);
	orphan = mpp_file_take_orphan(f);
	if (f->busy)
		ret = -EBUSY;
	else if (want_bg && !f->bg)
		ret = -ENOENT;
	else if (!want_bg && f->bg)
		ret = -EBUSY;
	else if (want_bg && (f->bg->tgid != task_tgid(current) ||
			     f->bg->mm != current->mm))
		ret = -EPERM;
	if (!ret) {
		f->busy = true;
		f->claimer = task_tgid(current);
	}
	spin_unlock(&f->lock);
	mpp_file_let_go(orphan, true);
	return ret;
}

/*
 * The claim ends: @req is the file's background request, or none; one its
 * process closed a descriptor of the file for meanwhile is given up, as
 * the close would have given it up had it been on the file. @closed: the
 * process closed its last one before the claim, where the close saw no
 * claim (mpp_file_held()); a close during the claim sets the file's.
 */
static void mpp_file_release_claim(struct mpp_file *f,
				   struct mpp_request *req, bool closed)
{
	struct mpp_request *gone = NULL;

	spin_lock(&f->lock);
	if (f->closed || closed) {
		gone = req;
		req = NULL;
	}
	f->closed = false;
	f->bg = req;
	f->busy = false;
	spin_unlock(&f->lock);
	mpp_file_let_go(gone, true);
}

/* Frees @l: its request, whose reference it held, is the caller's */
static struct mpp_request *mpp_left_free(struct mpp_left *l)
{
	struct mpp_request *req = l->req;

	put_pid(l->thread);
	kfree(l);
	return req;
}

/* The left calls on @gone, off the file, are cancelled and let go */
static void mpp_left_let_go(struct list_head *gone)
{
	struct mpp_left *l, *tmp;

	list_for_each_entry_safe(l, tmp, gone, node)
		mpp_file_let_go(mpp_left_free(l), true);
}

/*
 * The calling thread's call left for a signal, taken from the file, or
 * none: the caller resumes it when it makes that call again, else gives
 * it up (mpp_file_give_up_left()).
 */
static struct mpp_request *mpp_file_take_left(struct mpp_file *f)
{
	struct mpp_request *req = NULL;
	struct mpp_left *l;

	spin_lock(&f->lock);
	list_for_each_entry(l, &f->left, node) {
		if (l->thread == task_pid(current)) {
			list_del(&l->node);
			req = mpp_left_free(l);
			break;
		}
	}
	spin_unlock(&f->lock);
	return req;
}

/* The calls left by the calling process's threads are cancelled */
static void mpp_file_cancel_left(struct mpp_file *f)
{
	struct mpp_left *l, *tmp;
	LIST_HEAD(gone);

	spin_lock(&f->lock);
	list_for_each_entry_safe(l, tmp, &f->left, node)
		if (l->req->tgid == task_tgid(current))
			list_move(&l->node, &gone);
	spin_unlock(&f->lock);
	mpp_left_let_go(&gone);
}

/*
 * The calling thread leaves @req for a signal: kept on the file to be
 * resumed (its workers go on meanwhile, or stop with its process), else,
 * without memory to keep it, let go. Calls left by threads that have
 * exited since are let go. Where another thread of the process closed its
 * last descriptor of @file meanwhile, whose flush found nothing left, the
 * process's left calls are cancelled as that close would have: looked at
 * once @req is on the list, so that a close after finds it there.
 */
static void mpp_file_leave(struct file *file, struct mpp_request *req)
{
	struct mpp_file *f = file->private_data;
	struct mpp_left *l, *old, *tmp;
	LIST_HEAD(gone);

	l = kmalloc(sizeof(*l), GFP_KERNEL_ACCOUNT);
	if (!l) {
		mpp_file_let_go(req, true);
		return;
	}
	l->thread = get_pid(task_pid(current));
	l->req = req;
	spin_lock(&f->lock);
	list_for_each_entry_safe(old, tmp, &f->left, node)
		if (!pid_has_task(old->thread, PIDTYPE_PID))
			list_move(&old->node, &gone);
	list_add(&l->node, &f->left);
	spin_unlock(&f->lock);
	mpp_left_let_go(&gone);
	if (!mpp_file_held(file))
		mpp_file_cancel_left(f);
}

/*
 * The calling thread made another call than the one it left, @req: that
 * one is cancelled, and its workers, the caller's threads, waited for
 * until none is inside one of its chunks, so that nothing of it is
 * populated once the new call goes on. Returns 0, -EINTR when the caller
 * was killed, or -ERESTARTNOINTR when it has another signal to take
 * first: @req stays left on the file meanwhile.
 */
static int mpp_file_give_up_left(struct file *file, struct mpp_request *req)
{
	int ret = 0;

	if (req->mm == current->mm)
		ret = mpp_populate_abandon(req);
	if (ret == -ERESTARTNOINTR)
		mpp_file_leave(file, req);
	else
		mpp_file_let_go(req, true);
	return ret;
}

/*
 * A call is over, whichever way: its outputs written, counted. Returns its
 * result.
 */
static int mpp_call_end(const struct mpp_call *call,
			const struct mpp_result *res, int ret)
{
	if (!call->uargs)
		return ret;
	ret = mpp_uapi_populate_put(call, res, ret);
	if (res)
		mpp_stats_account(res->populated, res->nsecs, ret);
	return ret;
}

/*
 * A synchronous call too small for any worker: its caller's alone
 * (alone.c), without a request. Returns its result, its outputs written,
 * or -ERESTARTNOINTR, nothing written, for the syscall to make it anew once
 * the thread has taken its signal.
 */
static int mpp_file_call_alone(struct mpp_file *f, struct mpp_call *call)
{
	struct mpp_result res;
	struct mpp_alone a;
	int ret;

	ret = mpp_alone_init(&a, call);
	if (ret)
		return mpp_call_end(call, NULL, ret);
	ret = mpp_alone_run(&a, call, &res);
	mpp_pools_trim(&f->pools);
	if (ret != -ERESTARTNOINTR) {
		ret = mpp_call_end(call, &res, ret);
		mpp_stats_alone();
	}
	mpp_alone_destroy(&a);
	return ret;
}

static long memprepop_ioctl_populate(struct file *file, void __user *uarg,
				     size_t usize)
{
	struct mpp_file *f = file->private_data;
	struct mpp_request *req = NULL;
	struct mpp_result res;
	struct mpp_call call;
	int ret;

	ret = mpp_uapi_call_get(&call, uarg, usize);
	if (ret || !call.nr_ranges)
		goto out_end;

	req = mpp_file_take_left(f);
	if (req && req->mm == current->mm && mpp_populate_resumable(req) &&
	    mpp_uapi_call_same(&req->call, &call)) {
		ret = mpp_populate_finish(req, false);
		goto out_sync;
	}
	if (req) {
		ret = mpp_file_give_up_left(file, req);
		req = NULL;
		if (ret == -ERESTARTNOINTR)
			goto out_release;
		if (ret)
			goto out_end;
	}
	if (mpp_call_alone(&call)) {
		ret = mpp_file_call_alone(f, &call);
		goto out_release;
	}
	if (!(call.flags & MEMPREPOP_F_BACKGROUND)) {
		req = mpp_populate(&call, &f->pools, &ret);
		goto out_sync;
	}

	ret = mpp_file_claim(f, false);
	if (ret)
		goto out_end;
	req = mpp_populate_start(&call, &f->poll_wq, &f->pools);
	if (IS_ERR(req)) {
		ret = PTR_ERR(req);
		req = NULL;
		mpp_file_release_claim(f, NULL, false);
		goto out_end;
	}
	/* The file's reference, until reaped */
	mpp_file_release_claim(f, req, !mpp_file_held(file));
	/*
	 * Its workers may be done already, and poll() woken while the file
	 * had no request to report: wake it again, now that it has one (poll
	 * looks for itself whether the request is ready).
	 */
	wake_up_poll(&f->poll_wq, EPOLLIN | EPOLLRDNORM);
	goto out_release;

out_sync:
	mpp_pools_trim(&f->pools);
	/* Nothing written: the call goes on once the signal is taken */
	if (ret == -ERESTARTNOINTR) {
		mpp_file_leave(file, req);
		goto out_release;
	}
out_end:
	/* Without a request, the outputs of nothing */
	ret = mpp_call_end(&call, req ? mpp_populate_result(req, &res) : NULL,
			   ret);
	if (req)
		mpp_request_put(req);
out_release:
	mpp_uapi_call_release(&call);
	return ret;
}

static long memprepop_ioctl_wait(struct file *file, void __user *uarg,
				 size_t usize)
{
	struct mpp_file *f = file->private_data;
	struct memprepop_wait args;
	struct mpp_request *req;
	struct mpp_result res;
	int ret;

	ret = mpp_uapi_wait_get(uarg, usize, &args);
	if (ret)
		return ret;
	ret = mpp_file_claim(f, true);
	if (ret)
		return ret;
	/* Without the file's lock: faulting may wait for this process */
	req = f->bg;
	ret = mpp_populate_finish(req, args.flags & MEMPREPOP_WAIT_NOHANG);
	/* Not done yet, or to stop first (then the wait starts again) */
	if (ret == -EAGAIN || ret == -ERESTARTNOINTR)
		goto out_keep;
	args.result = mpp_call_end(&req->call, mpp_populate_result(req, &res),
				   ret);
	/* Dying: the release of the file will see to the request */
	if (args.result == -EINTR && fatal_signal_pending(current)) {
		ret = -EINTR;
		goto out_keep;
	}
	mpp_file_release_claim(f, NULL, false);
	mpp_file_let_go(req, false);
	mpp_pools_trim(&f->pools);
	return mpp_uapi_wait_put(uarg, usize, &args);

out_keep:
	/*
	 * Given up if the process no longer holds the file: a process that
	 * shares its descriptor table (clone(CLONE_FILES)) closed it, whose
	 * flush did not know this process's claim
	 */
	mpp_file_release_claim(f, req, !mpp_file_held(file));
	return ret;
}

static long memprepop_ioctl(struct file *file, unsigned int cmd,
			    unsigned long arg)
{
	void __user *uarg = (void __user *)arg;
	size_t usize = _IOC_SIZE(cmd);

	if (memprepop_cmd_is(cmd, MEMPREPOP_IOC_INFO))
		return mpp_uapi_info_put(uarg, usize);
	if (memprepop_cmd_is(cmd, MEMPREPOP_IOC_POPULATE))
		return memprepop_ioctl_populate(file, uarg, usize);
	if (memprepop_cmd_is(cmd, MEMPREPOP_IOC_WAIT))
		return memprepop_ioctl_wait(file, uarg, usize);
	return -ENOTTY;
}

static __poll_t memprepop_poll(struct file *file, poll_table *wait)
{
	struct mpp_file *f = file->private_data;
	__poll_t mask = 0;

	poll_wait(file, &f->poll_wq, wait);
	spin_lock(&f->lock);
	/* Not for a request nobody can reap: a level-triggered loop would spin */
	if (f->bg && mpp_populate_ready(f->bg) &&
	    !mpp_populate_orphaned(f->bg))
		mask = EPOLLIN | EPOLLRDNORM;
	spin_unlock(&f->lock);
	return mask;
}

static int memprepop_open(struct inode *inode, struct file *file)
{
	struct mpp_file *f;

	f = kzalloc(sizeof(*f), GFP_KERNEL_ACCOUNT);
	if (!f)
		return -ENOMEM;
	spin_lock_init(&f->lock);
	INIT_LIST_HEAD(&f->left);
	init_waitqueue_head(&f->poll_wq);
	mpp_pools_init(&f->pools, file);
	file->private_data = f;
	return nonseekable_open(inode, file);
}

/*
 * A process closes its last descriptor of the file (close(), exit, exec):
 * in its own context, what it runs on the file ends. Its background
 * request is cancelled (given up unless a thread of it is reaping it) and
 * its worker threads stop, those at work once their work is over; another
 * process's stay. So once close() returns, the process has no thread of
 * this file. Closing a copy while it holds another changes nothing, as for
 * any file: its calls on the file go on, and are reaped through the other.
 */
static int memprepop_flush(struct file *file, fl_owner_t id)
{
	struct mpp_file *f = file->private_data;
	struct mpp_request *req, *orphan = NULL;

	/* The descriptor closed is out of the table: whichever goes last stops */
	if (mpp_file_held(file))
		return 0;
	spin_lock(&f->lock);
	req = f->bg;
	if (f->busy && f->claimer == task_tgid(current)) {
		/*
		 * One its thread starts or reaps: cancelled, and given up
		 * when the claim ends unless reaped by then
		 */
		f->closed = true;
		if (req)
			mpp_abort(req, -ECANCELED);
	} else if (req && req->tgid == task_tgid(current)) {
		orphan = req;
		f->bg = NULL;
	}
	spin_unlock(&f->lock);
	mpp_file_let_go(orphan, true);
	mpp_file_cancel_left(f);
	mpp_pools_flush(&f->pools);
	return 0;
}

/* The last close: a background request not reaped is cancelled */
static int memprepop_release(struct inode *inode, struct file *file)
{
	struct mpp_file *f = file->private_data;

	mpp_file_let_go(f->bg, true);
	mpp_left_let_go(&f->left);
	mpp_pools_release(&f->pools);
	kfree(f);
	return 0;
}

static const struct file_operations memprepop_fops = {
	.owner		= THIS_MODULE,
	.open		= memprepop_open,
	.flush		= memprepop_flush,
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
	return misc_register(&memprepop_misc);
}

/* No file is open, so no worker thread is left (pool.c) */
static void __exit memprepop_exit(void)
{
	misc_deregister(&memprepop_misc);
}

module_init(memprepop_init);
module_exit(memprepop_exit);

MODULE_DESCRIPTION("Fast populate and lock of a process's own memory");
MODULE_LICENSE("GPL");
