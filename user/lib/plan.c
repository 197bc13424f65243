// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libmemprepop: the fallback's placement plan, the module's (kmod/policy.c,
 * kmod/workers.c) done from user space.
 *
 * The range is cut into chunks at 32 MiB boundaries. Each chunk's pages go
 * to the nodes of its policy: the VMA's (get_mempolicy(MPOL_F_ADDR), which
 * also reads a shmem file's policy at that offset), else the caller's task
 * policy, which the threads inherit, else the caller's node. Each node gets
 * threads on the caller's allowed CPUs there, one per CPU and per 64 MiB of
 * its share at most; a node with memory but without such CPUs is served by
 * the nearest node that has them.
 */
#include <errno.h>
#include <numa.h>
#include <numaif.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* The unit handed out to threads: small enough to balance, large to batch */
#define MPL_CHUNK		(32UL << 20)
/* No thread is started for less than this much of a node's memory */
#define MPL_MIN_PER_THREAD	(64UL << 20)
/* Nodes the plan knows: those a uint64_t mask holds */
#define MPL_NODES		64

/* MPOL_F_STATIC_NODES, MPOL_F_RELATIVE_NODES, MPOL_F_NUMA_BALANCING */
#define MPL_MPOL_MODE_FLAGS	(0x7 << 13)
#ifndef MPOL_PREFERRED_MANY
#define MPOL_PREFERRED_MANY	5
#endif

struct mpl_numa {
	int max_node;
	int caller_node;
	cpu_set_t cpus[MPL_NODES];	/* the caller's allowed CPUs per node */
	unsigned int ncpus[MPL_NODES];
	struct bitmask *mask;		/* scratch, for get_mempolicy() */
	int task_mode;
	uint64_t task_nodes;
};

size_t mpl_chunk_start(const struct mpl_plan *plan, size_t index)
{
	uintptr_t base = (uintptr_t)plan->base;
	uintptr_t first = base & ~(plan->chunk_size - 1);
	uintptr_t start = first + index * plan->chunk_size;

	return (start < base ? base : start) - base;
}

size_t mpl_chunk_end(const struct mpl_plan *plan, size_t index)
{
	return index + 1 < plan->nchunks ? mpl_chunk_start(plan, index + 1) :
					   plan->len;
}

static uint64_t mpl_mask_bits(const struct bitmask *mask, int max_node)
{
	uint64_t bits = 0;
	int n;

	for (n = 0; n <= max_node && n < MPL_NODES; n++)
		if (numa_bitmask_isbitset(mask, n))
			bits |= 1ull << n;
	return bits;
}

/* The nodes a policy places pages on, as the caller's own fault would */
static uint64_t mpl_policy_nodes(const struct mpl_numa *nm, int mode,
				 uint64_t nodes)
{
	mode &= ~MPL_MPOL_MODE_FLAGS;
	if ((mode == MPOL_BIND || mode == MPOL_INTERLEAVE ||
	     mode == MPOL_PREFERRED || mode == MPOL_PREFERRED_MANY) && nodes)
		return nodes;
	return 1ull << nm->caller_node;
}

static uint64_t mpl_chunk_nodes(struct mpl_numa *nm, char *addr)
{
	int mode;

	if (get_mempolicy(&mode, nm->mask->maskp, nm->mask->size + 1, addr,
			  MPOL_F_ADDR))
		return 1ull << nm->caller_node;	/* a hole: it fails anyway */
	if (mode == MPOL_DEFAULT)
		return mpl_policy_nodes(nm, nm->task_mode, nm->task_nodes);
	return mpl_policy_nodes(nm, mode, mpl_mask_bits(nm->mask,
							nm->max_node));
}

/* The node nearest to @node among those with a non-zero @count */
static int mpl_nearest(const struct mpl_numa *nm, int node,
		       const unsigned int *count)
{
	int best = -1, n;

	for (n = 0; n <= nm->max_node; n++) {
		if (!count[n])
			continue;
		if (best < 0 ||
		    numa_distance(node, n) < numa_distance(node, best))
			best = n;
	}
	return best;
}

static uint64_t mpl_serve(const struct mpl_numa *nm, uint64_t nodes,
			  const unsigned int *count)
{
	uint64_t served = 0;
	int n;

	for (n = 0; n <= nm->max_node; n++) {
		int by;

		if (!(nodes & (1ull << n)))
			continue;
		by = count[n] ? n : mpl_nearest(nm, n, count);
		if (by >= 0)
			served |= 1ull << by;
	}
	return served;
}

static int mpl_numa_init(struct mpl_numa *nm, const cpu_set_t *allowed)
{
	struct bitmask *cpus;
	int n, cpu;

	memset(nm, 0, sizeof(*nm));
	nm->max_node = numa_max_node();
	if (nm->max_node >= MPL_NODES)
		nm->max_node = MPL_NODES - 1;
	nm->caller_node = numa_node_of_cpu(sched_getcpu());
	if (nm->caller_node < 0 || nm->caller_node > nm->max_node)
		nm->caller_node = 0;
	nm->mask = numa_allocate_nodemask();
	cpus = numa_allocate_cpumask();
	if (!nm->mask || !cpus) {
		numa_bitmask_free(cpus);
		return -ENOMEM;
	}
	for (n = 0; n <= nm->max_node; n++) {
		CPU_ZERO(&nm->cpus[n]);
		if (numa_node_to_cpus(n, cpus))
			continue;
		for (cpu = 0; cpu < (int)cpus->size && cpu < CPU_SETSIZE; cpu++)
			if (numa_bitmask_isbitset(cpus, cpu) &&
			    CPU_ISSET(cpu, allowed))
				CPU_SET(cpu, &nm->cpus[n]);
		nm->ncpus[n] = CPU_COUNT(&nm->cpus[n]);
	}
	numa_bitmask_free(cpus);
	if (get_mempolicy(&nm->task_mode, nm->mask->maskp, nm->mask->size + 1,
			  NULL, 0))
		nm->task_mode = MPOL_DEFAULT;
	nm->task_nodes = mpl_mask_bits(nm->mask, nm->max_node);
	return 0;
}

/*
 * Threads per node: as many as the caller's CPUs there and the node's share
 * allow, cut down to @max_threads keeping one on as many nodes as possible.
 */
static unsigned int mpl_count_threads(const struct mpl_numa *nm,
				      const uint64_t *demand,
				      unsigned int max_threads,
				      unsigned int *per_node)
{
	unsigned int total = 0;
	uint64_t sum = 0;
	int n;

	for (n = 0; n <= nm->max_node; n++)
		sum += demand[n];
	if (sum < MPL_MIN_PER_THREAD)
		return 0;
	for (n = 0; n <= nm->max_node; n++) {
		uint64_t want = (demand[n] + MPL_MIN_PER_THREAD - 1) /
				MPL_MIN_PER_THREAD;

		per_node[n] = want < nm->ncpus[n] ? want : nm->ncpus[n];
		total += per_node[n];
	}
	while (max_threads && total > max_threads) {
		int most = -1;

		for (n = 0; n <= nm->max_node; n++) {
			if (!per_node[n])
				continue;
			if (most < 0 || per_node[n] > per_node[most] ||
			    (per_node[n] == per_node[most] &&
			     demand[n] < demand[most]))
				most = n;
		}
		per_node[most]--;
		total--;
	}
	return total;
}

/* Without NUMA: threads anywhere the caller may run */
static int mpl_plan_flat(struct mpl_plan *plan, const cpu_set_t *allowed,
			 unsigned int max_threads)
{
	unsigned int n = CPU_COUNT(allowed), i;
	size_t by_size = plan->len / MPL_MIN_PER_THREAD;

	if (max_threads && max_threads < n)
		n = max_threads;
	if (by_size < n)
		n = by_size;
	plan->nthreads = n;
	plan->thread_node = calloc(n ? n : 1, sizeof(*plan->thread_node));
	plan->thread_cpus = calloc(n ? n : 1, sizeof(*plan->thread_cpus));
	if (!plan->thread_node || !plan->thread_cpus)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		plan->thread_node[i] = -1;
		plan->thread_cpus[i] = *allowed;
	}
	for (i = 0; i < plan->nchunks; i++)
		plan->served[i] = ~0ull;
	return 0;
}

/**
 * mpl_plan_make() - plan the fallback's threads and chunks
 * @plan: filled; free it with mpl_plan_free()
 * @base: the range
 * @len: its length
 * @max_threads: most threads, 0 for no limit
 *
 * Return: 0 or -errno. plan->nthreads is 0 when the range is too small for a
 * thread: the caller then populates it itself.
 */
int mpl_plan_make(struct mpl_plan *plan, char *base, size_t len,
		  unsigned int max_threads)
{
	unsigned int per_node[MPL_NODES] = { 0 }, cpus_count[MPL_NODES];
	uint64_t demand[MPL_NODES] = { 0 }, *nodes = NULL;
	struct mpl_numa *nm = NULL;
	cpu_set_t allowed;
	unsigned int t = 0;
	size_t i;
	int n, ret;

	memset(plan, 0, sizeof(*plan));
	plan->base = base;
	plan->len = len;
	plan->chunk_size = MPL_CHUNK;
	plan->nchunks = (((uintptr_t)base + len + MPL_CHUNK - 1) / MPL_CHUNK) -
			((uintptr_t)base / MPL_CHUNK);
	plan->served = calloc(plan->nchunks, sizeof(*plan->served));
	if (!plan->served)
		return -ENOMEM;
	if (sched_getaffinity(0, sizeof(allowed), &allowed))
		return -errno;
	if (numa_available() < 0)
		return mpl_plan_flat(plan, &allowed, max_threads);

	nm = malloc(sizeof(*nm));
	nodes = calloc(plan->nchunks, sizeof(*nodes));
	ret = -ENOMEM;
	if (!nm || !nodes)
		goto out;
	ret = mpl_numa_init(nm, &allowed);
	if (ret)
		goto out;

	for (n = 0; n <= nm->max_node; n++)
		cpus_count[n] = nm->ncpus[n];
	for (i = 0; i < plan->nchunks; i++) {
		size_t start = mpl_chunk_start(plan, i);
		size_t end = mpl_chunk_end(plan, i);
		int weight;

		nodes[i] = mpl_chunk_nodes(nm, base + start);
		plan->served[i] = mpl_serve(nm, nodes[i], cpus_count);
		weight = __builtin_popcountll(plan->served[i]);
		for (n = 0; n <= nm->max_node && weight; n++)
			if (plan->served[i] & (1ull << n))
				demand[n] += (end - start) / weight;
	}

	plan->nthreads = mpl_count_threads(nm, demand, max_threads, per_node);
	ret = -ENOMEM;
	plan->thread_node = calloc(plan->nthreads + 1,
				   sizeof(*plan->thread_node));
	plan->thread_cpus = calloc(plan->nthreads + 1,
				   sizeof(*plan->thread_cpus));
	if (!plan->thread_node || !plan->thread_cpus)
		goto out;
	/* Nodes that lost their threads to the cap are served by others */
	for (i = 0; i < plan->nchunks; i++)
		plan->served[i] = mpl_serve(nm, nodes[i], per_node);
	for (n = 0; n <= nm->max_node; n++) {
		unsigned int k;

		for (k = 0; k < per_node[n]; k++, t++) {
			plan->thread_node[t] = n;
			plan->thread_cpus[t] = nm->cpus[n];
		}
	}
	ret = 0;
out:
	if (nm)
		numa_bitmask_free(nm->mask);
	free(nm);
	free(nodes);
	return ret;
}

void mpl_plan_free(struct mpl_plan *plan)
{
	free(plan->served);
	free(plan->thread_node);
	free(plan->thread_cpus);
	memset(plan, 0, sizeof(*plan));
}
