// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libmemprepop: the fallback's placement plan, the module's (kmod/policy.c,
 * kmod/workers.c) done from user space, for one or many ranges.
 *
 * Each range is cut into chunks at MPP_CREW_CHUNK boundaries. Each chunk's
 * pages go to the nodes of its policy: the VMA's (get_mempolicy(MPOL_F_ADDR),
 * which also reads a shmem file's policy at that offset), else the caller's
 * task policy, which the threads are given, else the caller's node. How many
 * threads on which node, and which node's threads serve which, is the
 * module's own arithmetic (../../common/crew.h): each node gets threads on
 * the caller's allowed CPUs there, one per CPU and per
 * MPP_CREW_MIN_PER_WORKER of its share of all the ranges at most; a node
 * with memory but without such CPUs is served by the nearest node that has
 * them, and a caller asking for more threads than that
 * (MEMPREPOP_OPT_BORROW_CPUS) gets helpers on the CPUs left idle, nearest
 * first. Node sets are libnuma bitmasks, one per distinct policy, so any
 * node number works.
 */
#include <errno.h>
#include <numa.h>
#include <numaif.h>
#include <stdlib.h>
#include <string.h>

#include "crew.h"
#include "internal.h"

#define MPL_CHUNK		MPP_CREW_CHUNK

/* MPOL_F_STATIC_NODES, MPOL_F_RELATIVE_NODES, MPOL_F_NUMA_BALANCING */
#define MPL_MPOL_MODE_FLAGS	(0x7 << 13)

struct mpl_numa {
	int nnodes;			/* numa_max_node() + 1 */
	struct mpp_crew_topo topo;
	int caller_node;
	cpu_set_t *cpus;		/* per node: the caller's CPUs there */
	unsigned int *ncpus;
	struct bitmask *mask;		/* scratch, for get_mempolicy() */
};

bool mpl_plan_serves(const struct mpl_plan *plan, size_t chunk, int node)
{
	const struct bitmask *set;

	if (node < 0)
		return true;
	set = plan->sets[plan->chunks[chunk].set];
	return !set || numa_bitmask_isbitset(set, node);
}

/* The nodes a policy places pages on, as the caller's own fault would */
static void mpl_policy_nodes(const struct mpl_numa *nm, int mode,
			     const struct bitmask *nodes, struct bitmask *out)
{
	numa_bitmask_clearall(out);
	mode &= ~MPL_MPOL_MODE_FLAGS;
	if ((mode == MPOL_BIND || mode == MPOL_INTERLEAVE ||
	     mode == MPOL_PREFERRED || mode == MPOL_PREFERRED_MANY ||
	     mode == MPOL_WEIGHTED_INTERLEAVE) && numa_bitmask_weight(nodes))
		copy_bitmask_to_bitmask((struct bitmask *)nodes, out);
	else
		numa_bitmask_setbit(out, nm->caller_node);
}

static void mpl_chunk_nodes(struct mpl_numa *nm, const struct mpl_plan *plan,
			    const struct mpl_target *target, const char *addr,
			    struct bitmask *out)
{
	int mode;

	if (mpl_target_policy(target, addr, &mode, nm->mask)) {
		/* A hole: it fails anyway */
		numa_bitmask_clearall(out);
		numa_bitmask_setbit(out, nm->caller_node);
	} else if (mode == MPOL_DEFAULT) {
		mpl_policy_nodes(nm, plan->task_mode, plan->task_nodes, out);
	} else {
		mpl_policy_nodes(nm, mode, nm->mask, out);
	}
}

static int mpl_distance(int from, int to)
{
	return numa_distance(from, to);
}

/* @out: the nodes whose threads serve pages of @nodes */
static void mpl_serve(const struct mpl_numa *nm, const struct bitmask *nodes,
		      const unsigned int *count, struct bitmask *out)
{
	int n;

	numa_bitmask_clearall(out);
	for (n = 0; n < nm->nnodes; n++) {
		int by;

		if (!numa_bitmask_isbitset(nodes, n))
			continue;
		by = mpp_crew_server(&nm->topo, n, count);
		if (by >= 0)
			numa_bitmask_setbit(out, by);
	}
}

static void mpl_numa_free(struct mpl_numa *nm)
{
	if (nm->mask)
		numa_bitmask_free(nm->mask);
	free(nm->cpus);
	free(nm->ncpus);
}

static int mpl_numa_init(struct mpl_numa *nm, const cpu_set_t *allowed)
{
	struct bitmask *cpus;
	int n, cpu;

	memset(nm, 0, sizeof(*nm));
	nm->nnodes = numa_max_node() + 1;
	nm->topo.nr_nodes = nm->nnodes;
	nm->topo.distance = mpl_distance;
	nm->caller_node = numa_node_of_cpu(sched_getcpu());
	if (nm->caller_node < 0 || nm->caller_node >= nm->nnodes)
		nm->caller_node = 0;
	nm->mask = numa_allocate_nodemask();
	nm->cpus = calloc(nm->nnodes, sizeof(*nm->cpus));
	nm->ncpus = calloc(nm->nnodes, sizeof(*nm->ncpus));
	cpus = numa_allocate_cpumask();
	if (!nm->mask || !nm->cpus || !nm->ncpus || !cpus) {
		if (cpus)
			numa_bitmask_free(cpus);
		return -ENOMEM;
	}
	for (n = 0; n < nm->nnodes; n++) {
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
	return 0;
}

/*
 * Helpers (MEMPREPOP_OPT_BORROW_CPUS), as the module's: into *@helpp, which
 * it allocates. Returns how many (none, and NULL, when out of memory).
 */
static unsigned int mpl_count_helpers(const struct mpl_numa *nm,
				      const unsigned long long *demand,
				      unsigned int max_threads,
				      unsigned int total,
				      const unsigned int *per_node,
				      struct mpp_crew_helper **helpp)
{
	unsigned int *idle = calloc(nm->nnodes, sizeof(*idle));
	unsigned int *has = calloc(nm->nnodes, sizeof(*has));
	/* At most one helper per CPU */
	struct mpp_crew_helper *help = calloc(CPU_SETSIZE, sizeof(*help));
	unsigned int n = 0;
	int node;

	*helpp = help;
	if (idle && has && help) {
		for (node = 0; node < nm->nnodes; node++) {
			idle[node] = nm->ncpus[node] - per_node[node];
			has[node] = per_node[node];
		}
		n = mpp_crew_helpers(&nm->topo, max_threads, total, demand,
				     idle, has, help, CPU_SETSIZE);
	}
	free(idle);
	free(has);
	return n;
}

static int mpl_threads_alloc(struct mpl_plan *plan, unsigned int n)
{
	plan->nthreads = n;
	plan->thread_node = calloc(n + 1, sizeof(*plan->thread_node));
	plan->thread_cpus = calloc(n + 1, sizeof(*plan->thread_cpus));
	return plan->thread_node && plan->thread_cpus ? 0 : -ENOMEM;
}

/*
 * Less than two chunks of work in all gets no thread unless the caller
 * cannot fault it itself (in the background): a thread would do what the
 * caller can, after a wake-up and a wait, and two would not finish sooner.
 * Measured in the test VM through a kept context, 16 MiB of THP already
 * populated, 2 x 30 runs alternated with the library before common/crew.h
 * (which gave no thread below 64 MiB): 1.36 ms with two threads, 1.01 ms
 * with none, against 1.03 ms before. The module's calling thread faults
 * only what its workers may not, so this is the library's alone.
 */
static bool mpl_plan_alone(uint64_t total, bool need_thread)
{
	return !need_thread && total < 2 * MPP_CREW_CHUNK;
}

/* One set that every chunk is in, for @n threads: 0 or -ENOMEM */
static int mpl_plan_one_set(struct mpl_plan *plan, unsigned int n)
{
	plan->nsets = 1;
	plan->sets = calloc(1, sizeof(*plan->sets));
	if (!plan->sets)
		return -ENOMEM;
	return mpl_threads_alloc(plan, n);
}

/*
 * Work the caller does alone (mpl_plan_alone()): no thread, every chunk
 * its own. Where its CPUs are and what its policies say change nothing
 * then, so none of them is read, and no set or thread is allocated: a
 * small call costs madvise() plus the library's bookkeeping, not four more
 * system calls.
 */
static int mpl_plan_caller(struct mpl_plan *plan)
{
	plan->nthreads = 0;
	return 0;
}

/* Without NUMA: threads anywhere the caller may run, any chunk theirs */
static int mpl_plan_flat(struct mpl_plan *plan, const cpu_set_t *allowed,
			 uint64_t total, unsigned int max_threads,
			 bool need_thread)
{
	unsigned int n = CPU_COUNT(allowed), i;
	uint64_t by_size = total / MPP_CREW_MIN_PER_WORKER;

	if (max_threads && max_threads < n)
		n = max_threads;
	if (by_size < n)
		n = by_size;
	if (!n && need_thread && plan->nchunks)
		n = 1;
	if (mpl_plan_one_set(plan, n))
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		plan->thread_node[i] = -1;
		plan->thread_cpus[i] = *allowed;
	}
	return 0;
}

/*
 * Cuts the ranges into chunks at MPL_CHUNK boundaries, range by range: the
 * chunks, then each range's first, in one allocation
 */
static int mpl_plan_chunks(struct mpl_plan *plan,
			   const struct memprepop_range *work, unsigned int nr)
{
	size_t n = 0, c = 0, chunks_len;
	unsigned int r;

	for (r = 0; r < nr; r++)
		n += (work[r].addr + work[r].len + MPL_CHUNK - 1) / MPL_CHUNK -
		     work[r].addr / MPL_CHUNK;
	if (n >= SIZE_MAX / sizeof(*plan->chunks) ||
	    (n + 1) * sizeof(*plan->chunks) >
	    SIZE_MAX - ((size_t)nr + 1) * sizeof(*plan->first))
		return -ENOMEM;
	chunks_len = (n + 1) * sizeof(*plan->chunks);
	plan->chunks = calloc(1, chunks_len +
			      ((size_t)nr + 1) * sizeof(*plan->first));
	if (!plan->chunks)
		return -ENOMEM;
	plan->first = (size_t *)((char *)plan->chunks + chunks_len);
	for (r = 0; r < nr; r++) {
		uint64_t at = work[r].addr, end = at + work[r].len;

		plan->first[r] = c;
		while (at < end) {
			uint64_t next = (at / MPL_CHUNK + 1) * MPL_CHUNK;

			if (next > end)
				next = end;
			plan->chunks[c].range = r;
			plan->chunks[c].start = at - work[r].addr;
			plan->chunks[c].end = next - work[r].addr;
			c++;
			at = next;
		}
	}
	plan->first[nr] = c;
	plan->nchunks = c;
	return 0;
}

/* The index of @nodes among plan->sets, added if new; -1 without memory */
static int mpl_set_index(struct mpl_plan *plan, const struct bitmask *nodes,
			 unsigned int *cap)
{
	unsigned int i;

	for (i = plan->nsets; i--;)
		if (numa_bitmask_equal(plan->sets[i], nodes))
			return i;
	if (plan->nsets == *cap) {
		unsigned int more = *cap ? 2 * *cap : 4;
		struct bitmask **sets = realloc(plan->sets,
						more * sizeof(*sets));

		if (!sets)
			return -1;
		plan->sets = sets;
		*cap = more;
	}
	plan->sets[plan->nsets] = numa_allocate_nodemask();
	if (!plan->sets[plan->nsets])
		return -1;
	copy_bitmask_to_bitmask((struct bitmask *)nodes,
				plan->sets[plan->nsets]);
	return plan->nsets++;
}

/*
 * Each chunk's set: the nodes its policy puts its pages on, one entry of
 * plan->sets per distinct set. 0, -ENOMEM, or -ECANCELED by @progress.
 */
static int mpl_plan_sets(struct mpl_plan *plan, struct mpl_numa *nm,
			 const struct mpl_target *target,
			 const struct memprepop_range *work,
			 struct mpl_progress *progress)
{
	struct bitmask *nodes = numa_allocate_nodemask();
	unsigned int cap = 0;
	int set = -1, ret = 0;
	size_t i;

	if (!nodes)
		return -ENOMEM;
	for (i = 0; i < plan->nchunks && !ret; i++) {
		struct mpl_chunk *c = &plan->chunks[i];

		mpl_chunk_nodes(nm, plan, target, (char *)(uintptr_t)
				(work[c->range].addr + c->start), nodes);
		/* Runs of chunks mostly share one */
		if (set < 0 || !numa_bitmask_equal(plan->sets[set], nodes))
			set = mpl_set_index(plan, nodes, &cap);
		if (set < 0)
			ret = -ENOMEM;
		c->set = set;
		/* A policy read per 16 MiB: 0.3 s a TiB, to be cancellable */
		if (!ret && progress && i % 1024 == 1023 &&
		    mpl_progress_report(progress, 0))
			ret = -ECANCELED;
	}
	numa_bitmask_free(nodes);
	return ret;
}

/*
 * Bytes each node's threads would take if every node with CPUs had some,
 * into @demand; @served is scratch. 0 or -ENOMEM.
 */
static int mpl_plan_demand(const struct mpl_plan *plan,
			   const struct mpl_numa *nm,
			   unsigned long long *demand, struct bitmask *served)
{
	uint64_t *set_bytes = calloc(plan->nsets + 1, sizeof(*set_bytes));
	unsigned int s;
	size_t i;
	int n;

	if (!set_bytes)
		return -ENOMEM;
	for (i = 0; i < plan->nchunks; i++)
		set_bytes[plan->chunks[i].set] += plan->chunks[i].end -
						  plan->chunks[i].start;
	for (s = 0; s < plan->nsets; s++) {
		int weight;

		mpl_serve(nm, plan->sets[s], nm->ncpus, served);
		weight = numa_bitmask_weight(served);
		for (n = 0; n < nm->nnodes && weight; n++)
			if (numa_bitmask_isbitset(served, n))
				demand[n] += set_bytes[s] / weight;
	}
	free(set_bytes);
	return 0;
}

/*
 * The threads: @per_node on each node's CPUs, then the @nr_help helpers;
 * each set then names the nodes whose threads take its chunks (a node
 * without threads is served by the nearest that has some)
 */
static int mpl_plan_threads(struct mpl_plan *plan, const struct mpl_numa *nm,
			    const unsigned int *per_node, unsigned int total,
			    const struct mpp_crew_helper *help,
			    unsigned int nr_help, struct bitmask *served)
{
	unsigned int s, t = 0, k;
	int n, ret;

	ret = mpl_threads_alloc(plan, total + nr_help);
	if (ret)
		return ret;
	for (s = 0; s < plan->nsets; s++) {
		mpl_serve(nm, plan->sets[s], per_node, served);
		copy_bitmask_to_bitmask(served, plan->sets[s]);
	}
	for (n = 0; n < nm->nnodes; n++) {
		for (k = 0; k < per_node[n]; k++, t++) {
			plan->thread_node[t] = n;
			plan->thread_cpus[t] = nm->cpus[n];
		}
	}
	for (k = 0; k < nr_help; k++, t++) {
		plan->thread_node[t] = help[k].serves;
		plan->thread_cpus[t] = nm->cpus[help[k].on];
	}
	return 0;
}

/* Threads per node from the nodes each chunk's pages go to, its set */
static int mpl_plan_numa(struct mpl_plan *plan, struct mpl_numa *nm,
			 unsigned int max_threads, bool borrow, bool need_thread)
{
	unsigned int *per_node = calloc(nm->nnodes, sizeof(*per_node));
	unsigned long long *demand = calloc(nm->nnodes, sizeof(*demand));
	struct bitmask *served = numa_allocate_nodemask();
	struct mpp_crew_helper *help = NULL;
	unsigned int total = 0, nr_help = 0;
	int ret = -ENOMEM;

	if (!per_node || !demand || !served)
		goto out;
	ret = mpl_plan_demand(plan, nm, demand, served);
	if (ret)
		goto out;
	total = mpp_crew_count(&nm->topo, nm->ncpus, demand, max_threads,
			       need_thread, per_node);
	nr_help = borrow ? mpl_count_helpers(nm, demand, max_threads, total,
					     per_node, &help) : 0;
	ret = mpl_plan_threads(plan, nm, per_node, total, help, nr_help,
			       served);
out:
	free(help);
	if (served)
		numa_bitmask_free(served);
	free(per_node);
	free(demand);
	return ret;
}

/**
 * mpl_plan_make() - plan the fallback's threads and chunks
 * @plan: filled; free it with mpl_plan_free()
 * @target: whose memory, prepared (mpl_target_prepare())
 * @work: the ranges, lengths in whole pages
 * @nr: entries of @work
 * @max_threads: most threads, 0 for no limit
 * @borrow: helpers up to @max_threads (MEMPREPOP_OPT_BORROW_CPUS)
 * @need_thread: at least one thread when there is anything to do (in the
 *	background, the caller cannot do it itself)
 * @progress: the caller's progress callback, or NULL (in the background):
 *	a plan of terabytes takes a second, which it may cancel
 *
 * Reads the caller's CPUs and task policy as they are now, unless the
 * ranges are too small for a thread: plan->nthreads is then 0, and the
 * caller populates them itself.
 *
 * Return: 0, -ECANCELED when @progress cancelled, or -errno.
 */
int mpl_plan_make(struct mpl_plan *plan, const struct mpl_target *target,
		  const struct memprepop_range *work, unsigned int nr,
		  unsigned int max_threads, bool borrow, bool need_thread,
		  struct mpl_progress *progress)
{
	struct mpl_numa nm = { 0 };
	cpu_set_t allowed;
	uint64_t total = 0;
	unsigned int r;
	int ret;

	memset(plan, 0, sizeof(*plan));
	plan->task_mode = -1;
	ret = mpl_plan_chunks(plan, work, nr);
	if (ret)
		return ret;
	for (r = 0; r < nr; r++)
		total += work[r].len;
	if (mpl_plan_alone(total, need_thread))
		return mpl_plan_caller(plan);
	if (sched_getaffinity(0, sizeof(allowed), &allowed))
		return -errno;
	plan->allowed = allowed;
	if (numa_available() < 0)
		return mpl_plan_flat(plan, &allowed, total, max_threads,
				     need_thread);

	ret = mpl_numa_init(&nm, &allowed);
	plan->task_nodes = numa_allocate_nodemask();
	if (!ret && !plan->task_nodes)
		ret = -ENOMEM;
	if (ret)
		goto out;
	if (get_mempolicy(&plan->task_mode, plan->task_nodes->maskp,
			  plan->task_nodes->size + 1, NULL, 0)) {
		plan->task_mode = MPOL_DEFAULT;
		numa_bitmask_clearall(plan->task_nodes);
	}
	ret = mpl_plan_sets(plan, &nm, target, work, progress);
	if (!ret)
		ret = mpl_plan_numa(plan, &nm, max_threads, borrow,
				    need_thread);
out:
	mpl_numa_free(&nm);
	return ret;
}

void mpl_plan_free(struct mpl_plan *plan)
{
	unsigned int i;

	for (i = 0; i < plan->nsets; i++)
		if (plan->sets[i])
			numa_bitmask_free(plan->sets[i]);
	if (plan->task_nodes)
		numa_bitmask_free(plan->task_nodes);
	free(plan->sets);
	/* plan->first is in the same block */
	free(plan->chunks);
	free(plan->thread_node);
	free(plan->thread_cpus);
	memset(plan, 0, sizeof(*plan));
}
