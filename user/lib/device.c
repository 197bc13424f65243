// SPDX-License-Identifier: LGPL-2.1-or-later
/* libmemprepop: the module backend, /dev/memprepop and its ioctls. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

/* -1: not opened yet; otherwise the descriptor or -errno of the open */
static int mpl_fd = -1;

int mpl_device_fd(void)
{
	int fd = __atomic_load_n(&mpl_fd, __ATOMIC_ACQUIRE);
	int expected = -1;
	int got;

	if (fd != -1)
		return fd;
	got = open(MEMPREPOP_DEVICE, O_RDWR | O_CLOEXEC);
	if (got < 0)
		got = -errno;
	/* Two threads racing to open: the first one's result is kept */
	if (!__atomic_compare_exchange_n(&mpl_fd, &expected, got, 0,
					 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
		if (got >= 0)
			close(got);
		return expected;
	}
	return got;
}

int memprepop_query(struct memprepop_info *info, size_t size)
{
	int fd;

	/* The size travels in the command, as the module reads it */
	if (size < MEMPREPOP_INFO_SIZE_VER0 || size > _IOC_SIZEMASK)
		return -EINVAL;
	fd = mpl_device_fd();
	if (fd < 0)
		return -ENODEV;
	if (ioctl(fd, _IOC(_IOC_READ, MEMPREPOP_IOC_MAGIC, 0x00, size), info))
		return -errno;
	return 0;
}

/* One MEMPREPOP_IOC_POPULATE; its outcome in @res */
static int mpl_ioctl_populate(int fd, void *addr, size_t len,
			      const struct memprepop_opts *opts,
			      struct memprepop_result *res,
			      struct memprepop_control *control)
{
	struct memprepop_populate req = {
		.addr = (uintptr_t)addr,
		.len = len,
		/* mlock2() has locked it: the module checks that it is */
		.flags = opts->flags & MEMPREPOP_OPT_LOCK ?
			 MEMPREPOP_F_REQUIRE_MLOCKED : 0,
		.max_workers = opts->max_threads,
		.control = (uintptr_t)control,
		.node_pages = (uintptr_t)opts->node_pages,
		.nr_node_pages = opts->nr_nodes,
	};
	int ret = 0;

	if (ioctl(fd, MEMPREPOP_IOC_POPULATE, &req) < 0)
		ret = -errno;
	res->populated = req.populated;
	res->workers = req.workers;
	return ret;
}

/*
 * With a progress callback: the calling thread issues the ioctl, so that the
 * module sees the caller's CPU, node and task policy, and this thread,
 * created before it, follows the module's progress through the control
 * block and cancels through it.
 */
struct mpl_watch {
	struct memprepop_control control;
	struct mpl_progress *progress;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool finished;		/* under lock: the ioctl returned */
};

static void *mpl_watch_fn(void *arg)
{
	struct mpl_watch *w = arg;
	struct timespec ts;

	pthread_mutex_lock(&w->lock);
	while (!w->finished) {
		mpl_progress_deadline(&ts);
		pthread_cond_timedwait(&w->cond, &w->lock, &ts);
		if (w->finished)
			break;
		pthread_mutex_unlock(&w->lock);
		if (mpl_progress_report(w->progress,
				__atomic_load_n(&w->control.done,
						__ATOMIC_RELAXED)))
			__atomic_store_n(&w->control.cancel, 1,
					 __ATOMIC_RELAXED);
		pthread_mutex_lock(&w->lock);
	}
	pthread_mutex_unlock(&w->lock);
	return NULL;
}

int mpl_device_populate(int fd, void *addr, size_t len,
			const struct memprepop_opts *opts,
			struct memprepop_result *res,
			struct mpl_progress *progress)
{
	struct mpl_watch w = {
		.progress = progress,
		.lock = PTHREAD_MUTEX_INITIALIZER,
		.cond = PTHREAD_COND_INITIALIZER,
	};
	pthread_t tid;
	int ret;

	if (!progress->fn || pthread_create(&tid, NULL, mpl_watch_fn, &w))
		return mpl_ioctl_populate(fd, addr, len, opts, res, NULL);

	ret = mpl_ioctl_populate(fd, addr, len, opts, res, &w.control);
	pthread_mutex_lock(&w.lock);
	w.finished = true;
	pthread_cond_signal(&w.cond);
	pthread_mutex_unlock(&w.lock);
	pthread_join(tid, NULL);
	return ret;
}
