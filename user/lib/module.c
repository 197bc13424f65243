// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libmemprepop: the module as a context's backend. A context has a
 * descriptor of its own (the module keeps its workers per file) from a
 * module with background requests; a one-shot call uses the cached one.
 * Its request is a batch.c request; everything the module writes to when
 * a background request is reaped lives here until then.
 */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "internal.h"

struct mpl_module {
	int fd;
	bool oneshot;		/* @fd is the cached one, not ours to close */
	struct memprepop_info info;
	struct mpl_latch latch;	/* live: @dev, while it is the request's */
	struct mpl_dev dev;
};

static void mpl_module_cancel(void *dev)
{
	mpl_dev_cancel(dev);
}

static uint64_t mpl_module_done(void *dev)
{
	return mpl_dev_done(dev);
}

static int mpl_module_init(void **be, struct mpl_latch **latch, bool oneshot)
{
	struct mpl_module *m = calloc(1, sizeof(*m));
	int ret;

	if (!m)
		return -ENOMEM;
	m->oneshot = oneshot;
	m->fd = oneshot ? mpl_dev_fd() : mpl_dev_open();
	ret = m->fd < 0 ? m->fd : mpl_dev_info(m->fd, &m->info);
	/* A module too old for background requests is not a context's */
	if (!ret && !oneshot && !(m->info.flags & MEMPREPOP_F_BACKGROUND))
		ret = -EOPNOTSUPP;
	if (ret) {
		if (!oneshot && m->fd >= 0)
			close(m->fd);
		free(m);
		return ret;
	}
	mpl_latch_init(&m->latch, mpl_module_cancel, mpl_module_done);
	*be = m;
	*latch = &m->latch;
	return 0;
}

static void mpl_module_fini(void *be, bool forked __attribute__((unused)))
{
	struct mpl_module *m = be;

	if (!m->oneshot)
		close(m->fd);
	mpl_latch_fini(&m->latch);
	free(m);
}

static int mpl_module_supported(void *be __attribute__((unused)))
{
	return 0;
}

/* The request reaches the module: a cancel from now on, or before, acts */
static void mpl_module_live(struct mpl_module *m, bool live)
{
	mpl_latch_set(&m->latch, live ? &m->dev : NULL);
}

static int mpl_module_run(void *be, struct mpl_req *req,
			  struct mpl_progress *progress,
			  struct memprepop_result *res)
{
	struct mpl_module *m = be;
	int ret;

	mpl_dev_init(&m->dev, m->fd, &m->info, req);
	mpl_module_live(m, true);
	ret = mpl_dev_run(&m->dev, progress);
	mpl_module_live(m, false);
	res->workers = m->dev.workers;
	return ret;
}

static int mpl_module_start(void *be, struct mpl_req *req)
{
	struct mpl_module *m = be;
	int ret;

	mpl_dev_init(&m->dev, m->fd, &m->info, req);
	ret = mpl_dev_start(&m->dev);
	if (!ret)
		mpl_module_live(m, true);
	return ret;
}

static int mpl_module_reap(void *be, bool nohang,
			   struct memprepop_result *res, int *outcome)
{
	struct mpl_module *m = be;
	int ret = mpl_dev_reap(&m->dev, nohang);

	if (ret)
		return ret;
	mpl_module_live(m, false);
	*outcome = mpl_dev_outcome(&m->dev);
	res->workers = m->dev.workers;
	res->nsecs = m->dev.nsecs;
	return 0;
}

static void mpl_module_drop(void *be)
{
	struct mpl_module *m = be;

	while (mpl_dev_reap(&m->dev, false) == -EINTR)
		;
	mpl_module_live(m, false);
}

static int mpl_module_poll_fd(void *be)
{
	struct mpl_module *m = be;

	return m->fd;
}

const struct mpl_backend mpl_module_backend = {
	.id = MEMPREPOP_BACKEND_MODULE,
	.init = mpl_module_init,
	.fini = mpl_module_fini,
	.supported = mpl_module_supported,
	.run = mpl_module_run,
	.start = mpl_module_start,
	.reap = mpl_module_reap,
	.drop = mpl_module_drop,
	.poll_fd = mpl_module_poll_fd,
};
