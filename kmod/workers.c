// SPDX-License-Identifier: GPL-2.0
/*
 * memprepop: the per-node workers of a request.
 *
 * Each node whose memory the range goes to gets workers on the CPUs of that
 * node that the caller may run on, one per CPU at most and one per
 * MPP_MIN_PER_WORKER of its share at most; a node with memory but without
 * such CPUs is served by the nearest node that has them. Workers are kernel
 * threads that take on the caller's identity (identity.c) and never run
 * outside its CPU mask. All are created before any of them starts faulting.
 *
 * Kernel threads are a shared resource, so they are bounded: at most one
 * per online CPU for all the concurrent calls of one process, and at most
 * max_threads in the whole system. A worker that cannot be had (a bound, a
 * pids limit, no memory) only means fewer workers: with none, the caller
 * faults the range itself, as madvise() would.
 */
#include <linux/cpumask.h>
#include <linux/hashtable.h>
#include <linux/kthread.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/sched.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>
#include <linux/topology.h>

#include "internal.h"

static unsigned int max_threads;
module_param(max_threads, uint, 0644);
MODULE_PARM_DESC(max_threads,
		 "Most worker threads in the system at once (0: 4 per online CPU)");

/**
 * struct mpp_mm_threads - worker threads working for one mm
 * @node: in mpp_mm_threads_hash
 * @mm: the mm, kept alive by the requests of the threads
 * @nr: its live worker threads
 */
struct mpp_mm_threads {
	struct hlist_node node;
	struct mm_struct *mm;
	unsigned int nr;
};

static DEFINE_SPINLOCK(mpp_threads_lock);
static DEFINE_HASHTABLE(mpp_mm_threads_hash, 6);
static unsigned int mpp_nr_threads;

static struct mpp_mm_threads *mpp_mm_threads_find(struct mm_struct *mm)
{
	struct mpp_mm_threads *t;

	hash_for_each_possible(mpp_mm_threads_hash, t, node, (unsigned long)mm)
		if (t->mm == mm)
			return t;
	return NULL;
}

/*
 * Take up to @want thread slots for @mm, within the bound per process and
 * the bound of the system. Returns how many it took.
 */
static unsigned int mpp_threads_get(struct mm_struct *mm, unsigned int want)
{
	unsigned int sys_max = READ_ONCE(max_threads) ?: 4 * num_online_cpus();
	unsigned int mm_max = num_online_cpus();
	struct mpp_mm_threads *t, *new;
	unsigned int got = 0;

	new = kzalloc(sizeof(*new), GFP_KERNEL);
	if (!new)
		return 0;
	spin_lock(&mpp_threads_lock);
	t = mpp_mm_threads_find(mm);
	if (!t) {
		t = new;
		t->mm = mm;
		hash_add(mpp_mm_threads_hash, &t->node, (unsigned long)mm);
		new = NULL;
	}
	if (mpp_nr_threads < sys_max && t->nr < mm_max)
		got = min3(want, sys_max - mpp_nr_threads, mm_max - t->nr);
	t->nr += got;
	mpp_nr_threads += got;
	if (!t->nr) {
		hash_del(&t->node);
		new = t;
	}
	spin_unlock(&mpp_threads_lock);
	kfree(new);
	return got;
}

static void mpp_threads_put(struct mm_struct *mm, unsigned int nr)
{
	struct mpp_mm_threads *t, *gone = NULL;

	if (!nr)
		return;
	spin_lock(&mpp_threads_lock);
	t = mpp_mm_threads_find(mm);
	t->nr -= nr;
	mpp_nr_threads -= nr;
	if (!t->nr) {
		hash_del(&t->node);
		gone = t;
	}
	spin_unlock(&mpp_threads_lock);
	kfree(gone);
}

/*
 * Fault one chunk as a worker: with a user reference on the mm for as long
 * as it faults, which it cannot have once the process has exited: then the
 * request is over.
 */
static void mpp_worker_chunk(struct mpp_worker *w, struct mpp_chunk *chunk)
{
	struct mpp_request *req = w->req;
	unsigned long reached = chunk->start;
	int ret = -ECANCELED;

	if (mmget_not_zero(req->mm)) {
		ret = mpp_fault_chunk(req, chunk, false, w->node_pages,
				      &reached);
		mmput_async(req->mm);
	} else {
		mpp_kill(req);
	}
	if (ret == MPP_HANDOFF)
		mpp_handoff(req, chunk, reached);
	else
		mpp_chunk_finish(req, chunk, reached, ret);
	/* Progress and cancel, when the caller is not there to see to it */
	mpp_control_sync(req, false);
}

static int mpp_worker_fn(void *data)
{
	struct mpp_worker *w = data;
	struct mpp_request *req = w->req;
	struct mpp_identity_saved saved;
	struct mpp_chunk chunk;

	mpp_identity_enter(&req->id, req->mm, &saved);
	mpp_policy_enter(w->pol);
	while (mpp_claim(req, w->node, &w->next_seg, &chunk))
		mpp_worker_chunk(w, &chunk);
	mpp_policy_leave();
	kfree(w->pol);
	mpp_identity_leave(req->mm, &saved);

	mpp_threads_put(req->mm, 1);
	if (atomic_dec_and_test(&req->active))
		mpp_notify(req);
	mpp_request_put(req);
	module_put_and_kthread_exit(0);
}

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

/*
 * Workers per node: as many as the caller's CPUs there and the node's share
 * of the range allow, then cut down to @max_workers, keeping one on as many
 * nodes as possible. None at all for a range too small to be worth one, or
 * for a SCHED_DEADLINE caller, whose bandwidth is its own and cannot be
 * shared out. Returns the total (0 also when out of memory).
 */
static unsigned int mpp_count_workers(struct mpp_request *req,
				      unsigned int max_workers,
				      unsigned int *per_node)
{
	unsigned int total = 0, *cpus;
	u64 *demand, sum = 0;
	int nid;

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
out_free:
	kfree(demand);
	kfree(cpus);
	return total;
}

/*
 * Create worker @w for node @nid, made the caller's, with the CPUs of
 * @nid that the caller may use (@cpus is scratch). Not yet running.
 */
static int mpp_worker_create(struct mpp_request *req, struct mpp_worker *w,
			     int nid, unsigned int index, struct cpumask *cpus)
{
	struct task_struct *task;
	int ret;

	w->req = req;
	w->node = nid;
	w->node_pages = NULL;
	if (req->node_pages)
		w->node_pages = req->node_pages +
				(w - req->workers + 1) * req->nr_stat_nodes;
	w->pol = kmemdup(&req->task_pol, sizeof(*w->pol), GFP_KERNEL_ACCOUNT);
	if (!w->pol)
		return -ENOMEM;
	task = kthread_create_on_node(mpp_worker_fn, w, nid,
				      "memprepop/%d:%u", nid, index);
	if (IS_ERR(task)) {
		ret = PTR_ERR(task);
		goto out_free_pol;
	}
	w->task = task;

	/* Attach first: a cpuset attach resets the CPU mask */
	ret = mpp_identity_adopt(&req->id, task);
	if (ret)
		goto out_stop;
	cpumask_and(cpus, current->cpus_ptr, cpumask_of_node(nid));
	ret = set_cpus_allowed_ptr(task, cpus);
	if (ret)
		goto out_stop;
	return 0;

out_stop:
	/* Never woken: kthread_stop() makes it exit without running */
	kthread_stop(task);
out_free_pol:
	kfree(w->pol);
	w->pol = NULL;
	return ret;
}

/**
 * mpp_workers_start() - create the request's workers and let them go
 * @req: the planned request, in the caller's context
 * @max_workers: most workers to use, 0 for no limit
 *
 * Ranges too small to be worth a worker, and the ranges of nodes whose
 * workers could not be had, are left to the caller: with no worker at all,
 * its segments all become caller-only.
 *
 * Return: 0, or -ENOMEM when the request's own bookkeeping could not be
 * allocated.
 */
int mpp_workers_start(struct mpp_request *req, unsigned int max_workers)
{
	unsigned int *per_node, *created_on, total, taken, created = 0;
	unsigned int round, i;
	cpumask_var_t mask;
	int nid, ret = -ENOMEM;

	per_node = kcalloc(nr_node_ids, sizeof(*per_node), GFP_KERNEL);
	created_on = kcalloc(nr_node_ids, sizeof(*created_on), GFP_KERNEL);
	if (!per_node || !created_on)
		goto out_free_counts;
	if (!zalloc_cpumask_var(&mask, GFP_KERNEL))
		goto out_free_counts;

	total = mpp_count_workers(req, max_workers, per_node);
	taken = total ? mpp_threads_get(req->mm, total) : 0;
	if (taken)
		req->workers = kvcalloc(taken, sizeof(*req->workers),
					GFP_KERNEL_ACCOUNT);
	/* Where a thread stopped by a kill was: one per thread */
	req->partial = kcalloc(taken + 1, sizeof(*req->partial),
			       GFP_KERNEL_ACCOUNT);
	if (!req->partial)
		goto out_put_threads;
	/* Node counts: the caller's first, then one row per worker */
	if (req->nr_stat_nodes) {
		req->node_pages = kvcalloc((taken + 1) * req->nr_stat_nodes,
					   sizeof(*req->node_pages),
					   GFP_KERNEL_ACCOUNT);
		if (!req->node_pages)
			goto out_put_threads;
	}
	ret = 0;

	/* Round robin over the nodes, so that a cut leaves each node some */
	for (round = 0; req->workers && created < taken; round++) {
		bool more = false;

		for_each_online_node(nid) {
			if (round >= per_node[nid] || created == taken)
				continue;
			more = true;
			/* A worker that cannot be had is one fewer, no more */
			if (!mpp_worker_create(req, &req->workers[created], nid,
					       round, mask)) {
				created_on[nid]++;
				created++;
			}
		}
		if (!more)
			break;
	}

	req->nr_workers = created;
	if (!created) {
		/* No worker: all of it in the caller's own context */
		for (i = 0; i < req->nr_segs; i++)
			req->segs[i].caller_only = true;
		req->caller_segs = req->nr_segs;
	} else {
		/* Nodes without workers are served by the nearest with some */
		mpp_serve(req, created_on, NULL);
	}

	atomic_set(&req->active, created);
	for (i = 0; i < created; i++) {
		kref_get(&req->ref);
		__module_get(THIS_MODULE);
		wake_up_process(req->workers[i].task);
	}
	mpp_stats_workers(created);

out_put_threads:
	mpp_threads_put(req->mm, taken - created);
	free_cpumask_var(mask);
out_free_counts:
	kfree(created_on);
	kfree(per_node);
	return ret;
}
