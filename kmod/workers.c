// SPDX-License-Identifier: GPL-2.0
/*
 * memprepop: the per-node workers of a request.
 *
 * Each node whose memory the range goes to gets workers on the CPUs of that
 * node that the caller may run on, one per CPU at most and one per
 * MPP_MIN_PER_WORKER of its share at most; a node with memory but without
 * such CPUs is served by the nearest node that has them. A caller that asks
 * for more workers than that, with MEMPREPOP_F_BORROW_CPUS, gets helpers on
 * its CPUs the others leave idle, nearest first. Workers are kernel threads
 * that take on the caller's identity (identity.c) and never run outside its
 * CPU mask. All are found before any of them starts faulting: threads that
 * stayed from the caller's earlier calls, or new ones (pool.c).
 * A worker that cannot be had (a bound, a pids limit, no memory) only means
 * fewer workers: with none, the caller faults the range itself, as
 * madvise() would.
 */
#include <linux/cpumask.h>
#include <linux/sched.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>
#include <linux/topology.h>

#include "internal.h"

/*
 * Fault one chunk as a worker: with a user reference on the mm for as long
 * as it faults or writes @control, which it cannot have once the process
 * has exited: then the request is over.
 */
static void mpp_worker_chunk(struct mpp_worker *w, struct mpp_chunk *chunk)
{
	struct mpp_request *req = w->req;
	unsigned long reached = chunk->start;
	bool handoff;
	int ret;

	if (!mmget_not_zero(req->mm)) {
		mpp_kill(req);
		mpp_chunk_finish(req, chunk, reached, -ECANCELED);
		return;
	}
	ret = mpp_fault_worker(req, chunk, w->node_pages, &reached, &handoff);
	if (handoff)
		mpp_handoff(req, chunk, reached);
	else
		mpp_chunk_finish(req, chunk, reached, ret);
	/* Progress and cancel, when the caller is not there to see to it */
	mpp_control_sync(req, false);
	mmput_async(req->mm);
}

/* A worker's work, in its thread: first the caller's identity and policy */
static void mpp_worker_begin(void *data)
{
	struct mpp_worker *w = data;
	struct mpp_request *req = w->req;

	mpp_identity_enter(&req->id, req->mm, &w->saved);
	w->own_pol = mpp_policy_enter(w->pol);
}

/*
 * Then a chunk a step, until none is left; between steps its thread's loop
 * lets it be frozen, and it takes on what its caller changed since.
 */
static bool mpp_worker_step(void *data)
{
	struct mpp_worker *w = data;
	struct mpp_request *req = w->req;
	struct mpp_chunk chunk;

	if (!mpp_claim(req, w->node, &w->next_seg, &chunk))
		return false;
	mpp_worker_chunk(w, &chunk);
	return !mpp_identity_follow(&req->id, req->mm, &w->saved);
}

/* The request is told that this worker is done with it */
static void mpp_worker_done(struct mpp_worker *w)
{
	struct mpp_request *req = w->req;

	kfree(w->pol);
	/* mpp_kill() signals its thread no more: it may go to other work */
	spin_lock(&req->lock);
	w->working = false;
	spin_unlock(&req->lock);

	if (atomic_dec_and_test(&req->active))
		mpp_notify(req);
	mpp_request_put(req);
}

/* And itself again, out of the caller's cgroups before the call can end */
static void mpp_worker_end(void *data)
{
	struct mpp_worker *w = data;

	mpp_policy_leave(w->own_pol);
	mpp_identity_leave(w->req->mm, &w->saved);
	mpp_identity_disown(current);
	mpp_worker_done(w);
}

/* Its thread was killed before it began */
static void mpp_worker_abandon(void *data)
{
	mpp_worker_done(data);
}

static const struct mpp_work_ops mpp_worker_ops = {
	.begin = mpp_worker_begin,
	.step = mpp_worker_step,
	.end = mpp_worker_end,
	.abandon = mpp_worker_abandon,
};

/* The node nearest to @node among those with a non-zero @count */
static int mpp_nearest(int node, const unsigned int *count)
{
	int best = NUMA_NO_NODE, nid;

	for_each_online_node(nid) {
		if (!count[nid])
			continue;
		if (best == NUMA_NO_NODE ||
		    node_distance(node, nid) < node_distance(node, best))
			best = nid;
	}
	return best;
}

/*
 * Which nodes' threads fault each segment: the nodes its pages go to, each
 * replaced by the nearest node with a non-zero @count where it has none.
 * Adds each segment's bytes, shared out between them, to @demand if given.
 */
static void mpp_serve(struct mpp_request *req, const unsigned int *count,
		      u64 *demand)
{
	unsigned int i;

	for (i = 0; i < req->nr_segs; i++) {
		struct mpp_segment *seg = &req->segs[i];
		int nid;

		nodes_clear(seg->served_by);
		if (seg->caller_only)
			continue;
		for_each_node_mask(nid, seg->nodes) {
			int by = count[nid] ? nid : mpp_nearest(nid, count);

			if (by != NUMA_NO_NODE)
				node_set(by, seg->served_by);
		}
		if (!demand)
			continue;
		for_each_node_mask(nid, seg->served_by)
			demand[nid] += (seg->end - seg->start) /
				       nodes_weight(seg->served_by);
	}
}

/**
 * struct mpp_helper - a worker on one node's CPUs for another node's pages
 * @serves: the node whose pages it faults
 * @on: the node whose CPUs it runs on
 */
struct mpp_helper {
	int serves;
	int on;
};

/*
 * Helpers: a caller that asks for more workers than the CPUs of the nodes
 * its memory goes to give (QEMU's prealloc-threads for a backend bound to a
 * node, without a thread context) gets its CPUs on other nodes that the
 * request leaves idle, nearest first, each for the node with the most to do
 * per worker. Their pages still go where the policy says; only the zeroing
 * is remote, which is still faster than leaving those CPUs idle. Only
 * with MEMPREPOP_F_BORROW_CPUS and @max_workers: otherwise workers stay on
 * their nodes. @per_node and @cpus are consumed. Returns how many were
 * added to @help.
 */
static unsigned int mpp_count_helpers(unsigned int max_workers,
				      unsigned int total, unsigned int *cpus,
				      const u64 *demand, unsigned int *per_node,
				      struct mpp_helper *help)
{
	unsigned int n = 0;
	int nid, most, on;

	for_each_online_node(nid)
		cpus[nid] -= per_node[nid];
	while (total + n < max_workers) {
		most = NUMA_NO_NODE;
		for_each_online_node(nid) {
			if (!per_node[nid] ||
			    per_node[nid] >= DIV_ROUND_UP(demand[nid],
							  MPP_MIN_PER_WORKER))
				continue;
			if (most == NUMA_NO_NODE ||
			    div_u64(demand[nid], per_node[nid]) >
			    div_u64(demand[most], per_node[most]))
				most = nid;
		}
		if (most == NUMA_NO_NODE)
			break;
		on = mpp_nearest(most, cpus);
		if (on == NUMA_NO_NODE)
			break;
		help[n].serves = most;
		help[n].on = on;
		n++;
		per_node[most]++;
		cpus[on]--;
	}
	return n;
}

/*
 * Workers per node: as many as the caller's CPUs there and the node's share
 * of the range allow, then cut down to @max_workers, keeping one on as many
 * nodes as possible, or made up to it with helpers into @help (NULL without
 * MEMPREPOP_F_BORROW_CPUS: none). None at all for a range too small to be
 * worth one, or for a SCHED_DEADLINE caller, whose bandwidth is its own and
 * cannot be shared out. Returns the total of @per_node and *@nr_help (0
 * also when out of memory).
 */
static unsigned int mpp_count_workers(struct mpp_request *req,
				      unsigned int max_workers,
				      unsigned int *per_node,
				      struct mpp_helper *help,
				      unsigned int *nr_help)
{
	unsigned int total = 0, *cpus, *planned;
	u64 *demand, sum = 0;
	int nid;

	*nr_help = 0;
	if (req->id.sched.sched_policy == SCHED_DEADLINE)
		return 0;
	cpus = kcalloc(nr_node_ids, sizeof(*cpus), GFP_KERNEL);
	demand = kcalloc(nr_node_ids, sizeof(*demand), GFP_KERNEL);
	if (!cpus || !demand)
		goto out_free;
	for_each_online_node(nid)
		cpus[nid] = cpumask_weight_and(current->cpus_ptr,
					       cpumask_of_node(nid));
	mpp_serve(req, cpus, demand);
	for_each_online_node(nid)
		sum += demand[nid];
	/* In the background, even a small request is not the caller's */
	if (!sum || (sum < MPP_MIN_PER_WORKER &&
		     !(req->flags & MEMPREPOP_F_BACKGROUND)))
		goto out_free;

	for_each_online_node(nid) {
		per_node[nid] = min_t(u64, cpus[nid],
				      DIV_ROUND_UP(demand[nid],
						   MPP_MIN_PER_WORKER));
		total += per_node[nid];
	}
	while (max_workers && total > max_workers) {
		int most = NUMA_NO_NODE;

		/* Take from the node with the most workers, the least demand */
		for_each_online_node(nid) {
			if (!per_node[nid])
				continue;
			if (most == NUMA_NO_NODE ||
			    per_node[nid] > per_node[most] ||
			    (per_node[nid] == per_node[most] &&
			     demand[nid] < demand[most]))
				most = nid;
		}
		per_node[most]--;
		total--;
	}
	if (!help)
		goto out_free;
	planned = kmemdup(per_node, nr_node_ids * sizeof(*per_node),
			  GFP_KERNEL);
	if (planned) {
		*nr_help = mpp_count_helpers(max_workers, total, cpus, demand,
					     planned, help);
		total += *nr_help;
		kfree(planned);
	}
out_free:
	kfree(demand);
	kfree(cpus);
	return total;
}

/*
 * Make thread @t worker @w for node @nid: the caller's, with the CPUs of
 * node @on that the caller may use (@cpus is scratch). Not yet running.
 */
static int mpp_worker_init(struct mpp_request *req, struct mpp_worker *w,
			   struct mpp_thread *t, int nid, int on,
			   struct cpumask *cpus)
{
	struct task_struct *task = mpp_thread_task(t);
	int ret;

	w->req = req;
	w->thread = t;
	w->working = true;
	w->node = nid;
	w->node_pages = NULL;
	if (req->node_pages)
		w->node_pages = req->node_pages +
				(w - req->workers + 1) * req->nr_stat_nodes;
	/* Attach first: a cpuset attach resets the CPU mask */
	ret = mpp_identity_adopt(&req->id, task);
	if (ret)
		return ret;
	cpumask_and(cpus, current->cpus_ptr, cpumask_of_node(on));
	ret = set_cpus_allowed_ptr(task, cpus);
	if (ret)
		return ret;
	w->pol = kmemdup(&req->task_pol, sizeof(*w->pol), GFP_KERNEL_ACCOUNT);
	if (!w->pol)
		return -ENOMEM;
	return 0;
}

/*
 * A thread for node @nid: one of the caller's that stayed (*@reused), or a
 * new one where the caller still has a slot (@slots counts them down).
 */
static struct mpp_thread *mpp_worker_thread(struct mpp_request *req,
					    struct mpp_pool *pool, int nid,
					    unsigned int index,
					    unsigned int *slots, bool *reused)
{
	struct mpp_thread *t = mpp_pool_take(pool, nid, false);

	*reused = true;
	if (t)
		return t;
	if (*slots) {
		(*slots)--;
		*reused = false;
		return mpp_thread_create(req->mm, pool, nid, index);
	}
	/* At the bound: one that stayed on another node moves here */
	return mpp_pool_take(pool, nid, true);
}

/*
 * Add the next worker of @req: for the pages of node @nid, running on the
 * CPUs of node @on, in a thread of @on (@index names it). A worker that
 * cannot be had is one fewer, no more: returns whether it was.
 */
static bool mpp_worker_add(struct mpp_request *req, struct mpp_pool *pool,
			   int nid, int on, unsigned int index,
			   unsigned int *slots, struct cpumask *scratch)
{
	struct mpp_worker *w = &req->workers[req->nr_workers];
	struct mpp_thread *t;
	bool reused;

	t = mpp_worker_thread(req, pool, on, index, slots, &reused);
	if (!t)
		return false;
	if (mpp_worker_init(req, w, t, nid, on, scratch)) {
		/* Not kept, nor ended, in the caller's cgroups */
		mpp_identity_disown(mpp_thread_task(t));
		mpp_thread_discard(t);
		return false;
	}
	mpp_stats_workers(!reused, reused);
	req->nr_workers++;
	return true;
}

/**
 * mpp_workers_start() - find the request's workers and let them go
 * @req: the planned request, in the caller's context
 * @max_workers: most workers to use, 0 for no limit
 * @keep: the pool of the caller's file, for threads that stay
 *
 * Threads that stayed from the caller's earlier calls are used first, then
 * new ones, within the bounds (pool.c). Ranges too small to be worth a
 * worker, and the ranges of nodes whose workers could not be had, are left
 * to the caller: with no worker at all, its segments all become
 * caller-only.
 *
 * Return: 0, or -ENOMEM when the request's own bookkeeping could not be
 * allocated.
 */
int mpp_workers_start(struct mpp_request *req, unsigned int max_workers,
		      struct mpp_pool **keep)
{
	unsigned int *per_node, *created_on, total, slots = 0, created;
	unsigned int round, i, idle, nr_help;
	struct mpp_helper *help = NULL;
	struct mpp_pool *pool = NULL;
	cpumask_var_t mask;
	int nid, ret = -ENOMEM;

	per_node = kcalloc(nr_node_ids, sizeof(*per_node), GFP_KERNEL);
	created_on = kcalloc(nr_node_ids, sizeof(*created_on), GFP_KERNEL);
	if (!per_node || !created_on)
		goto out_free_counts;
	/* At most one helper per CPU; without one, no helpers */
	if (req->flags & MEMPREPOP_F_BORROW_CPUS)
		help = kcalloc(nr_cpu_ids, sizeof(*help), GFP_KERNEL);
	if (!zalloc_cpumask_var(&mask, GFP_KERNEL))
		goto out_free_counts;

	total = mpp_count_workers(req, max_workers, per_node, help, &nr_help);
	if (total && keep)
		pool = mpp_pool_keep(keep);
	/* Slots for what the threads that stayed cannot cover */
	idle = pool ? mpp_pool_idle(pool) : 0;
	if (total > idle)
		slots = mpp_threads_get(req->mm, total - idle);
	if (total)
		req->workers = kvcalloc(total, sizeof(*req->workers),
					GFP_KERNEL_ACCOUNT);
	/* Where a thread stopped by a kill was: one per thread */
	req->partial = kcalloc(total + 1, sizeof(*req->partial),
			       GFP_KERNEL_ACCOUNT);
	if (!req->partial)
		goto out_put_slots;
	/* Node counts: the caller's first, then one row per worker */
	if (req->nr_stat_nodes) {
		req->node_pages = kvcalloc((total + 1) * req->nr_stat_nodes,
					   sizeof(*req->node_pages),
					   GFP_KERNEL_ACCOUNT);
		if (!req->node_pages)
			goto out_put_slots;
	}
	ret = 0;

	/* Round robin over the nodes, so that a cut leaves each node some */
	for (round = 0; req->workers; round++) {
		bool more = false;

		for_each_online_node(nid) {
			if (round >= per_node[nid])
				continue;
			more = true;
			if (mpp_worker_add(req, pool, nid, nid, round, &slots,
					   mask))
				created_on[nid]++;
		}
		if (!more)
			break;
	}
	/* Then the helpers, on the CPUs the others leave idle */
	for (i = 0; req->workers && i < nr_help; i++)
		if (mpp_worker_add(req, pool, help[i].serves, help[i].on,
				   per_node[help[i].on] + i, &slots, mask))
			created_on[help[i].serves]++;

	created = req->nr_workers;
	if (!created) {
		/* No worker: all of it in the caller's own context */
		for (i = 0; i < req->nr_segs; i++)
			req->segs[i].caller_only = true;
		req->caller_segs = req->nr_segs > 0;
	} else {
		/* Nodes without workers are served by the nearest with some */
		mpp_serve(req, created_on, NULL);
	}

	atomic_set(&req->active, created);
	for (i = 0; i < created; i++) {
		kref_get(&req->ref);
		mpp_thread_start(req->workers[i].thread, &mpp_worker_ops,
				 &req->workers[i]);
	}

out_put_slots:
	mpp_threads_put(req->mm, slots);
	free_cpumask_var(mask);
out_free_counts:
	kfree(help);
	kfree(created_on);
	kfree(per_node);
	return ret;
}
