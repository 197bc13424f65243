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
#include <sys/mman.h>
#include <unistd.h>

#include "internal.h"

struct mpl_job {
	struct mpl_plan plan;
	long page_size;

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

	/* The caller's, or NULL; added to atomically */
	uint64_t *node_pages;
	unsigned int nr_nodes;	/* entries of each thread's counts */
	int stats_err;		/* atomic: the first counting failure */
};

struct mpl_thread {
	struct mpl_job *job;
	int node;
	uint64_t *counts;	/* scratch: job->nr_nodes entries */
	pthread_t tid;
};

/* Largest prefix of [p, p + len) that MADV_POPULATE_WRITE accepts */
static size_t mpl_good_prefix(char *p, size_t len, long page_size)
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
static int mpl_populate_chunk(struct mpl_job *job, char *p, size_t len,
			      size_t *good)
{
	int err;

	if (!madvise(p, len, MADV_POPULATE_WRITE))
		return 0;
	err = -errno;
	*good = mpl_good_prefix(p, len, job->page_size);
	return err;
}

/* Adds the nodes of [p, p + len), just populated, to the caller's counts */
static void mpl_count_nodes(struct mpl_job *job, struct mpl_thread *t,
			    char *p, size_t len)
{
	unsigned int i;
	int err, none = 0;

	if (!job->node_pages || !len)
		return;
	err = memprepop_node_pages(p, len, t->counts, job->nr_nodes);
	if (err) {
		__atomic_compare_exchange_n(&job->stats_err, &none, err, false,
					    __ATOMIC_RELAXED, __ATOMIC_RELAXED);
		return;
	}
	for (i = 0; i < job->nr_nodes; i++)
		if (t->counts[i])
			__atomic_add_fetch(&job->node_pages[i], t->counts[i],
					   __ATOMIC_RELAXED);
}

static void mpl_stop(struct mpl_job *job, size_t at, int err)
{
	pthread_mutex_lock(&job->lock);
	if (at < job->stop_at) {
		__atomic_store_n(&job->stop_at, at, __ATOMIC_RELEASE);
		job->err = err;
	}
	pthread_mutex_unlock(&job->lock);
}

/* The thread's share: chunks its node serves, in address order */
static void mpl_work(struct mpl_job *job, struct mpl_thread *t,
		     struct mpl_progress *progress)
{
	const struct mpl_plan *plan = &job->plan;
	size_t i;

	for (i = 0; i < plan->nchunks; i++) {
		size_t start = mpl_chunk_start(plan, i), end, good;
		int err;

		if (__atomic_load_n(&job->cancelled, __ATOMIC_ACQUIRE) ||
		    start >= __atomic_load_n(&job->stop_at, __ATOMIC_ACQUIRE))
			return;
		if (t->node >= 0 && !(plan->served[i] & (1ull << t->node)))
			continue;
		if (__atomic_exchange_n(&job->claimed[i], 1, __ATOMIC_ACQ_REL))
			continue;

		end = mpl_chunk_end(plan, i);
		err = mpl_populate_chunk(job, plan->base + start, end - start,
					 &good);
		if (err) {
			mpl_count_nodes(job, t, plan->base + start, good);
			mpl_stop(job, start + good, err);
			continue;
		}
		__atomic_store_n(&job->done[i], 1, __ATOMIC_RELEASE);
		__atomic_add_fetch(&job->bytes_done, end - start,
				   __ATOMIC_RELAXED);
		mpl_count_nodes(job, t, plan->base + start, end - start);
		/* Working in the caller's own thread: it reports itself */
		if (progress && mpl_progress_report(progress,
				__atomic_load_n(&job->bytes_done,
						__ATOMIC_RELAXED)))
			__atomic_store_n(&job->cancelled, 1, __ATOMIC_RELEASE);
	}
}

static void *mpl_thread_fn(void *arg)
{
	struct mpl_thread *t = arg;
	struct mpl_job *job = t->job;

	pthread_mutex_lock(&job->lock);
	while (!job->go)
		pthread_cond_wait(&job->cond, &job->lock);
	pthread_mutex_unlock(&job->lock);

	mpl_work(job, t, NULL);

	pthread_mutex_lock(&job->lock);
	job->running--;
	pthread_cond_broadcast(&job->cond);
	pthread_mutex_unlock(&job->lock);
	return NULL;
}

static int mpl_start_thread(struct mpl_job *job, struct mpl_thread *t,
			    unsigned int index)
{
	pthread_attr_t attr;
	int ret;

	t->node = job->plan.thread_node[index];
	ret = pthread_attr_init(&attr);
	if (ret)
		return -ret;
	/* The thread starts on its node's CPUs: nothing to migrate later */
	pthread_attr_setaffinity_np(&attr, sizeof(cpu_set_t),
				    &job->plan.thread_cpus[index]);
	ret = pthread_create(&t->tid, &attr, mpl_thread_fn, t);
	pthread_attr_destroy(&attr);
	return -ret;
}

/* The caller waits for its threads, reporting progress, maybe cancelling */
static void mpl_monitor(struct mpl_job *job, struct mpl_progress *progress)
{
	pthread_mutex_lock(&job->lock);
	while (job->running) {
		struct timespec ts;

		mpl_progress_deadline(&ts);
		pthread_cond_timedwait(&job->cond, &job->lock, &ts);
		if (!job->running)
			break;
		pthread_mutex_unlock(&job->lock);
		if (mpl_progress_report(progress,
				__atomic_load_n(&job->bytes_done,
						__ATOMIC_RELAXED)))
			__atomic_store_n(&job->cancelled, 1, __ATOMIC_RELEASE);
		pthread_mutex_lock(&job->lock);
	}
	pthread_mutex_unlock(&job->lock);
}

/* Runs the planned threads; 0 or -errno if they could not all start */
static int mpl_run_threads(struct mpl_job *job, struct mpl_thread *threads,
			   struct mpl_progress *progress)
{
	unsigned int n = job->plan.nthreads, started = 0, i;
	int ret = 0;

	for (i = 0; i < n; i++) {
		ret = mpl_start_thread(job, &threads[i], i);
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

	mpl_monitor(job, progress);
	for (i = 0; i < started; i++)
		pthread_join(threads[i].tid, NULL);
	return ret;
}

/* The end of what is populated from the start of the range */
static size_t mpl_populated(struct mpl_job *job)
{
	const struct mpl_plan *plan = &job->plan;
	size_t i, start;

	for (i = 0; i < plan->nchunks && job->done[i]; i++)
		;
	if (i == plan->nchunks)
		return plan->len < job->stop_at ? plan->len : job->stop_at;
	start = mpl_chunk_start(plan, i);
	/* The first incomplete chunk holds the lowest failure, or never ran */
	if (job->stop_at > start && job->stop_at < mpl_chunk_end(plan, i))
		return job->stop_at;
	return start < job->stop_at ? start : job->stop_at;
}

/*
 * MADV_POPULATE_WRITE came with Linux 5.14; an advice the kernel does not
 * know fails with EINVAL before the range is looked at. Without it (and
 * without the module) memprepop_populate() fails with -EOPNOTSUPP rather
 * than touching every page itself: that needs SIGBUS and SIGSEGV handlers
 * to turn a failed fault into an error, and a library cannot own those
 * process-wide handlers (QEMU has its own SIGBUS handler for memory errors).
 */
bool mpl_fallback_supported(void)
{
	return madvise(NULL, 0, MADV_POPULATE_WRITE) == 0;
}

/* Threads, or the caller alone, each with its scratch counts */
static struct mpl_thread *mpl_threads_alloc(struct mpl_job *job)
{
	unsigned int n = job->plan.nthreads ? job->plan.nthreads : 1, i;
	struct mpl_thread *threads = calloc(n, sizeof(*threads));

	if (!threads)
		return NULL;
	if (job->node_pages) {
		threads[0].counts = calloc((size_t)n * job->nr_nodes,
					   sizeof(uint64_t));
		if (!threads[0].counts) {
			free(threads);
			return NULL;
		}
	}
	for (i = 0; i < n; i++) {
		threads[i].job = job;
		threads[i].node = -1;
		if (job->node_pages)
			threads[i].counts = threads[0].counts +
					    (size_t)i * job->nr_nodes;
	}
	return threads;
}

static void mpl_threads_free(struct mpl_thread *threads)
{
	if (threads)
		free(threads[0].counts);
	free(threads);
}

int mpl_fallback_populate(void *addr, size_t len,
			  const struct memprepop_opts *opts,
			  struct memprepop_result *res,
			  struct mpl_progress *progress)
{
	struct mpl_job job = {
		.page_size = sysconf(_SC_PAGESIZE),
		.lock = PTHREAD_MUTEX_INITIALIZER,
		.cond = PTHREAD_COND_INITIALIZER,
		.stop_at = len,
		.node_pages = opts->node_pages,
	};
	struct mpl_thread *threads = NULL;
	int ret;

	/* No page is on a node beyond the possible ones */
	if (job.node_pages)
		job.nr_nodes = opts->nr_nodes < mpl_possible_nodes() ?
			       opts->nr_nodes : mpl_possible_nodes();
	ret = mpl_plan_make(&job.plan, addr, len, opts->max_threads);
	if (ret)
		goto out;
	job.claimed = calloc(job.plan.nchunks, 1);
	job.done = calloc(job.plan.nchunks, 1);
	threads = mpl_threads_alloc(&job);
	ret = -ENOMEM;
	if (!job.claimed || !job.done || !threads)
		goto out;

	if (job.plan.nthreads) {
		ret = mpl_run_threads(&job, threads, progress);
		if (ret)
			goto out;
		res->workers = job.plan.nthreads;
	} else {
		/* Not worth a thread: the caller's own faults, its placement */
		mpl_work(&job, threads, progress);
		res->workers = 1;
	}

	res->populated = mpl_populated(&job);
	if (res->populated < len)
		ret = job.err ? job.err : -ECANCELED;
	else
		ret = job.stats_err;
out:
	mpl_threads_free(threads);
	free(job.claimed);
	free(job.done);
	mpl_plan_free(&job.plan);
	return ret;
}
