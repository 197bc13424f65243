// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libmemprepop: the fallback backend, for kernels without the module.
 *
 * What QEMU's preallocation does, done right: every thread is created before
 * any populating starts (creating a thread maps its stack, which takes
 * mmap_lock for write and would stall the others), each thread runs on the
 * allowed CPUs of the node its pages belong to so that they are zeroed
 * node-locally, chunks are handed out dynamically, and the first failure
 * stops everyone with an exact count of what was populated.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <numa.h>
#include <numaif.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "internal.h"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE	23
#endif
/* MPOL_F_STATIC_NODES, MPOL_F_RELATIVE_NODES, MPOL_F_NUMA_BALANCING */
#define MPP_MPOL_MODE_FLAGS	(0x7 << 13)
#ifndef MPOL_PREFERRED_MANY
#define MPOL_PREFERRED_MANY	5
#endif

/* The unit handed out to threads: small enough to balance, large to batch. */
#define MPP_CHUNK		(32UL << 20)
/* No thread is started for less than this much memory. */
#define MPP_MIN_PER_THREAD	(64UL << 20)

struct mpp_job {
	char *base;
	size_t len;
	size_t nchunks;
	uint64_t flags;
	long page_size;

	/* Start line: no thread populates before all of them exist. */
	pthread_mutex_t lock;
	pthread_cond_t go_cond;
	bool go;

	/* Atomics: next chunk to hand out, and the stop signal. */
	size_t next;
	int stop;

	/* Under lock: the lowest failure, as an offset and its -errno. */
	size_t fail_at;
	int err;

	uint64_t node_pages[MEMPREPOP_MAX_NODES];
};

/* Largest prefix of [p, p + len) that MADV_POPULATE_WRITE accepts. */
static size_t mpp_good_prefix(char *p, size_t len, long page_size)
{
	size_t lo = 0, hi = len / page_size;

	/* The whole range is known to fail; pages [0, lo) known to work. */
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		if (madvise(p, mid * page_size, MADV_POPULATE_WRITE) == 0)
			lo = mid;
		else
			hi = mid;
	}
	return lo * page_size;
}

static void mpp_count_nodes(struct mpp_job *job, char *p, size_t len)
{
	uint64_t counts[MEMPREPOP_MAX_NODES] = { 0 };
	int i;

	if (memprepop_node_pages(p, len, counts, MEMPREPOP_MAX_NODES))
		return;
	for (i = 0; i < MEMPREPOP_MAX_NODES; i++)
		if (counts[i])
			__atomic_add_fetch(&job->node_pages[i], counts[i],
					   __ATOMIC_RELAXED);
}

static void mpp_fail(struct mpp_job *job, size_t at, int err)
{
	pthread_mutex_lock(&job->lock);
	if (at < job->fail_at) {
		job->fail_at = at;
		job->err = err;
	}
	pthread_mutex_unlock(&job->lock);
	__atomic_store_n(&job->stop, 1, __ATOMIC_RELEASE);
}

static void *mpp_worker(void *arg)
{
	struct mpp_job *job = arg;

	pthread_mutex_lock(&job->lock);
	while (!job->go)
		pthread_cond_wait(&job->go_cond, &job->lock);
	pthread_mutex_unlock(&job->lock);

	while (!__atomic_load_n(&job->stop, __ATOMIC_ACQUIRE)) {
		size_t idx = __atomic_fetch_add(&job->next, 1,
						__ATOMIC_RELAXED);
		size_t off = idx * MPP_CHUNK;
		size_t clen;
		char *p;

		if (idx >= job->nchunks)
			break;
		p = job->base + off;
		clen = job->len - off < MPP_CHUNK ? job->len - off : MPP_CHUNK;
		if (madvise(p, clen, MADV_POPULATE_WRITE)) {
			int err = -errno;

			mpp_fail(job, off + mpp_good_prefix(p, clen,
							    job->page_size),
				 err);
			break;
		}
		if (job->flags & MEMPREPOP_F_NODE_STATS)
			mpp_count_nodes(job, p, clen);
	}
	return NULL;
}

/*
 * The nodes the range's pages will be placed on: those of its VMA policy, or
 * else of the calling thread's task policy (which the workers inherit), or
 * else the caller's own node. Returns the number of nodes written to @nodes.
 */
static int mpp_target_nodes(void *addr, int *nodes, int max)
{
	struct bitmask *mask = numa_allocate_nodemask();
	int mode = MPOL_DEFAULT;
	int n = 0, node;

	if (!mask)
		return 0;
	if (get_mempolicy(&mode, mask->maskp, mask->size + 1, addr,
			  MPOL_F_ADDR) || mode == MPOL_DEFAULT)
		if (get_mempolicy(&mode, mask->maskp, mask->size + 1, NULL, 0))
			mode = MPOL_DEFAULT;
	mode &= ~MPP_MPOL_MODE_FLAGS;

	if (mode == MPOL_BIND || mode == MPOL_INTERLEAVE ||
	    mode == MPOL_PREFERRED_MANY || mode == MPOL_PREFERRED) {
		for (node = 0; node <= numa_max_node() && n < max; node++)
			if (numa_bitmask_isbitset(mask, node))
				nodes[n++] = node;
	}
	if (!n) {
		/* Default and local policy: where the caller runs */
		node = numa_node_of_cpu(sched_getcpu());
		nodes[n++] = node < 0 ? 0 : node;
	}
	numa_bitmask_free(mask);
	return n;
}

/* The caller's allowed CPUs on node @nd, in @out; false if there are none. */
static bool mpp_allowed_cpus_of(int nd, struct bitmask *cpus,
				const cpu_set_t *allowed, cpu_set_t *out)
{
	int cpu;

	CPU_ZERO(out);
	if (numa_node_to_cpus(nd, cpus))
		return false;
	for (cpu = 0; cpu < (int)cpus->size && cpu < CPU_SETSIZE; cpu++)
		if (numa_bitmask_isbitset(cpus, cpu) && CPU_ISSET(cpu, allowed))
			CPU_SET(cpu, out);
	return CPU_COUNT(out) > 0;
}

/*
 * The caller's allowed CPUs on @node, or on the nearest node that has any
 * (a node may have memory but no CPUs). False when there is none at all.
 */
static bool mpp_node_cpus(int node, const cpu_set_t *allowed, cpu_set_t *out)
{
	struct bitmask *cpus = numa_allocate_cpumask();
	int best_dist = INT_MAX, nd;
	cpu_set_t candidate;
	bool found = false;

	if (!cpus)
		return false;
	for (nd = 0; nd <= numa_max_node(); nd++) {
		int dist = nd == node ? 0 : numa_distance(node, nd);

		if (dist >= best_dist ||
		    !mpp_allowed_cpus_of(nd, cpus, allowed, &candidate))
			continue;
		*out = candidate;
		best_dist = dist;
		found = true;
	}
	numa_bitmask_free(cpus);
	return found;
}

static int mpp_start_worker(struct mpp_job *job, pthread_t *tid, int node,
			    const cpu_set_t *allowed, bool numa)
{
	pthread_attr_t attr;
	cpu_set_t cpus;
	int ret;

	ret = pthread_attr_init(&attr);
	if (ret)
		return -ret;
	/* The thread starts on its node's CPUs: nothing to migrate later */
	if (numa && mpp_node_cpus(node, allowed, &cpus))
		pthread_attr_setaffinity_np(&attr, sizeof(cpus), &cpus);
	ret = pthread_create(tid, &attr, mpp_worker, job);
	pthread_attr_destroy(&attr);
	return -ret;
}

static unsigned int mpp_thread_count(const struct memprepop_opts *opts,
				     const cpu_set_t *allowed, size_t len,
				     size_t nchunks)
{
	size_t n = CPU_COUNT(allowed);
	size_t by_size = len / MPP_MIN_PER_THREAD;

	if (opts->max_threads && opts->max_threads < n)
		n = opts->max_threads;
	if (by_size < n)
		n = by_size;
	if (nchunks < n)
		n = nchunks;
	return n ? n : 1;
}

static bool mpp_have_populate_write(void)
{
	/* An unknown advice fails with EINVAL before the range is looked at */
	return madvise(NULL, 0, MADV_POPULATE_WRITE) == 0;
}

int mpp_fallback_populate(void *addr, size_t len,
			  const struct memprepop_opts *opts,
			  struct memprepop_result *res)
{
	struct mpp_job job = {
		.base = addr,
		.len = len,
		.nchunks = (len + MPP_CHUNK - 1) / MPP_CHUNK,
		.flags = opts->flags,
		.page_size = sysconf(_SC_PAGESIZE),
		.lock = PTHREAD_MUTEX_INITIALIZER,
		.go_cond = PTHREAD_COND_INITIALIZER,
		.fail_at = len,
	};
	int nodes[MEMPREPOP_MAX_NODES];
	unsigned int nthreads, started = 0, i;
	bool numa = numa_available() >= 0;
	pthread_t *tids;
	cpu_set_t allowed;
	size_t unstarted;
	int nnodes = 0;
	int ret = 0;

	if (!mpp_have_populate_write())
		return -EOPNOTSUPP;
	if (sched_getaffinity(0, sizeof(allowed), &allowed))
		return -errno;

	nthreads = mpp_thread_count(opts, &allowed, len, job.nchunks);
	if (nthreads == 1) {
		/* Not worth a thread: populate in the caller's own context */
		job.go = true;
		mpp_worker(&job);
		goto out;
	}

	tids = calloc(nthreads, sizeof(*tids));
	if (!tids)
		return -ENOMEM;
	if (numa)
		nnodes = mpp_target_nodes(addr, nodes, MEMPREPOP_MAX_NODES);
	for (i = 0; i < nthreads; i++) {
		ret = mpp_start_worker(&job, &tids[i],
				       nnodes ? nodes[i % nnodes] : 0,
				       &allowed, numa && nnodes);
		if (ret)
			break;
		started++;
	}

	pthread_mutex_lock(&job.lock);
	if (ret)
		job.stop = 1;	/* could not start them all: start none */
	job.go = true;
	pthread_cond_broadcast(&job.go_cond);
	pthread_mutex_unlock(&job.lock);

	for (i = 0; i < started; i++)
		pthread_join(tids[i], NULL);
	free(tids);
	if (ret)
		return ret;
	nthreads = started;

out:
	res->workers = nthreads;
	memcpy(res->node_pages, job.node_pages, sizeof(res->node_pages));
	/* Every chunk handed out was finished or failed; none after it ran */
	unstarted = job.next < job.nchunks ? job.next * MPP_CHUNK : len;
	res->populated = job.fail_at < unstarted ? job.fail_at : unstarted;
	return job.err;
}
