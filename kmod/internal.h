/* SPDX-License-Identifier: GPL-2.0 */
/*
 * memprepop: the module's internal interfaces, not an ABI. The floors, each
 * calling only those below it:
 *
 *   main.c      the device, its files and ioctls
 *   populate.c  the job: a request's life, its start, the caller's share,
 *               its end
 *   alone.c     a call too small for a worker, done by its caller without
 *               a request
 *   workers.c   the crew: how many workers on which node, found, started,
 *               killed, and telling whoever waits for them
 *   pool.c      the threads of a process, bounded and kept; their work in
 *               steps
 *   vtask.c     a worker's thread: a user worker thread of the caller
 *               (vhost_task)
 *   fault.c     faulting a chunk in, as madvise_populate() does, as the
 *               caller or as a worker
 *   outcome.c   how far each range got: done chunks, failures, kills,
 *               progress
 *   plan.c      the ranges cut into segments and chunks, which nodes' workers
 *               serve each, claiming and handing back chunks
 *   policy.c    placement: the nodes the caller's faults put a page on
 *   uapi.c      every copy from and to user space of the ioctls, for
 *               main.c (a call's input and outputs), outcome.c (progress
 *               while it runs) and populate.c (a request frees the ranges
 *               the edge read); it calls nothing of the module
 *
 * and beside them identity.c (a worker becomes the caller), stats.c, and
 * ../common/crew.h, the arithmetic of how many threads on which node, which
 * the library's fallback shares.
 */
#ifndef _MEMPREPOP_INTERNAL_H
#define _MEMPREPOP_INTERNAL_H

/* Workers are vhost_tasks (vtask.c): without them, no module */
#include "probes.h"
#ifndef MPP_HAVE_VHOST_TASK
#ifdef MPP_HAVE_VHOST_TASK_CONFIG
#error "vhost_task_create() is not 6.11's: memprepop needs 6.11's vhost_task"
#else
/* libmemprepop populates without the module there */
#error "no vhost_task (Linux 6.11 and later, CONFIG_VHOST_TASK)"
#endif
#endif

#include <linux/kref.h>
#include <linux/list.h>
#include <linux/memprepop.h>
#include <linux/nodemask.h>
#include <linux/spinlock.h>
#include <linux/types.h>
#include <linux/wait.h>
#include <linux/compiler_types.h>
#include <uapi/linux/sched/types.h>

#include "crew.h"

struct cred;
struct eventfd_ctx;
struct mpp_pool;
struct mpp_pools;
struct mpp_task;
struct mpp_thread;
struct mm_struct;
struct task_struct;
struct vm_area_struct;

/* Flags the module accepts in struct memprepop_populate.flags. */
#define MEMPREPOP_F_SUPPORTED	(MEMPREPOP_F_REQUIRE_MLOCKED | \
				 MEMPREPOP_F_BORROW_CPUS | \
				 MEMPREPOP_F_BACKGROUND | MEMPREPOP_F_EVENTFD)

/* Most ranges in one call: their state is 64 bytes each, charged */
#define MPP_MAX_RANGES		65536

/* Chunks a call is cut into at least, down to a PMD each (plan.c) */
#define MPP_PLAN_CHUNKS		8

/* Pages per get_user_pages_remote() call: how often a worker looks up. */
#define MPP_GUP_BATCH		512UL
/* How often the caller tells @control its progress and reads @cancel */
#define MPP_SYNC_MS		100
/* How long a process waits for a stopped thread to leave its thread list */
#define MPP_UNLIST_MS		1000

/**
 * struct mpp_identity - what makes a worker's faults the caller's own
 * @task: the thread that called, whose credentials workers follow
 *	between chunks (mpp_identity_follow())
 * @cred: the caller's credentials when it called, for capable() and fsuid
 *	checks
 * @sched: the caller's scheduling policy, priority, nice and clamps
 * @ioprio: the caller's I/O priority, IOPRIO_DEFAULT when it set none
 * @make_it_fail: the caller's fault-injection filter
 * @pkru: the caller's protection-key rights (x86), checked on every
 *	mapping a worker faults, as the caller's own fault would
 */
struct mpp_identity {
	struct task_struct *task;
	const struct cred *cred;
	struct sched_attr sched;
	int ioprio;
	int make_it_fail;
	u32 pkru;
};

/**
 * struct mpp_identity_saved - a worker's own identity while it is the caller
 * @cred: its own credentials
 * @followed: the caller's credentials it moved to since, referenced, or
 *	NULL
 */
struct mpp_identity_saved {
	const struct cred *cred;
	const struct cred *followed;
};

/**
 * struct mpp_call - a populate call as the edge (uapi.c) read it
 * @flags: %MEMPREPOP_F_* of the call
 * @max_workers: most workers to use, 0 for the module's choice
 * @nr_ranges: its ranges: the one range of @addr and @len is one
 * @ranges: the ranges, @nr_ranges of them, allocated and freed by the edge
 *	(mpp_uapi_call_release()); the request for the call takes them over
 * @nr_stat_nodes: nodes to count pages on, 0 for no statistics
 * @eventfd: with %MEMPREPOP_F_EVENTFD, the eventfd descriptor
 * @control: where the caller follows the progress, or NULL
 * @uargs: where the caller has its structure, for the outputs
 * @usize: its size there
 * @uranges: where it has its array of ranges, or NULL for the one range
 * @range_size: the size of each of their entries
 * @unode_pages: where it has its node counts, or NULL
 */
struct mpp_call {
	u64 flags;
	unsigned int max_workers;
	unsigned int nr_ranges;
	struct mpp_range *ranges;
	unsigned int nr_stat_nodes;
	int eventfd;
	struct memprepop_control __user *control;
	void __user *uargs;
	size_t usize;
	u8 __user *uranges;
	u32 range_size;
	u64 __user *unode_pages;
};

/**
 * struct mpp_range - one range of a request, reported as a call of its own
 * @start: start of the range
 * @end: end of the range
 * @bad: the range's own -EINVAL (unaligned, wraps): nothing of it is done
 * @stop_at: nothing at or above it is populated any more: the lowest
 *	failure, or the end of what the plan could cover; under
 *	&mpp_outcome.lock
 * @err: the errno of the failure at @stop_at
 * @first_seg: index of its first segment in the plan
 * @nr_segs: its segments
 * @first_chunk: index of its first chunk among all the plan's chunks
 * @nr_chunks: its chunks
 * @undone: once its threads are done, its first chunk not populated
 *	completely, or ULONG_MAX (outcome.c)
 * @reached: then, populated from its start up to here, raised by the records
 *	of @undone
 * @populated: once the request is over, how far it got
 * @error: once the request is over, 0 or the errno a call of it alone
 *	would have returned
 */
struct mpp_range {
	unsigned long start;
	unsigned long end;
	int bad;
	unsigned long stop_at;
	int err;
	unsigned int first_seg;
	unsigned int nr_segs;
	unsigned long first_chunk;
	unsigned long nr_chunks;
	unsigned long undone;
	unsigned long reached;
	u64 populated;
	int error;
};

/**
 * struct mpp_result - what a call that ran reports, for the edge to write
 * @ranges: its ranges, each with its @populated and @error
 * @nr_ranges: how many
 * @populated: bytes populated over all of them
 * @nsecs: how long the call took
 * @done: bytes populated, as @control is told last
 * @workers: threads that faulted for it, the caller counted when it did
 *	alone
 * @node_pages: pages populated on each node, or NULL
 * @nr_stat_nodes: nodes of @node_pages
 */
struct mpp_result {
	const struct mpp_range *ranges;
	unsigned int nr_ranges;
	u64 populated;
	u64 nsecs;
	u64 done;
	u32 workers;
	const u64 *node_pages;
	unsigned int nr_stat_nodes;
};

/**
 * struct mpp_segment - a run of a range that one placement rule covers
 * @range: the range it is part of
 * @start: first address, page aligned
 * @end: end address, page aligned
 * @chunk_size: chunks are cut at multiples of it (at least the page size of
 *	the mapping, so a huge page is never split between workers); while
 *	planning, that page size
 * @first_chunk: index of its first chunk among all the plan's chunks
 * @nr_chunks: chunks in the segment
 * @next_chunk: the next of its chunks to hand out
 * @nodes: nodes its pages will be placed on, per its memory policy
 * @served_by: nodes whose workers fault it in
 * @caller_only: faulted in by the calling thread itself (userfaultfd-armed
 *	ranges, whose faults wait for a handler: only the caller is killable)
 * @by_cpu: its pages go to the node of the CPU that faults them: only
 *	threads on the caller's node's CPUs fault it
 */
struct mpp_segment {
	struct mpp_range *range;
	unsigned long start;
	unsigned long end;
	unsigned long chunk_size;
	unsigned long first_chunk;
	unsigned long nr_chunks;
	atomic_long_t next_chunk;
	nodemask_t nodes;
	nodemask_t served_by;
	bool caller_only;
	bool by_cpu;
};

/**
 * struct mpp_chunk - a piece of a range, claimed by one thread
 * @range: its range
 * @index: its index among all chunks of the plan
 * @start: first address
 * @end: end address
 */
struct mpp_chunk {
	struct mpp_range *range;
	unsigned long index;
	unsigned long start;
	unsigned long end;
};

/**
 * struct mpp_placement - where the caller's own faults would put pages
 * @caller_node: the node the caller ran on when it called
 * @by_cpu: the caller has no task policy, or a local one: where a range has
 *	no VMA policy, its fault places pages on its CPU's node
 * @mode: the caller's task policy's mode, when not @by_cpu
 * @flags: its mode flags
 * @home_node: its home node, or NUMA_NO_NODE
 * @nodes: its nodes, when not @by_cpu
 *
 * A worker faults with its own task policy, which the kernel copied from
 * the thread that created it: @mode, @flags, @home_node and @nodes say
 * whether that is the calling thread's (mpp_pool_take()).
 */
struct mpp_placement {
	int caller_node;
	bool by_cpu;
	unsigned short mode;
	unsigned short flags;
	int home_node;
	nodemask_t nodes;
};

/**
 * struct mpp_plan - the ranges cut into segments and chunks (plan.c)
 * @segs: the segments, range by range, each range's in address order
 * @nr_segs: segments in @segs
 * @nr_chunks: chunks in all segments
 * @caller_segs: segments only the caller may fault are still unclaimed
 * @lock: protects @handoffs
 * @handoffs: chunks workers left to the caller
 */
struct mpp_plan {
	struct mpp_segment *segs;
	unsigned int nr_segs;
	unsigned long nr_chunks;
	bool caller_segs;
	spinlock_t lock;	/* @handoffs */
	struct list_head handoffs;
};

/**
 * struct mpp_worker - one thread working for a request
 * @req: the request
 * @thread: the thread
 * @saved: its own identity while it is the caller's
 * @entered: it took on the caller's identity, and gives it back at its end
 * @node: the node whose pages it faults: it runs on that node's CPUs, or,
 *	as a helper, on another node's
 * @away: it runs on another node's CPUs than @node's
 * @next_seg: first segment that may still have work for it
 * @node_pages: pages it found per node, its row of &mpp_outcome.node_pages;
 *	NULL without statistics
 * @cpus: the CPUs it runs on, which it moves itself to when it begins
 */
struct mpp_worker {
	struct mpp_request *req;
	struct mpp_thread *thread;
	struct mpp_identity_saved saved;
	bool entered;
	int node;
	bool away;
	unsigned int next_seg;
	u64 *node_pages;
	cpumask_var_t cpus;
};

/**
 * struct mpp_crew - the workers of a request (workers.c)
 * @workers: the workers, @nr_workers of them
 * @nr_workers: workers found
 * @per_node: from sizing to starting, workers wanted per node
 * @help: from sizing to starting, the helpers wanted, @nr_help of them
 * @nr_help: helpers wanted
 * @sized: workers wanted in all: at most this many are found
 * @active: workers still running
 * @wq: the caller waits here for the workers and for handoffs
 * @lock: protects @poll_wq and @caller_away, and orders a kill before the
 *	workers' writes of @control (mpp_kill())
 * @poll_wq: in the background, the file's poll wait queue until the file
 *	reaps or gives up the request (mpp_notify_detach()), told when the
 *	request wants to be reaped
 * @eventfd: in the background, the eventfd told the same while @poll_wq
 *	is set, or NULL
 * @caller_away: a synchronous call's thread left it for a signal: no
 *	worker writes @control until it is back (mpp_crew_caller_away())
 */
struct mpp_crew {
	struct mpp_worker *workers;
	unsigned int nr_workers;
	unsigned int *per_node;
	struct mpp_crew_helper *help;
	unsigned int nr_help;
	unsigned int sized;
	atomic_t active;
	wait_queue_head_t wq;
	spinlock_t lock;	/* @poll_wq, @caller_away; a kill against @control */
	struct wait_queue_head *poll_wq;
	struct eventfd_ctx *eventfd;
	bool caller_away;
};

/**
 * struct mpp_partial - where a kill stopped a thread inside a chunk
 * @range: the chunk's range
 * @chunk: the chunk's index
 * @addr: populated from its start up to here
 */
struct mpp_partial {
	struct mpp_range *range;
	unsigned long chunk;
	unsigned long addr;
};

/**
 * struct mpp_outcome - how far a request got (outcome.c)
 * @lock: protects the ranges' @stop_at and @err, and @partial
 * @abort_err: why the call was stopped other than by a failure in a range:
 *	-ECANCELED through @control or by a close of its process while a
 *	thread of it reaped it (main.c), -EFAULT for a bad @control
 * @bytes_done: bytes populated so far
 * @partial: per chunk that a kill interrupted, where it stopped: one per
 *	thread at most, @max_partial
 * @nr_partial: entries in @partial
 * @max_partial: room in @partial: the caller and its workers
 * @nr_stat_nodes: nodes counted in @node_pages, 0 for no statistics
 * @node_pages: pages found per node, a row of @nr_stat_nodes per thread,
 *	the caller's first; once the request is over, the first row is the sum
 * @chunk_done: bit per chunk of the plan, set when it was populated
 *	completely
 * @populated: once the request is over, what all its ranges populated
 */
struct mpp_outcome {
	spinlock_t lock;	/* ranges' @stop_at, @err; @partial */
	int abort_err;
	atomic64_t bytes_done;
	struct mpp_partial *partial;
	unsigned int nr_partial;
	unsigned int max_partial;
	unsigned int nr_stat_nodes;
	u64 *node_pages;
	unsigned long *chunk_done;
	u64 populated;
};

/**
 * struct mpp_fault_ctx - what a thread faulting a chunk uses of its call
 * @mm: the caller's mm
 * @id: the caller's rights, which each mapping is checked against
 * @flags: the call's %MEMPREPOP_F_* flags
 * @killed: set when every thread is to stop (mpp_cancel())
 * @bytes_done: bytes populated by all the call's threads
 * @nr_nodes: nodes a thread counts pages of, 0 for none
 *
 * Set once, before any thread faults, and then only read: fault.c sees
 * this and the chunk, never the request.
 */
struct mpp_fault_ctx {
	struct mm_struct *mm;
	const struct mpp_identity *id;
	u32 flags;
	const bool *killed;
	atomic64_t *bytes_done;
	unsigned int nr_nodes;
};

/**
 * struct mpp_request - one MEMPREPOP_IOC_POPULATE call: the job descriptor
 * @ref: held by the caller (or the file, in the background) and by each
 *	worker
 * @mm: the caller's mm; the request holds it with mmgrab() only, and each
 *	thread takes a user reference for as long as it faults, so that the
 *	process exiting ends the request rather than keeping its memory
 * @tgid: the caller's process, referenced: the one that closing a
 *	descriptor of the file cancels the request
 * @id: the caller's identity, which its workers take on
 * @call: the call, as the edge read it, with its ranges
 * @t0: when the call started, ktime_get_ns()
 * @nsecs: once it is over, how long it took
 * @place: where the caller's faults would put pages (policy.c)
 * @plan: what is to be faulted, in chunks (plan.c)
 * @crew: who faults it (workers.c)
 * @out: how far it got (outcome.c)
 * @fault: what its threads fault with (fault.c)
 * @killed: a fatal signal reached the caller, it was cancelled, its file
 *	was released or its process is gone; everyone stops
 * @next_sync: jiffies when @control is next synced
 */
struct mpp_request {
	struct kref ref;
	struct mm_struct *mm;
	struct pid *tgid;
	struct mpp_identity id;
	struct mpp_call call;
	u64 t0;
	u64 nsecs;
	struct mpp_placement place;
	struct mpp_plan plan;
	struct mpp_crew crew;
	struct mpp_outcome out;
	struct mpp_fault_ctx fault;
	bool killed;
	unsigned long next_sync;
};

/**
 * struct mpp_alone - a call its caller does alone (alone.c), on its stack
 * @id: the caller's identity, which each mapping is checked against
 * @fault: what the caller faults with
 * @killed: cancelled, or @control failed: nothing more is faulted
 * @abort_err: then -ECANCELED or -EFAULT
 * @bytes_done: bytes populated so far
 * @node_pages: pages counted per node, or NULL for no statistics
 * @control: where the caller follows the progress, or NULL
 * @t0: when the call started, ktime_get_ns()
 * @next_sync: jiffies when the caller next pauses
 */
struct mpp_alone {
	struct mpp_identity id;
	struct mpp_fault_ctx fault;
	bool killed;
	int abort_err;
	atomic64_t bytes_done;
	u64 *node_pages;
	struct memprepop_control __user *control;
	u64 t0;
	unsigned long next_sync;
};

/* uapi.c: every copy from and to user space of the ioctls */
int mpp_uapi_info_put(void __user *uarg, size_t usize);
int mpp_uapi_call_get(struct mpp_call *call, void __user *uarg, size_t usize);
void mpp_uapi_call_release(struct mpp_call *call);
bool mpp_uapi_call_same(const struct mpp_call *a, const struct mpp_call *b);
int mpp_uapi_populate_put(const struct mpp_call *call,
			  const struct mpp_result *res, int ret);
int mpp_uapi_wait_get(void __user *uarg, size_t usize,
		      struct memprepop_wait *args);
int mpp_uapi_wait_put(void __user *uarg, size_t usize,
		      const struct memprepop_wait *args);
int mpp_uapi_control_sync(struct memprepop_control __user *control, u64 done,
			  u32 *cancel);

/* populate.c */
void mpp_request_release(struct kref *ref);
struct mpp_request *mpp_populate(struct mpp_call *call, struct mpp_pools *pools,
				 int *ret);
struct mpp_request *mpp_populate_start(struct mpp_call *call,
				       struct wait_queue_head *poll_wq,
				       struct mpp_pools *pools);
int mpp_populate_finish(struct mpp_request *req, bool nowait);
bool mpp_populate_ready(struct mpp_request *req);
bool mpp_populate_orphaned(struct mpp_request *req);
bool mpp_populate_resumable(struct mpp_request *req);
int mpp_populate_abandon(struct mpp_request *req);
const struct mpp_result *mpp_populate_result(const struct mpp_request *req,
					     struct mpp_result *res);

/* alone.c */
bool mpp_call_alone(const struct mpp_call *call);
int mpp_alone_init(struct mpp_alone *a, const struct mpp_call *call);
int mpp_alone_run(struct mpp_alone *a, struct mpp_call *call,
		  struct mpp_result *res);
void mpp_alone_destroy(struct mpp_alone *a);

/* A reference of the caller, the file or a worker is let go */
static inline void mpp_request_put(struct mpp_request *req)
{
	kref_put(&req->ref, mpp_request_release);
}

/* The request is over for everyone at their next batch; nobody is woken */
static inline void mpp_cancel(struct mpp_request *req)
{
	WRITE_ONCE(req->killed, true);
}

/* workers.c */
int mpp_crew_init(struct mpp_crew *crew, const struct mpp_call *call,
		  struct wait_queue_head *poll_wq);
void mpp_crew_destroy(struct mpp_crew *crew);
unsigned int mpp_crew_size(struct mpp_request *req);
int mpp_crew_start(struct mpp_request *req, struct mpp_pools *pools);
void mpp_kill(struct mpp_request *req);
void mpp_abort(struct mpp_request *req, int err);
void mpp_notify(struct mpp_request *req);
void mpp_notify_detach(struct mpp_request *req);
void mpp_crew_caller_away(struct mpp_request *req, bool away);
bool mpp_crew_done(struct mpp_request *req);

/**
 * struct mpp_work_ops - what a thread does with the work it is given
 * @begin: in the thread, before its first step
 * @step: in the thread, one step (a chunk, say): false when it has no more
 * @end: in the thread, after its last step, or when it is killed between
 *	steps, if @begin was called: undo @begin
 * @done: once for each work given, after @end or, for work never begun (the
 *	thread's process was killed first), instead of it, once the thread is
 *	off the work: idle again, given other work or stopping, so that whoever
 *	waits for the work finds the thread where it goes next. In any context;
 *	it must not touch the thread.
 */
struct mpp_work_ops {
	void (*begin)(void *arg);
	bool (*step)(void *arg);
	void (*end)(void *arg);
	void (*done)(void *arg);
};

/**
 * struct mpp_pools - the worker threads of an open file, a pool for each
 *	process that populated through it (pool.c)
 * @lock: protects the pools and their threads' states
 * @list: the pools
 * @wq: a process stopping its threads waits here for those at work
 * @file: the file, compared only: a process has a pool while it holds it
 */
struct mpp_pools {
	spinlock_t lock;	/* the pools, their threads' states */
	struct list_head list;
	wait_queue_head_t wq;
	const struct file *file;
};

/* main.c */
bool mpp_file_held(const struct file *file);

/* pool.c */
void mpp_pools_init(struct mpp_pools *pools, const struct file *file);
void mpp_pools_flush(struct mpp_pools *pools);
void mpp_pools_release(struct mpp_pools *pools);
void mpp_pools_trim(struct mpp_pools *pools);
struct mpp_pool *mpp_pool_get(struct mpp_pools *pools);
void mpp_pool_put(struct mpp_pools *pools, struct mpp_pool *pool);
struct mpp_thread *mpp_pool_take(struct mpp_pools *pools,
				 struct mpp_pool *pool, int nid, bool any,
				 const struct mpp_placement *place);
struct mpp_thread *mpp_thread_create(struct mpp_pools *pools,
				     struct mpp_pool *pool, int nid,
				     unsigned int index,
				     const struct mpp_placement *place);
void mpp_thread_start(struct mpp_thread *t, const struct mpp_work_ops *ops,
		      void *arg);

/* vtask.c: a worker's thread, as vhost's: created, woken, stopped */
struct mpp_task *mpp_vtask_create(bool (*fn)(void *arg),
				  void (*killed)(void *arg), void *arg, int nid,
				  unsigned int index);
void mpp_vtask_wake(struct mpp_task *vt);
void mpp_vtask_stop(struct mpp_task *vt);

/* plan.c */
int mpp_plan_make(struct mpp_request *req);
void mpp_plan_destroy(struct mpp_plan *plan);
void mpp_plan_serve(struct mpp_plan *plan, const struct mpp_crew_topo *topo,
		    const unsigned int *count, unsigned long long *demand);
void mpp_plan_caller_only(struct mpp_plan *plan);
bool mpp_plan_claim(struct mpp_request *req, int node, bool away,
		    unsigned int *next_seg, struct mpp_chunk *chunk);
void mpp_plan_by_cpu(struct mpp_plan *plan, int node, bool served);
bool mpp_plan_undone(const struct mpp_plan *plan, const struct mpp_range *range,
		     const unsigned long *done, struct mpp_chunk *chunk);
int mpp_plan_handoff(struct mpp_plan *plan, const struct mpp_chunk *chunk,
		     unsigned long reached);
bool mpp_plan_take_handoff(struct mpp_plan *plan, struct mpp_chunk *chunk);
bool mpp_plan_has_handoff(struct mpp_plan *plan);
void mpp_plan_handed_back(struct mpp_plan *plan);
bool mpp_plan_leave_unclaimed(struct mpp_plan *plan);
int mpp_check_vma(const struct mpp_identity *id, u32 flags,
		  struct vm_area_struct *vma);

/* policy.c */
void mpp_policy_init(struct mpp_placement *place);
bool mpp_policy_vma_nodes(const struct mpp_placement *place,
			  struct vm_area_struct *vma, nodemask_t *nodes);

/* fault.c */
int mpp_fault_check(const struct mpp_fault_ctx *ctx, unsigned long addr);
int mpp_fault_caller(const struct mpp_fault_ctx *ctx,
		     const struct mpp_chunk *chunk, u64 *node_pages,
		     unsigned long pause_at, unsigned long *reached);
int mpp_fault_worker(const struct mpp_fault_ctx *ctx,
		     const struct mpp_chunk *chunk, u64 *node_pages,
		     unsigned long *reached, bool *handoff);

/* outcome.c */
int mpp_outcome_init(struct mpp_outcome *out, unsigned long nr_chunks,
		     unsigned int nr_threads, unsigned int nr_stat_nodes);
void mpp_outcome_destroy(struct mpp_outcome *out);
void mpp_stop(struct mpp_request *req, struct mpp_range *range,
	      unsigned long addr, int err);
void mpp_chunk_finish(struct mpp_request *req, struct mpp_chunk *chunk,
		      unsigned long reached, int err);
void mpp_control_sync(struct mpp_request *req, bool caller);
void mpp_outcome_raise(struct mpp_range *range, unsigned long index,
		       unsigned long addr);
int mpp_outcome_finish(struct mpp_request *req);

/* identity.c */
void mpp_identity_init(struct mpp_identity *id);
void mpp_identity_destroy(struct mpp_identity *id);
int mpp_identity_enter(struct mpp_identity *id,
		       struct mpp_identity_saved *saved);
void mpp_identity_leave(struct mpp_identity_saved *saved);
void mpp_identity_follow(struct mpp_identity *id,
			 struct mpp_identity_saved *saved);
bool mpp_identity_may_write(const struct mpp_identity *id,
			    struct vm_area_struct *vma);

/* stats.c */
struct attribute_group;
extern const struct attribute_group *memprepop_stats_groups[];
void mpp_stats_account(u64 populated, u64 nsecs, int ret);
void mpp_stats_workers(unsigned int created, unsigned int reused);
void mpp_stats_alone(void);

#endif /* _MEMPREPOP_INTERNAL_H */
