// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libmemprepop: the fallback backend, for kernels without the module.
 *
 * What QEMU's preallocation does, done right: every thread is created before
 * any populating starts (creating a thread maps its stack, which takes
 * mmap_lock for write and would stall the others); each runs on the caller's
 * allowed CPUs of the node its chunks' pages go to (plan.c), so that they
 * are zeroed node-locally; chunks are handed out dynamically; and the lowest
 * failure stops what lies above it only, so that the call ends where
 * madvise(MADV_POPULATE_WRITE) over the whole range would, with its errno and
 * an exact count of what was populated.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "internal.h"

struct mpp_job {
	struct mpp_plan plan;
	uint64_t flags;
	long page_size;
	bool touch;

	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool go;		/* under lock: all threads exist, start */
	unsigned int running;	/* under lock: threads not finished yet */

	/* Atomics */
	unsigned char *claimed;	/* per chunk: taken by a thread */
	unsigned char *done;	/* per chunk: populated completely */
	uint64_t bytes_done;	/* for the progress callback */
	int cancelled;

	/* Under lock: nothing at or above stop_at is to be populated */
	size_t stop_at;
	int err;

	uint64_t node_pages[MEMPREPOP_MAX_NODES];
};

struct mpp_thread {
	struct mpp_job *job;
	int node;
	pthread_t tid;
};

/* Largest prefix of [p, p + len) that MADV_POPULATE_WRITE accepts */
static size_t mpp_good_prefix(char *p, size_t len, long page_size)
{
	size_t lo = 0, hi = len / page_size;

	/* The whole range is known to fail; pages [0, lo) known to work */
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		if (madvise(p, mid * page_size, MADV_POPULATE_WRITE) == 0)
			lo = mid;
		else
			hi = mid;
	}
	return lo * page_size;
}

/* Populates [p, p + len): 0, or -errno with *good the populated prefix */
static int mpp_populate_chunk(struct mpp_job *job, char *p, size_t len,
			      size_t *good)
{
	int err;

	if (job->touch)
		return mpp_touch_range(p, len, good);
	if (!madvise(p, len, MADV_POPULATE_WRITE))
		return 0;
	err = -errno;
	*good = mpp_good_prefix(p, len, job->page_size);
	return err;
}

static void mpp_count_nodes(struct mpp_job *job, char *p, size_t len)
{
	uint64_t counts[MEMPREPOP_MAX_NODES];
	int i;

	if (memprepop_node_pages(p, len, counts, MEMPREPOP_MAX_NODES))
		return;
	for (i = 0; i < MEMPREPOP_MAX_NODES; i++)
		if (counts[i])
			__atomic_add_fetch(&job->node_pages[i], counts[i],
					   __ATOMIC_RELAXED);
}

static void mpp_stop(struct mpp_job *job, size_t at, int err)
{
	pthread_mutex_lock(&job->lock);
	if (at < job->stop_at) {
		__atomic_store_n(&job->stop_at, at, __ATOMIC_RELEASE);
		job->err = err;
	}
	pthread_mutex_unlock(&job->lock);
}

/* The thread's share: chunks its node serves, in address order */
static void mpp_work(struct mpp_job *job, int node,
		     struct mpp_progress *progress)
{
	const struct mpp_plan *plan = &job->plan;
	size_t i;

	for (i = 0; i < plan->nchunks; i++) {
		size_t start = mpp_chunk_start(plan, i), end, good;
		int err;

		if (__atomic_load_n(&job->cancelled, __ATOMIC_ACQUIRE) ||
		    start >= __atomic_load_n(&job->stop_at, __ATOMIC_ACQUIRE))
			return;
		if (node >= 0 && !(plan->served[i] & (1ull << node)))
			continue;
		if (__atomic_exchange_n(&job->claimed[i], 1, __ATOMIC_ACQ_REL))
			continue;

		end = mpp_chunk_end(plan, i);
		err = mpp_populate_chunk(job, plan->base + start, end - start,
					 &good);
		if (err) {
			mpp_stop(job, start + good, err);
			continue;
		}
		__atomic_store_n(&job->done[i], 1, __ATOMIC_RELEASE);
		__atomic_add_fetch(&job->bytes_done, end - start,
				   __ATOMIC_RELAXED);
		if (job->flags & MEMPREPOP_F_NODE_STATS)
			mpp_count_nodes(job, plan->base + start, end - start);
		/* Working in the caller's own thread: it reports itself */
		if (progress && mpp_progress_report(progress,
				__atomic_load_n(&job->bytes_done,
						__ATOMIC_RELAXED)))
			__atomic_store_n(&job->cancelled, 1, __ATOMIC_RELEASE);
	}
}

static void *mpp_thread_fn(void *arg)
{
	struct mpp_thread *t = arg;
	struct mpp_job *job = t->job;

	pthread_mutex_lock(&job->lock);
	while (!job->go)
		pthread_cond_wait(&job->cond, &job->lock);
	pthread_mutex_unlock(&job->lock);

	mpp_work(job, t->node, NULL);

	pthread_mutex_lock(&job->lock);
	job->running--;
	pthread_cond_broadcast(&job->cond);
	pthread_mutex_unlock(&job->lock);
	return NULL;
}

static int mpp_start_thread(struct mpp_job *job, struct mpp_thread *t,
			    unsigned int index)
{
	pthread_attr_t attr;
	int ret;

	t->job = job;
	t->node = job->plan.thread_node[index];
	ret = pthread_attr_init(&attr);
	if (ret)
		return -ret;
	/* The thread starts on its node's CPUs: nothing to migrate later */
	pthread_attr_setaffinity_np(&attr, sizeof(cpu_set_t),
				    &job->plan.thread_cpus[index]);
	ret = pthread_create(&t->tid, &attr, mpp_thread_fn, t);
	pthread_attr_destroy(&attr);
	return -ret;
}

/* The caller waits for its threads, reporting progress, maybe cancelling */
static void mpp_monitor(struct mpp_job *job, struct mpp_progress *progress)
{
	pthread_mutex_lock(&job->lock);
	while (job->running) {
		struct timespec ts;

		mpp_progress_deadline(&ts);
		pthread_cond_timedwait(&job->cond, &job->lock, &ts);
		if (!job->running)
			break;
		pthread_mutex_unlock(&job->lock);
		if (mpp_progress_report(progress,
				__atomic_load_n(&job->bytes_done,
						__ATOMIC_RELAXED)))
			__atomic_store_n(&job->cancelled, 1, __ATOMIC_RELEASE);
		pthread_mutex_lock(&job->lock);
	}
	pthread_mutex_unlock(&job->lock);
}

/* Runs the planned threads; 0 or -errno if they could not all start */
static int mpp_run_threads(struct mpp_job *job, struct mpp_progress *progress)
{
	unsigned int n = job->plan.nthreads, started = 0, i;
	struct mpp_thread *threads;
	int ret = 0;

	threads = calloc(n, sizeof(*threads));
	if (!threads)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		ret = mpp_start_thread(job, &threads[i], i);
		if (ret)
			break;
		started++;
	}

	pthread_mutex_lock(&job->lock);
	if (ret)	/* could not start them all: start none */
		job->cancelled = 1;
	job->running = started;
	job->go = true;
	pthread_cond_broadcast(&job->cond);
	pthread_mutex_unlock(&job->lock);

	mpp_monitor(job, progress);
	for (i = 0; i < started; i++)
		pthread_join(threads[i].tid, NULL);
	free(threads);
	return ret;
}

/* The end of what is populated from the start of the range */
static size_t mpp_populated(struct mpp_job *job)
{
	const struct mpp_plan *plan = &job->plan;
	size_t i, start;

	for (i = 0; i < plan->nchunks && job->done[i]; i++)
		;
	if (i == plan->nchunks)
		return plan->len < job->stop_at ? plan->len : job->stop_at;
	start = mpp_chunk_start(plan, i);
	/* The first incomplete chunk holds the lowest failure, or never ran */
	if (job->stop_at > start && job->stop_at < mpp_chunk_end(plan, i))
		return job->stop_at;
	return start < job->stop_at ? start : job->stop_at;
}

static bool mpp_have_populate_write(void)
{
	/* An unknown advice fails with EINVAL before the range is looked at */
	return madvise(NULL, 0, MADV_POPULATE_WRITE) == 0;
}

int mpp_fallback_populate(void *addr, size_t len,
			  const struct memprepop_opts *opts,
			  struct memprepop_result *res,
			  struct mpp_progress *progress)
{
	struct mpp_job job = {
		.flags = opts->flags,
		.page_size = sysconf(_SC_PAGESIZE),
		.lock = PTHREAD_MUTEX_INITIALIZER,
		.cond = PTHREAD_COND_INITIALIZER,
		.stop_at = len,
	};
	int ret;

	if (opts->lib_flags & MEMPREPOP_OPT_TOUCH_ALWAYS)
		job.touch = true;
	else if (!mpp_have_populate_write())
		job.touch = opts->lib_flags & MEMPREPOP_OPT_TOUCH;
	if (!job.touch && !mpp_have_populate_write())
		return -EOPNOTSUPP;

	ret = mpp_plan_make(&job.plan, addr, len, opts->max_threads);
	if (ret)
		goto out;
	job.claimed = calloc(job.plan.nchunks, 1);
	job.done = calloc(job.plan.nchunks, 1);
	ret = -ENOMEM;
	if (!job.claimed || !job.done)
		goto out;

	if (job.plan.nthreads) {
		ret = mpp_run_threads(&job, progress);
		if (ret)
			goto out;
		res->workers = job.plan.nthreads;
	} else {
		/* Not worth a thread: the caller's own faults, its placement */
		mpp_work(&job, -1, progress);
		res->workers = 1;
	}

	memcpy(res->node_pages, job.node_pages, sizeof(res->node_pages));
	res->populated = mpp_populated(&job);
	if (res->populated < len)
		ret = job.err ? job.err : -ECANCELED;
	else
		ret = 0;
out:
	free(job.claimed);
	free(job.done);
	mpp_plan_free(&job.plan);
	return ret;
}
