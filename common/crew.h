/* SPDX-License-Identifier: GPL-2.0 OR LGPL-2.1-or-later */
/*
 * memprepop: how many threads a populate gets on which node, and which
 * node's threads serve which node's pages. The one planner of both the
 * module (kmod/workers.c, kmod/plan.c) and the library's fallback
 * (user/lib/plan.c): arithmetic over per-node arrays its user fills in from
 * its own view of the machine (node_distance() and the CPU mask in the
 * kernel, libnuma in user space), allocating nothing.
 *
 * Nodes are numbered 0 to @nr_nodes - 1; a node that is offline, or on
 * which the caller may not run, has no CPUs and no demand here, and so is
 * never chosen.
 */
#ifndef _MEMPREPOP_CREW_H
#define _MEMPREPOP_CREW_H

#ifdef __KERNEL__
#include <linux/math64.h>
#include <linux/types.h>
#define mpp_crew_div(a, b)	div64_u64(a, b)
#else
#include <stdbool.h>
#define mpp_crew_div(a, b)	((a) / (b))
#endif

/*
 * The unit of work handed to a thread, and so also how soon a thread sees
 * a cancel or a kill: small enough to balance nodes and to stop within
 * milliseconds, large enough that claiming one (an atomic in the module, a
 * madvise() call in the library) costs nothing beside zeroing it.
 */
#define MPP_CREW_CHUNK		(16ULL << 20)
/*
 * No thread is started for less than this much of a node's memory: below
 * it, handing a thread work and waiting for it costs more than faulting it.
 */
#define MPP_CREW_MIN_PER_WORKER	(8ULL << 20)

/**
 * struct mpp_crew_topo - the machine as the planner sees it
 * @nr_nodes: nodes are 0 to @nr_nodes - 1
 * @distance: the NUMA distance from one node to another
 */
struct mpp_crew_topo {
	int nr_nodes;
	int (*distance)(int from, int to);
};

/**
 * struct mpp_crew_helper - a thread on one node's CPUs for another's pages
 * @serves: the node whose pages it faults
 * @on: the node whose CPUs it runs on
 */
struct mpp_crew_helper {
	int serves;
	int on;
};

/**
 * mpp_crew_nearest() - the node nearest to @node with a non-zero @count
 * @topo: the machine
 * @node: where from
 * @count: per node
 *
 * Return: the node, or -1 when every count is zero.
 */
static inline int mpp_crew_nearest(const struct mpp_crew_topo *topo, int node,
				   const unsigned int *count)
{
	int best = -1, n;

	for (n = 0; n < topo->nr_nodes; n++) {
		if (!count[n])
			continue;
		if (best < 0 ||
		    topo->distance(node, n) < topo->distance(node, best))
			best = n;
	}
	return best;
}

/**
 * mpp_crew_server() - whose threads fault the pages of @node
 * @topo: the machine
 * @node: where the pages go
 * @count: threads (or CPUs) per node
 *
 * Return: @node when it has threads, else the nearest node that has, or -1
 * when no node has any.
 */
static inline int mpp_crew_server(const struct mpp_crew_topo *topo, int node,
				  const unsigned int *count)
{
	return count[node] ? node : mpp_crew_nearest(topo, node, count);
}

/**
 * mpp_crew_count() - threads per node for a populate
 * @topo: the machine
 * @cpus: the caller's CPUs per node
 * @demand: bytes per node, as served by nodes with CPUs (mpp_crew_server())
 * @max: most threads in all, 0 for no limit
 * @even_small: at least one thread for a node with any demand, however
 *	little (in the background, where the caller does not fault)
 * @per_node: filled with threads per node
 *
 * As many as the caller's CPUs on a node and one per
 * %MPP_CREW_MIN_PER_WORKER of its demand allow, then cut down to @max,
 * taking from the node with the most threads and, among those, the least
 * demand, so that a cut leaves as many nodes as possible one. None for less
 * than %MPP_CREW_MIN_PER_WORKER in all without @even_small: the caller
 * faults that itself.
 *
 * Return: the sum of @per_node.
 */
static inline unsigned int mpp_crew_count(const struct mpp_crew_topo *topo,
					  const unsigned int *cpus,
					  const unsigned long long *demand,
					  unsigned int max, bool even_small,
					  unsigned int *per_node)
{
	unsigned long long sum = 0, want;
	unsigned int total = 0;
	int n, most;

	for (n = 0; n < topo->nr_nodes; n++) {
		per_node[n] = 0;
		sum += demand[n];
	}
	if (!sum || (sum < MPP_CREW_MIN_PER_WORKER && !even_small))
		return 0;
	for (n = 0; n < topo->nr_nodes; n++) {
		want = mpp_crew_div(demand[n] + MPP_CREW_MIN_PER_WORKER - 1,
				    MPP_CREW_MIN_PER_WORKER);
		per_node[n] = want < cpus[n] ? want : cpus[n];
		total += per_node[n];
	}
	while (max && total > max) {
		most = -1;
		for (n = 0; n < topo->nr_nodes; n++) {
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

/**
 * mpp_crew_helpers() - threads on idle CPUs of other nodes, up to @max
 * @topo: the machine
 * @max: the threads the caller asked for
 * @total: threads mpp_crew_count() gave
 * @demand: bytes per node, as for mpp_crew_count()
 * @idle: per node, the caller's CPUs there less the threads given; consumed
 * @has: per node, the threads given; consumed
 * @help: filled with the helpers
 * @cap: entries in @help
 *
 * A caller that asks for more threads than the CPUs of the nodes its memory
 * goes to give (QEMU's prealloc-threads for a backend bound to one node,
 * without a thread context) gets its CPUs on other nodes that the plan
 * leaves idle, nearest first, each for the node with the most to do per
 * thread, no node more than one per %MPP_CREW_MIN_PER_WORKER. Their pages
 * still go where the policy says; only the zeroing is remote, which is
 * still faster than leaving those CPUs idle.
 *
 * Return: how many were put in @help.
 */
static inline unsigned int mpp_crew_helpers(const struct mpp_crew_topo *topo,
					    unsigned int max,
					    unsigned int total,
					    const unsigned long long *demand,
					    unsigned int *idle,
					    unsigned int *has,
					    struct mpp_crew_helper *help,
					    unsigned int cap)
{
	unsigned int nr = 0;
	int n, most, on;

	while (total + nr < max && nr < cap) {
		most = -1;
		for (n = 0; n < topo->nr_nodes; n++) {
			if (!has[n] ||
			    has[n] >= mpp_crew_div(demand[n] +
						   MPP_CREW_MIN_PER_WORKER - 1,
						   MPP_CREW_MIN_PER_WORKER))
				continue;
			if (most < 0 || mpp_crew_div(demand[n], has[n]) >
					mpp_crew_div(demand[most], has[most]))
				most = n;
		}
		if (most < 0)
			break;
		on = mpp_crew_nearest(topo, most, idle);
		if (on < 0)
			break;
		help[nr].serves = most;
		help[nr].on = on;
		nr++;
		has[most]++;
		idle[on]--;
	}
	return nr;
}

#endif /* _MEMPREPOP_CREW_H */
