// SPDX-License-Identifier: LGPL-2.1-or-later
/* libmemprepop: the module backend, /dev/memprepop and its ioctls. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

/* -1: not opened yet; otherwise the descriptor or -errno of the open */
static int mpp_fd = -1;

int mpp_device_fd(void)
{
	int fd = __atomic_load_n(&mpp_fd, __ATOMIC_ACQUIRE);
	int expected = -1;
	int got;

	if (fd != -1)
		return fd;
	got = open(MEMPREPOP_DEVICE, O_RDWR | O_CLOEXEC);
	if (got < 0)
		got = -errno;
	/* Two threads racing to open: the first one's result is kept */
	if (!__atomic_compare_exchange_n(&mpp_fd, &expected, got, 0,
					 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
		if (got >= 0)
			close(got);
		return expected;
	}
	return got;
}

int memprepop_query(struct memprepop_info *info)
{
	int fd = mpp_device_fd();

	if (fd < 0)
		return -ENODEV;
	memset(info, 0, sizeof(*info));
	if (ioctl(fd, MEMPREPOP_IOC_INFO, info) < 0)
		return -errno;
	return 0;
}

/* One MEMPREPOP_IOC_POPULATE; its outcome in @res */
static int mpp_ioctl_populate(int fd, void *addr, size_t len,
			      const struct memprepop_opts *opts,
			      struct memprepop_result *res,
			      struct memprepop_control *control)
{
	struct memprepop_populate req = {
		.addr = (uintptr_t)addr,
		.len = len,
		.flags = opts->flags,
		.max_workers = opts->max_threads,
		.control = (uintptr_t)control,
	};
	int ret = 0;
	int i;

	if (ioctl(fd, MEMPREPOP_IOC_POPULATE, &req) < 0)
		ret = -errno;
	res->populated = req.populated;
	res->workers = req.workers;
	for (i = 0; i < MEMPREPOP_STAT_NODES; i++)
		res->node_pages[i] = req.node_pages[i];
	return ret;
}

/*
 * With a progress callback: the calling thread issues the ioctl, so that the
 * module sees the caller's CPU, node and task policy, and this thread,
 * created before it, follows the module's progress through the control
 * block and cancels through it.
 */
struct mpp_watch {
	struct memprepop_control control;
	struct mpp_progress *progress;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool finished;		/* under lock: the ioctl returned */
};

static void *mpp_watch_fn(void *arg)
{
	struct mpp_watch *w = arg;
	struct timespec ts;

	pthread_mutex_lock(&w->lock);
	while (!w->finished) {
		mpp_progress_deadline(&ts);
		pthread_cond_timedwait(&w->cond, &w->lock, &ts);
		if (w->finished)
			break;
		pthread_mutex_unlock(&w->lock);
		if (mpp_progress_report(w->progress,
				__atomic_load_n(&w->control.done,
						__ATOMIC_RELAXED)))
			__atomic_store_n(&w->control.cancel, 1,
					 __ATOMIC_RELAXED);
		pthread_mutex_lock(&w->lock);
	}
	pthread_mutex_unlock(&w->lock);
	return NULL;
}

int mpp_device_populate(int fd, void *addr, size_t len,
			const struct memprepop_opts *opts,
			struct memprepop_result *res,
			struct mpp_progress *progress)
{
	struct mpp_watch w = {
		.progress = progress,
		.lock = PTHREAD_MUTEX_INITIALIZER,
		.cond = PTHREAD_COND_INITIALIZER,
	};
	pthread_t tid;
	int ret;

	if (!progress->fn || pthread_create(&tid, NULL, mpp_watch_fn, &w))
		return mpp_ioctl_populate(fd, addr, len, opts, res, NULL);

	ret = mpp_ioctl_populate(fd, addr, len, opts, res, &w.control);
	pthread_mutex_lock(&w.lock);
	w.finished = true;
	pthread_cond_signal(&w.cond);
	pthread_mutex_unlock(&w.lock);
	pthread_join(tid, NULL);
	return ret;
}
