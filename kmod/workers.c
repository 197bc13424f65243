// SPDX-License-Identifier: GPL-2.0
/*
 * memprepop: the per-node workers of a request.
 *
 * Each node whose memory the range goes to gets workers on the CPUs of that
 * node that the caller may run on, one per CPU at most and one per
 * MPP_MIN_PER_WORKER of its share at most; a node with memory but without
 * such CPUs is served by the nearest node that has them. Workers are kernel
 * threads that belong to the caller as its own threads would: they are
 * attached to all of the caller's cgroups (cpu time, cpuset, hugetlb and
 * memory limits; the vhost pattern), run at its nice level and never outside
 * its CPU mask. All
 * are created before any of them starts faulting.
 */
#include <linux/cgroup.h>
#include <linux/cpumask.h>
#include <linux/kthread.h>
#include <linux/module.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/topology.h>

#include "memprepop.h"

static int mpp_worker_fn(void *data)
{
	struct mpp_worker *w = data;
	struct mpp_request *req = w->req;
	struct mpp_chunk chunk;

	mpp_policy_enter(w->pol);
	while (mpp_claim(req, w->node, &w->next_seg, &chunk)) {
		unsigned long reached;
		int ret;

		ret = mpp_fault_chunk(req, &chunk, false, w->node_pages,
				      &reached);
		mpp_chunk_finish(req, &chunk, reached, ret);
	}
	mpp_policy_leave();
	kfree(w->pol);

	if (atomic_dec_and_test(&req->active))
		complete(&req->done);
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
 * nodes as possible. None at all for a range too small to be worth one.
 * Returns the total, or 0 (also when out of memory: the caller does it all).
 */
static unsigned int mpp_count_workers(struct mpp_request *req,
				      unsigned int max_workers,
				      unsigned int *per_node)
{
	unsigned int total = 0, *cpus;
	u64 *demand, sum = 0;
	int nid;

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
	if (sum < MPP_MIN_PER_WORKER)
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

static void mpp_workers_abort(struct mpp_request *req, unsigned int created)
{
	unsigned int i;

	/* Never woken: kthread_stop() makes them exit without running */
	for (i = 0; i < created; i++) {
		kthread_stop(req->workers[i].task);
		kfree(req->workers[i].pol);
	}
}

/* Already in all of the caller's cgroups (both in the root ones, say)? */
static bool mpp_same_cgroups(struct task_struct *a, struct task_struct *b)
{
	bool same;

	rcu_read_lock();
	same = task_css_set(a) == task_css_set(b);
	rcu_read_unlock();
	return same;
}

static int mpp_worker_create(struct mpp_request *req, struct mpp_worker *w,
			     int nid, unsigned int index, struct cpumask *cpus)
{
	struct task_struct *task;
	int ret;

	w->req = req;
	w->node = nid;
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
	/*
	 * It works for the caller: at the caller's nice level, not above it,
	 * and failing where fault injection would fail the caller's own
	 * faults (make-it-fail, for failslab and fail_page_alloc's
	 * task-filter)
	 */
	set_user_nice(task, task_nice(current));
#ifdef CONFIG_FAULT_INJECTION
	task->make_it_fail = current->make_it_fail;
#endif

	/* Attach first: a cpuset attach resets the CPU mask */
	ret = 0;
	if (!mpp_same_cgroups(current, task))
		ret = cgroup_attach_task_all(current, task);
	if (!ret) {
		cpumask_and(cpus, current->cpus_ptr, cpumask_of_node(nid));
		ret = set_cpus_allowed_ptr(task, cpus);
	}
	if (ret)
		goto out_stop;
	return 0;

out_stop:
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
 * Ranges too small to be worth a worker are left to the caller: its
 * segments all become caller-only.
 *
 * Return: 0, or -ENOMEM, -EINTR (fatal signal), or the errno of attaching a
 * worker to the caller's cgroups (-EAGAIN at a pids limit, for one).
 */
int mpp_workers_start(struct mpp_request *req, unsigned int max_workers)
{
	unsigned int *per_node, total, created = 0, i;
	cpumask_var_t mask;
	int nid, ret = 0;

	per_node = kcalloc(nr_node_ids, sizeof(*per_node), GFP_KERNEL);
	if (!per_node)
		return -ENOMEM;
	if (!zalloc_cpumask_var(&mask, GFP_KERNEL)) {
		ret = -ENOMEM;
		goto out_free_counts;
	}

	total = mpp_count_workers(req, max_workers, per_node);
	if (total)
		req->workers = kvcalloc(total, sizeof(*req->workers),
					GFP_KERNEL_ACCOUNT);
	req->partial = kcalloc(total + 1, sizeof(*req->partial),
			       GFP_KERNEL_ACCOUNT);
	if ((total && !req->workers) || !req->partial) {
		ret = -ENOMEM;
		goto out_free_mask;
	}
	if (!total) {
		/* Not worth a worker: all of it in the caller's own context */
		for (i = 0; i < req->nr_segs; i++)
			req->segs[i].caller_only = true;
		goto out_free_mask;
	}
	/* Nodes that lost their workers to the cap are served by others */
	mpp_serve(req, per_node, NULL);

	for_each_online_node(nid) {
		for (i = 0; i < per_node[nid]; i++) {
			ret = mpp_worker_create(req, &req->workers[created],
						nid, i, mask);
			if (ret)
				goto out_abort;
			created++;
		}
	}

	req->nr_workers = created;
	atomic_set(&req->active, created);
	for (i = 0; i < created; i++) {
		kref_get(&req->ref);
		__module_get(THIS_MODULE);
		wake_up_process(req->workers[i].task);
	}
	mpp_stats_workers(created);
	goto out_free_mask;

out_abort:
	mpp_workers_abort(req, created);
out_free_mask:
	free_cpumask_var(mask);
out_free_counts:
	kfree(per_node);
	return ret;
}
