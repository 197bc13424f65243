// SPDX-License-Identifier: GPL-2.0
/*
 * memprepop: the crew of a request, its per-node workers.
 *
 * Each node whose memory the range goes to gets workers on the CPUs of that
 * node that the caller may run on, one per CPU at most and one per
 * MPP_CREW_MIN_PER_WORKER of its share at most; a node with memory but
 * without such CPUs is served by the nearest node that has them. A caller
 * that asks for more workers than that, with MEMPREPOP_F_BORROW_CPUS, gets
 * helpers on its CPUs the others leave idle, nearest first (the arithmetic
 * is ../common/crew.h's, shared with the library). Workers take on the
 * caller's identity (identity.c) and never run outside its CPU mask. All
 * are found before any of them starts faulting: threads of the caller's
 * process that stayed on the file from its earlier calls, or new ones
 * (pool.c). A worker that cannot be had (no room among the caller's CPUs,
 * a pids limit, no memory) only means fewer workers: with none, the
 * caller faults the range itself, as madvise() would.
 *
 * The crew also tells whoever waits for it: the calling thread, and in the
 * background the file's poll() and eventfd.
 */
#include <linux/cpumask.h>
#include <linux/eventfd.h>
#include <linux/poll.h>
#include <linux/sched.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>
#include <linux/topology.h>

#include "internal.h"

/**
 * mpp_crew_init() - a crew without workers, and whom it tells
 * @crew: the request's, zeroed
 * @call: the call: in the background the file's poll() is told, and with
 *	%MEMPREPOP_F_EVENTFD its eventfd
 * @poll_wq: the file's poll wait queue
 *
 * Return: 0, or -EBADF for an eventfd descriptor that is not one.
 */
int mpp_crew_init(struct mpp_crew *crew, const struct mpp_call *call,
		  struct wait_queue_head *poll_wq)
{
	struct eventfd_ctx *efd;

	init_waitqueue_head(&crew->wq);
	spin_lock_init(&crew->lock);
	if (!(call->flags & MEMPREPOP_F_BACKGROUND))
		return 0;
	crew->poll_wq = poll_wq;
	if (!(call->flags & MEMPREPOP_F_EVENTFD))
		return 0;
	efd = eventfd_ctx_fdget(call->eventfd);
	if (IS_ERR(efd))
		return -EBADF;
	crew->eventfd = efd;
	return 0;
}

/* What the crew allocated; its workers are done, or were never started */
void mpp_crew_destroy(struct mpp_crew *crew)
{
	unsigned int i;

	if (crew->eventfd)
		eventfd_ctx_put(crew->eventfd);
	for (i = 0; crew->workers && i < crew->sized; i++)
		free_cpumask_var(crew->workers[i].cpus);
	kfree(crew->help);
	kfree(crew->per_node);
	kvfree(crew->workers);
}

/**
 * mpp_notify() - wake whoever waits for the request to want its caller
 * @req: the request: its last worker is done, or a chunk was handed back
 *
 * The calling thread waits on the crew's @wq; in the background, while the
 * request is attached to its file, poll() on the file and the eventfd are
 * told as well, under the crew's lock, so that once mpp_notify_detach() has
 * run no thread of the request touches either.
 */
void mpp_notify(struct mpp_request *req)
{
	struct mpp_crew *crew = &req->crew;

	wake_up(&crew->wq);
	spin_lock(&crew->lock);
	if (crew->poll_wq) {
		wake_up_poll(crew->poll_wq, EPOLLIN | EPOLLRDNORM);
		if (crew->eventfd)
			eventfd_signal(crew->eventfd);
	}
	spin_unlock(&crew->lock);
}

/**
 * mpp_notify_detach() - the request's file is told nothing more of it
 * @req: a background request, reaped or given up by its file
 *
 * After it the file may be freed, and its next request's eventfd count is
 * that request's own: a worker still finishing this one either told the
 * file before, or sees it detached.
 */
void mpp_notify_detach(struct mpp_request *req)
{
	spin_lock(&req->crew.lock);
	req->crew.poll_wq = NULL;
	spin_unlock(&req->crew.lock);
}

/**
 * mpp_kill() - everyone stops now: the caller is dying, or gone
 * @req: the request: its caller has a fatal signal, its file was released,
 *	or its process is gone
 *
 * As mpp_cancel(), under the crew's lock: once it returns, no worker
 * writes the caller's @control any more (mpp_control_sync()). A worker in
 * a wait that only a fatal signal ends (a page lock, a userfaultfd
 * handler, a file system's read) stays in it until its process is killed,
 * as a thread of the caller inside madvise() would.
 */
void mpp_kill(struct mpp_request *req)
{
	spin_lock(&req->crew.lock);
	mpp_cancel(req);
	spin_unlock(&req->crew.lock);
}

/**
 * mpp_abort() - as mpp_kill(), with @err the outcome's error
 * @req: the request
 * @err: the negative errno of what it stopped for, unless it has one
 */
void mpp_abort(struct mpp_request *req, int err)
{
	cmpxchg(&req->out.abort_err, 0, err);
	mpp_kill(req);
}

/**
 * mpp_crew_caller_away() - a synchronous call's thread leaves it, or is back
 * @req: a synchronous request, in its calling thread
 * @away: true when the thread leaves the call for a signal, false when it
 *	is in the call again
 *
 * Under the crew's lock, which a worker holds to write @control: from the
 * time the thread leaves until it is back, no worker touches @control,
 * which the thread's stack or its life may have taken away meanwhile (a
 * siglongjmp() out of its handler, an exit).
 */
void mpp_crew_caller_away(struct mpp_request *req, bool away)
{
	spin_lock(&req->crew.lock);
	req->crew.caller_away = away;
	spin_unlock(&req->crew.lock);
}

/**
 * mpp_crew_done() - are all the workers of @req done?
 * @req: the request
 *
 * Return: true when none is still at work; then what they wrote of the
 * request's outcome is seen (the acquire pairs with the full barrier of
 * each worker's atomic_dec_and_test()).
 */
bool mpp_crew_done(struct mpp_request *req)
{
	return !atomic_read_acquire(&req->crew.active);
}

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
	ret = mpp_fault_worker(&req->fault, chunk, w->node_pages, &reached,
			       &handoff);
	if (ret == -EINTR)
		mpp_kill(req);
	if (handoff && !mpp_plan_handoff(&req->plan, chunk, reached))
		mpp_notify(req);
	else
		mpp_chunk_finish(req, chunk, reached, handoff ? -ENOMEM : ret);
	/* Progress and cancel, when the caller is not there to see to it */
	mpp_control_sync(req, false);
	mmput_async(req->mm);
}

/*
 * A worker's work, in its thread: first the caller's identity, its
 * scheduling attributes before anything else, then its CPUs; without them
 * (refused, or a cpuset changed meanwhile) the worker takes no chunk, and
 * the caller faults what it leaves.
 */
static void mpp_worker_begin(void *data)
{
	struct mpp_worker *w = data;
	struct mpp_request *req = w->req;

	w->entered = !mpp_identity_enter(&req->id, &w->saved);
	if (w->entered && set_cpus_allowed_ptr(current, w->cpus)) {
		mpp_identity_leave(&w->saved);
		w->entered = false;
	}
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

	if (!w->entered ||
	    !mpp_plan_claim(req, w->node, w->away, &w->next_seg, &chunk))
		return false;
	mpp_worker_chunk(w, &chunk);
	mpp_identity_follow(&req->id, &w->saved);
	return true;
}

/* Itself again */
static void mpp_worker_end(void *data)
{
	struct mpp_worker *w = data;

	if (w->entered)
		mpp_identity_leave(&w->saved);
}

/* The request is told that this worker is done with it */
static void mpp_worker_done(void *data)
{
	struct mpp_worker *w = data;
	struct mpp_request *req = w->req;

	if (atomic_dec_and_test(&req->crew.active))
		mpp_notify(req);
	mpp_request_put(req);
}

static const struct mpp_work_ops mpp_worker_ops = {
	.begin = mpp_worker_begin,
	.step = mpp_worker_step,
	.end = mpp_worker_end,
	.done = mpp_worker_done,
};

static int mpp_node_distance(int from, int to)
{
	return node_distance(from, to);
}

/* The machine, for ../common/crew.h */
static void mpp_topo_init(struct mpp_crew_topo *topo)
{
	topo->nr_nodes = nr_node_ids;
	topo->distance = mpp_node_distance;
}

/*
 * Is the caller a real-time thread bounded by RLIMIT_RTTIME? The kernel
 * checks that limit when a thread returns to user mode, which a worker
 * never does: such a caller faults its ranges itself, as madvise() would,
 * so that the limit applies as it would to madvise().
 */
static bool mpp_rttime_bound(const struct mpp_request *req)
{
	unsigned int policy = req->id.sched.sched_policy;

	return (policy == SCHED_FIFO || policy == SCHED_RR) &&
	       rlimit(RLIMIT_RTTIME) != RLIM_INFINITY;
}

/*
 * Is a crew of one, @per_node, no more than the caller: a call it waits for,
 * no helper asked for, of one chunk at most (%MPP_CREW_CHUNK), all for the
 * node the caller runs on? Then the caller faults it itself rather than
 * wake a thread and wait, as padata_do_multithreaded() runs a job of one.
 */
static bool mpp_crew_alone(const struct mpp_request *req,
			   const unsigned int *per_node,
			   const unsigned long long *demand)
{
	int nid = req->place.caller_node;

	return !(req->call.flags & (MEMPREPOP_F_BACKGROUND |
				    MEMPREPOP_F_BORROW_CPUS)) &&
	       per_node[nid] && demand[nid] <= MPP_CREW_CHUNK;
}

/*
 * Bytes that workers could fault: what is not left to the caller alone.
 * The most the demand mpp_plan_serve() shares out between nodes adds up to.
 */
static u64 mpp_plan_shared_len(const struct mpp_plan *plan)
{
	u64 len = 0;
	unsigned int i;

	for (i = 0; i < plan->nr_segs; i++)
		if (!plan->segs[i].caller_only)
			len += plan->segs[i].end - plan->segs[i].start;
	return len;
}

/**
 * mpp_crew_size() - how many workers on which node, for a planned request
 * @req: the request, planned, in the caller's context
 *
 * As many as the caller's CPUs on each node and the node's share of the
 * ranges allow, cut down to @max_workers, keeping one on as many nodes as
 * possible, or, with %MEMPREPOP_F_BORROW_CPUS, made up to it with helpers
 * on the CPUs the others leave idle. None at all for ranges too small to be
 * worth one, or where one would do no more than a chunk on the caller's
 * own node (mpp_crew_alone()) (not in the background, where the caller
 * does not fault), for a SCHED_DEADLINE caller, whose bandwidth is its own
 * and cannot be shared out, or for a real-time caller under RLIMIT_RTTIME
 * (mpp_rttime_bound()); none also when out of memory. Takes no thread yet.
 *
 * Return: the workers wanted, at most the caller's CPUs.
 */
unsigned int mpp_crew_size(struct mpp_request *req)
{
	struct mpp_crew *crew = &req->crew;
	unsigned int *cpus, *idle = NULL, *has = NULL, total;
	unsigned long long *demand;
	struct mpp_crew_topo topo;
	int nid;

	if (req->id.sched.sched_policy == SCHED_DEADLINE || mpp_rttime_bound(req))
		return 0;
	/*
	 * Less than one worker's share in all, not in the background:
	 * mpp_crew_count() gives none, so nothing is sized (a small call's
	 * cost is mostly what it runs besides its faults)
	 */
	if (!(req->call.flags & MEMPREPOP_F_BACKGROUND) &&
	    mpp_plan_shared_len(&req->plan) < MPP_CREW_MIN_PER_WORKER)
		return 0;
	mpp_topo_init(&topo);
	cpus = kcalloc(nr_node_ids, sizeof(*cpus), GFP_KERNEL);
	demand = kcalloc(nr_node_ids, sizeof(*demand), GFP_KERNEL);
	crew->per_node = kcalloc(nr_node_ids, sizeof(*crew->per_node),
				 GFP_KERNEL);
	if (!cpus || !demand || !crew->per_node)
		goto out_free;
	for_each_online_node(nid)
		cpus[nid] = cpumask_weight_and(current->cpus_ptr,
					       cpumask_of_node(nid));
	mpp_plan_serve(&req->plan, &topo, cpus, demand);
	total = mpp_crew_count(&topo, cpus, demand, req->call.max_workers,
			       req->call.flags & MEMPREPOP_F_BACKGROUND,
			       crew->per_node);
	if (total == 1 && mpp_crew_alone(req, crew->per_node, demand))
		total = 0;
	crew->sized = total;
	if (!(req->call.flags & MEMPREPOP_F_BORROW_CPUS) || !total)
		goto out_free;

	/* At most one helper per CPU */
	idle = kcalloc(nr_node_ids, sizeof(*idle), GFP_KERNEL);
	has = kmemdup(crew->per_node, nr_node_ids * sizeof(*has), GFP_KERNEL);
	crew->help = kcalloc(nr_cpu_ids, sizeof(*crew->help), GFP_KERNEL);
	if (!idle || !has || !crew->help)
		goto out_free;
	for_each_online_node(nid)
		idle[nid] = cpus[nid] - crew->per_node[nid];
	crew->nr_help = mpp_crew_helpers(&topo, req->call.max_workers, total,
					 demand, idle, has, crew->help,
					 nr_cpu_ids);
	crew->sized += crew->nr_help;
out_free:
	kfree(has);
	kfree(idle);
	kfree(demand);
	kfree(cpus);
	return crew->sized;
}

/*
 * Make thread @t worker @w for node @nid: the caller's, to run on the CPUs
 * of node @on that the caller may use. Not yet running.
 */
static void mpp_worker_init(struct mpp_request *req, struct mpp_worker *w,
			    struct mpp_thread *t, int nid, int on)
{
	struct mpp_outcome *out = &req->out;

	w->req = req;
	w->thread = t;
	w->node = nid;
	w->away = on != nid;
	w->node_pages = NULL;
	/* Node counts: the caller's row first, then one per worker */
	if (out->node_pages)
		w->node_pages = out->node_pages +
				(w - req->crew.workers + 1) * out->nr_stat_nodes;
	/* The worker moves to its CPUs itself */
	cpumask_and(w->cpus, current->cpus_ptr, cpumask_of_node(on));
}

/**
 * struct mpp_crew_pool - where a crew finds its threads
 * @pools: the file's pools
 * @pool: the caller's process's pool there
 */
struct mpp_crew_pool {
	struct mpp_pools *pools;
	struct mpp_pool *pool;
};

/*
 * A thread for node @nid: one of the caller's that stayed (*@reused), of
 * that node or else of any (a thread moves to its node's CPUs when it
 * begins), or a new one where the caller still has room for one.
 */
static struct mpp_thread *mpp_worker_thread(struct mpp_request *req,
					    struct mpp_crew_pool *cp, int nid,
					    unsigned int index, bool *reused)
{
	struct mpp_thread *t;

	*reused = true;
	t = mpp_pool_take(cp->pools, cp->pool, nid, false, &req->place);
	if (!t)
		t = mpp_pool_take(cp->pools, cp->pool, nid, true, &req->place);
	if (t)
		return t;
	*reused = false;
	return mpp_thread_create(cp->pools, cp->pool, nid, index, &req->place);
}

/*
 * Add the next worker of @req: for the pages of node @nid, running on the
 * CPUs of node @on, in a thread of @on (@index names it). A worker that
 * cannot be had is one fewer, no more: returns whether it was.
 */
static bool mpp_worker_add(struct mpp_request *req, struct mpp_crew_pool *cp,
			   int nid, int on, unsigned int index)
{
	struct mpp_crew *crew = &req->crew;
	struct mpp_worker *w = &crew->workers[crew->nr_workers];
	struct mpp_thread *t;
	bool reused;

	if (crew->nr_workers == crew->sized)
		return false;
	t = mpp_worker_thread(req, cp, on, index, &reused);
	if (!t)
		return false;
	mpp_worker_init(req, w, t, nid, on);
	mpp_stats_workers(!reused, reused);
	crew->nr_workers++;
	return true;
}

/*
 * Find the workers mpp_crew_size() wanted, round robin over the nodes, so
 * that a cut leaves each node some, then the helpers; count per node whose
 * pages those that were found serve in @served.
 */
static void mpp_crew_find(struct mpp_request *req, struct mpp_crew_pool *cp,
			  unsigned int *served)
{
	struct mpp_crew *crew = &req->crew;
	unsigned int round, i;
	bool more = true;
	int nid;

	for (round = 0; more; round++) {
		more = false;
		for_each_online_node(nid) {
			if (round >= crew->per_node[nid])
				continue;
			more = true;
			if (mpp_worker_add(req, cp, nid, nid, round))
				served[nid]++;
		}
	}
	for (i = 0; i < crew->nr_help; i++) {
		const struct mpp_crew_helper *h = &crew->help[i];

		if (mpp_worker_add(req, cp, h->serves, h->on,
				   crew->per_node[h->on] + i))
			served[h->serves]++;
	}
}

/* Does a worker of @crew run on @nid's CPUs for @nid's pages? */
static bool mpp_crew_home(const struct mpp_crew *crew, int nid)
{
	unsigned int i;

	for (i = 0; i < crew->nr_workers; i++)
		if (crew->workers[i].node == nid && !crew->workers[i].away)
			return true;
	return false;
}

/**
 * mpp_crew_start() - find the request's workers and let them go
 * @req: the sized request, in the caller's context, its outcome ready for
 *	the workers' node counts
 * @pools: the pools of the caller's file
 *
 * Threads that stayed from the process's earlier calls on the file are
 * used first, then new ones, as many as it has CPUs (pool.c). The ranges of nodes whose workers
 * could not be had are served by the nearest node that has some; with no
 * worker at all, the plan is left to the caller.
 *
 * Return: 0, or -ENOMEM when the crew's own bookkeeping could not be
 * allocated.
 */
int mpp_crew_start(struct mpp_request *req, struct mpp_pools *pools)
{
	struct mpp_crew_pool cp = { .pools = pools };
	struct mpp_crew *crew = &req->crew;
	struct mpp_crew_topo topo;
	unsigned int *served, i;
	int ret = -ENOMEM;

	if (!crew->sized) {
		mpp_plan_caller_only(&req->plan);
		return 0;
	}
	served = kcalloc(nr_node_ids, sizeof(*served), GFP_KERNEL);
	crew->workers = kvcalloc(crew->sized, sizeof(*crew->workers),
				 GFP_KERNEL_ACCOUNT);
	if (!served || !crew->workers)
		goto out_free;
	for (i = 0; i < crew->sized; i++)
		if (!zalloc_cpumask_var(&crew->workers[i].cpus, GFP_KERNEL))
			goto out_free;

	cp.pool = mpp_pool_get(pools);
	if (cp.pool) {
		mpp_crew_find(req, &cp, served);
		mpp_pool_put(pools, cp.pool);
	}

	if (!crew->nr_workers) {
		mpp_plan_caller_only(&req->plan);
	} else {
		mpp_topo_init(&topo);
		mpp_plan_serve(&req->plan, &topo, served, NULL);
		mpp_plan_by_cpu(&req->plan, req->place.caller_node,
				mpp_crew_home(crew, req->place.caller_node));
	}
	atomic_set(&crew->active, crew->nr_workers);
	for (i = 0; i < crew->nr_workers; i++) {
		kref_get(&req->ref);
		mpp_thread_start(crew->workers[i].thread, &mpp_worker_ops,
				 &crew->workers[i]);
	}
	ret = 0;
out_free:
	kfree(served);
	return ret;
}
