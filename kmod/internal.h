/* SPDX-License-Identifier: GPL-2.0 */
/*
 * memprepop: the module's internal interfaces, not an ABI. The floors, each
 * calling only those below it:
 *
 *   main.c      the device and its ioctls
 *   populate.c  one populate call, start to end, and the caller's share
 *   workers.c   the per-node workers of a call
 *   pool.c      the threads of a process, bounded and kept; their work in
 *               steps
 *   kthread.c   workers as kernel threads, or
 *   vtask.c     workers as user worker threads of the caller (vhost_task):
 *               one of the two is built in (Kbuild)
 *   policy.c    the plan: which node each part of the range goes to
 *   fault.c     faulting a chunk in, as madvise_populate() does
 *   request.c   the request's bookkeeping: chunks, failures, progress
 *
 * and beside them identity.c (a worker becomes the caller) and stats.c.
 */
#ifndef _MEMPREPOP_INTERNAL_H
#define _MEMPREPOP_INTERNAL_H

#include <linux/kref.h>
#include <linux/list.h>
#include <linux/mempolicy.h>
#include <linux/memprepop.h>
#include <linux/nodemask.h>
#include <linux/spinlock.h>
#include <linux/types.h>
#include <linux/wait.h>
#include <linux/compiler_types.h>
#include <uapi/linux/sched/types.h>

struct cred;
struct eventfd_ctx;
struct mpp_pool;
struct mpp_task;
struct mpp_thread;
struct mem_cgroup;
struct mm_struct;
struct task_struct;
struct vm_area_struct;

/* Flags the module accepts in struct memprepop_populate.flags. */
#define MEMPREPOP_F_SUPPORTED	(MEMPREPOP_F_REQUIRE_MLOCKED | \
				 MEMPREPOP_F_BORROW_CPUS | \
				 MEMPREPOP_F_BACKGROUND | MEMPREPOP_F_EVENTFD)

/* Most ranges in one call: their state is 64 bytes each, charged */
#define MPP_MAX_RANGES		65536

/* The unit of work handed to a worker; also the kill latency bound. */
#define MPP_CHUNK_SIZE		(16UL << 20)
/* No worker is started for less than this much of a node's memory. */
#define MPP_MIN_PER_WORKER	(8UL << 20)
/* Pages per get_user_pages_remote() call: how often a worker looks up. */
#define MPP_GUP_BATCH		512UL
/* How often the caller tells @control its progress and reads @cancel */
#define MPP_SYNC_MS		100

/**
 * struct mpp_identity - what makes a worker's faults the caller's own
 * @task: the thread that called, whose credentials and cgroups workers
 *	follow between chunks (mpp_identity_follow())
 * @cred: the caller's credentials when it called, for capable() and fsuid
 *	checks
 * @memcg: the memory cgroup charged for page cache and kernel memory
 * @sched: the caller's scheduling policy, priority, nice and clamps
 * @ioprio: the caller's I/O priority, IOPRIO_DEFAULT when it set none
 * @make_it_fail: the caller's fault-injection filter
 * @pkru: the caller's protection-key rights (x86), checked on every
 *	mapping a worker faults, as the caller's own fault would
 */
struct mpp_identity {
	struct task_struct *task;
	const struct cred *cred;
	struct mem_cgroup *memcg;
	struct sched_attr sched;
	int ioprio;
	int make_it_fail;
	u32 pkru;
};

/**
 * struct mpp_identity_saved - a worker's own identity while it is the caller
 * @cred: its own credentials
 * @memcg: its own active memory cgroup
 * @followed: the caller's memory cgroup it moved to since, or NULL
 */
struct mpp_identity_saved {
	const struct cred *cred;
	struct mem_cgroup *memcg;
	struct mem_cgroup *followed;
};

/**
 * struct mpp_range - one range of a request, reported as a call of its own
 * @start: start of the range
 * @end: end of the range
 * @bad: the range's own -EINVAL (unaligned, wraps): nothing of it is done
 * @stop_at: nothing at or above it is populated any more: the lowest
 *	failure, or the end of what the plan could cover; under
 *	&mpp_request.lock
 * @err: the errno of the failure at @stop_at
 * @hole_at: the first hole the plan stepped over, on kernels whose
 *	madvise() goes on past holes (compat.h); @end when none
 * @first_seg: index of its first segment
 * @nr_segs: its segments
 * @first_chunk: index of its first chunk among all the request's chunks
 * @nr_chunks: its chunks
 */
struct mpp_range {
	unsigned long start;
	unsigned long end;
	int bad;
	unsigned long stop_at;
	int err;
	unsigned long hole_at;
	unsigned int first_seg;
	unsigned int nr_segs;
	unsigned long first_chunk;
	unsigned long nr_chunks;
};

/**
 * struct mpp_segment - a run of a range that one placement rule covers
 * @range: the range it is part of
 * @start: first address, page aligned
 * @end: end address, page aligned
 * @chunk_size: chunks are cut at multiples of it (at least the page size of
 *	the mapping, so a huge page is never split between workers)
 * @first_chunk: index of its first chunk among all the request's chunks
 * @nr_chunks: chunks in the segment
 * @next_chunk: the next of its chunks to hand out
 * @nodes: nodes its pages will be placed on, per its memory policy
 * @served_by: nodes whose workers fault it in
 * @caller_only: faulted in by the calling thread itself (userfaultfd-armed
 *	ranges, whose faults wait for a handler: only the caller is killable)
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
};

/**
 * struct mpp_worker - one thread working for a request
 * @req: the request
 * @thread: the thread
 * @saved: its own identity while it is the caller's
 * @node: the node whose pages it faults: it runs on that node's CPUs, or,
 *	as a helper, on another node's
 * @pol: its own copy of the request's @task_pol, its task policy
 * @own_pol: its thread's own task policy while @pol is installed
 * @next_seg: first segment that may still have work for it
 * @node_pages: pages it found per node, its row of &mpp_request.node_pages;
 *	NULL without statistics
 * @working: its thread still works for the request, so mpp_kill() may
 *	signal it; under &mpp_request.lock
 */
struct mpp_worker {
	struct mpp_request *req;
	struct mpp_thread *thread;
	struct mpp_identity_saved saved;
	bool working;
	int node;
	struct mempolicy *pol;
	struct mempolicy *own_pol;
	unsigned int next_seg;
	u64 *node_pages;
};

/**
 * struct mpp_chunk - a piece of a segment, claimed by one thread
 * @seg: its segment
 * @index: its index among all chunks of the request
 * @start: first address
 * @end: end address
 */
struct mpp_chunk {
	struct mpp_segment *seg;
	unsigned long index;
	unsigned long start;
	unsigned long end;
};

/**
 * struct mpp_handoff - the rest of a chunk a worker leaves to the caller
 * @node: in &mpp_request.handoffs
 * @chunk: what is left of the chunk
 */
struct mpp_handoff {
	struct list_head node;
	struct mpp_chunk chunk;
};

/**
 * struct mpp_request - one MEMPREPOP_IOC_POPULATE call
 * @ref: held by the caller (or the file, in the background) and by each
 *	worker
 * @mm: the caller's mm; the request holds it with mmgrab() only, and each
 *	thread takes a user reference for as long as it faults, so that the
 *	process exiting ends the request rather than keeping its memory
 * @id: the caller's identity, which its workers take on
 * @args: the call's structure, as the module knows it; outputs go there
 * @uargs: where the caller has it
 * @usize: its size there
 * @t0: when the call started, ktime_get_ns()
 * @flags: %MEMPREPOP_F_* of the call
 * @ranges: the ranges, @nr_ranges of them: the call's one range when it
 *	gave none
 * @caller_node: the node the caller ran on when it called
 * @task_pol: the memory policy workers fault with where a range has no VMA
 *	policy: a copy of the caller's task policy, or, when it has none or a
 *	local one, a preferred-node policy for the caller's node, which does
 *	not depend on where the faulting thread runs
 * @segs: the plan, range by range, each in address order
 * @nr_segs: segments in @segs
 * @nr_chunks: chunks in all segments
 * @chunk_done: bit per chunk, set when it was populated completely
 * @lock: protects the ranges' @stop_at and @err, @partial, @handoffs,
 *	@poll_wq and the workers' @working
 * @killed: a fatal signal reached the caller, it was cancelled, its file
 *	was released or its process is gone; everyone stops
 * @abort_err: why the call was stopped other than by a failure in a range:
 *	-ECANCELED through @control, -EFAULT for a bad @control
 * @control: where the caller follows the progress, or NULL
 * @next_sync: jiffies when @control is next synced
 * @bytes_done: bytes populated so far
 * @partial: per chunk that a kill interrupted, where it stopped
 * @nr_partial: entries in @partial
 * @handoffs: chunks workers left to the caller, under @lock
 * @workers: the workers, @nr_workers of them
 * @nr_workers: number of workers
 * @active: workers still running
 * @wq: the caller waits here for the workers and for handoffs
 * @caller_segs: segments only the caller may fault are in the plan
 * @poll_wq: in the background, the file's poll wait queue until the file
 *	reaps or gives up the request (mpp_notify_detach()), told when the
 *	request wants to be reaped; under @lock
 * @eventfd: in the background, the eventfd told the same while @poll_wq
 *	is set, or NULL
 * @nr_stat_nodes: nodes counted in @node_pages, 0 for no statistics
 * @node_pages: pages found per node, a row of @nr_stat_nodes for the caller
 *	then one per worker
 */
struct mpp_request {
	struct kref ref;
	struct mm_struct *mm;
	struct mpp_identity id;
	struct memprepop_populate args;
	void __user *uargs;
	size_t usize;
	u64 t0;
	u64 flags;
	struct mpp_range *ranges;
	unsigned int nr_ranges;
	int caller_node;
	struct mempolicy task_pol;

	struct mpp_segment *segs;
	unsigned int nr_segs;
	unsigned long nr_chunks;
	unsigned long *chunk_done;

	spinlock_t lock;	/* ranges' @stop_at, @err; @partial, ... */
	bool killed;
	int abort_err;
	struct memprepop_control __user *control;
	unsigned long next_sync;
	atomic64_t bytes_done;
	struct {
		unsigned long chunk;
		unsigned long addr;
	} *partial;
	unsigned int nr_partial;
	struct list_head handoffs;

	struct mpp_worker *workers;
	unsigned int nr_workers;
	atomic_t active;
	wait_queue_head_t wq;
	bool caller_segs;
	struct wait_queue_head *poll_wq;
	struct eventfd_ctx *eventfd;

	unsigned int nr_stat_nodes;
	u64 *node_pages;
};

/* populate.c */
struct mpp_request *mpp_populate_start(struct memprepop_populate *args,
				       void __user *uargs, size_t usize,
				       struct wait_queue_head *poll_wq,
				       struct mpp_pool **keep);
int mpp_populate_finish(struct mpp_request *req, bool nowait);
bool mpp_populate_ready(struct mpp_request *req);
bool mpp_populate_orphaned(struct mpp_request *req);

/* workers.c */
int mpp_workers_start(struct mpp_request *req, unsigned int max_workers,
		      struct mpp_pool **keep);

/**
 * struct mpp_work_ops - what a thread does with the work it is given
 * @begin: in the thread, before its first step
 * @step: in the thread, one step (a chunk, say): false when it has no more
 * @end: in the thread, after its last step, or when it is killed between
 *	steps
 * @abandon: in any context, for work that was given but never begun (the
 *	thread's process was killed first)
 */
struct mpp_work_ops {
	void (*begin)(void *arg);
	bool (*step)(void *arg);
	void (*end)(void *arg);
	void (*abandon)(void *arg);
};

/* What the next step of a thread was: mpp_thread_work() */
enum mpp_step {
	MPP_IDLE,
	MPP_WORKED,
	MPP_DONE,
};

/* pool.c */
unsigned int mpp_threads_get(struct mm_struct *mm, unsigned int want);
void mpp_threads_put(struct mm_struct *mm, unsigned int nr);
struct mpp_pool *mpp_pool_keep(struct mpp_pool **keep);
void mpp_pool_release(struct mpp_pool *pool);
unsigned int mpp_pool_idle(struct mpp_pool *pool);
struct mpp_thread *mpp_pool_take(struct mpp_pool *pool, int nid, bool any);
struct mpp_thread *mpp_thread_create(struct mm_struct *mm,
				     struct mpp_pool *pool, int nid,
				     unsigned int index);
void mpp_thread_discard(struct mpp_thread *t);
struct task_struct *mpp_thread_task(struct mpp_thread *t);
void mpp_thread_kill(struct mpp_thread *t);
void mpp_thread_start(struct mpp_thread *t, const struct mpp_work_ops *ops,
		      void *arg);
/* pool.c, for kthread.c and vtask.c */
enum mpp_step mpp_thread_work(struct mpp_thread *t);
bool mpp_thread_orphaned(struct mpp_thread *t);
bool mpp_thread_exit(struct mpp_thread *t);
void mpp_thread_retire(struct mpp_thread *t);
void mpp_thread_killed(struct mpp_thread *t);
void mpp_thread_stop(struct mpp_thread *t);

/*
 * kthread.c or vtask.c: the kind of thread a worker is. Both: create (in
 * the caller's context), wake for work, end a wait of its work that only a
 * fatal signal ends, stop; and what its loop needs.
 */
struct mpp_task *mpp_task_create(struct mpp_thread *t, int nid,
				 unsigned int index);
struct task_struct *mpp_task_struct(struct mpp_task *task);
void mpp_task_wake(struct mpp_task *task);
void mpp_task_kill(struct mpp_task *task);
void mpp_task_work_done(void);
void mpp_task_free(struct mpp_task *task);
void mpp_task_stop(struct mpp_task *task);
void mpp_task_stop_async(struct mpp_task *task);
bool mpp_task_caller_freezing(void);
int mpp_tasks_init(void);
void mpp_tasks_exit(void);

/* policy.c */
int mpp_plan(struct mpp_request *req);
void mpp_policy_init(struct mpp_request *req);
struct mempolicy *mpp_policy_enter(struct mempolicy *pol);
void mpp_policy_leave(struct mempolicy *own);

/* fault.c */
int mpp_check_vma(struct mpp_request *req, struct vm_area_struct *vma);
int mpp_fault_caller(struct mpp_request *req, struct mpp_chunk *chunk,
		     u64 *node_pages, unsigned long *reached);
int mpp_fault_worker(struct mpp_request *req, struct mpp_chunk *chunk,
		     u64 *node_pages, unsigned long *reached, bool *handoff);

/* request.c */
struct mpp_request *mpp_request_alloc(struct mm_struct *mm,
				      unsigned int nr_ranges,
				      unsigned int nr_stat_nodes);
void mpp_request_put(struct mpp_request *req);
void mpp_stop(struct mpp_request *req, struct mpp_range *range,
	      unsigned long addr, int err);
void mpp_cancel(struct mpp_request *req);
void mpp_kill(struct mpp_request *req);
void mpp_notify(struct mpp_request *req);
void mpp_notify_detach(struct mpp_request *req);
bool mpp_claim(struct mpp_request *req, int node, unsigned int *next_seg,
	       struct mpp_chunk *chunk);
void mpp_chunk_finish(struct mpp_request *req, struct mpp_chunk *chunk,
		      unsigned long reached, int err);
void mpp_handoff(struct mpp_request *req, struct mpp_chunk *chunk,
		 unsigned long reached);
bool mpp_take_handoff(struct mpp_request *req, struct mpp_chunk *chunk);
bool mpp_has_handoff(struct mpp_request *req);
void mpp_control_sync(struct mpp_request *req, bool caller);
unsigned long mpp_populated_end(struct mpp_request *req,
				struct mpp_range *range);

/* identity.c */
void mpp_identity_init(struct mpp_identity *id, struct mm_struct *mm);
void mpp_identity_destroy(struct mpp_identity *id);
int mpp_identity_adopt(struct mpp_identity *id, struct task_struct *task);
void mpp_identity_enter(struct mpp_identity *id, struct mm_struct *mm,
			struct mpp_identity_saved *saved);
void mpp_identity_leave(struct mm_struct *mm,
			struct mpp_identity_saved *saved);
int mpp_identity_follow(struct mpp_identity *id, struct mm_struct *mm,
			struct mpp_identity_saved *saved);
void mpp_identity_disown(struct task_struct *task);
bool mpp_identity_disowned(void);
bool mpp_identity_may_write(const struct mpp_identity *id,
			    struct vm_area_struct *vma);

/* stats.c */
struct attribute_group;
extern const struct attribute_group *memprepop_stats_groups[];
void mpp_stats_account(const struct memprepop_populate *args, int ret);
void mpp_stats_workers(unsigned int created, unsigned int reused);

#endif /* _MEMPREPOP_INTERNAL_H */
