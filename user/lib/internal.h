/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libmemprepop internals. The layers, each calling only those below it:
 *
 *   populate.c (one-shot calls: a context on the stack, a request on it)
 *                  |
 *   ctx.c (contexts: every request, checked, run, its outcome written)
 *                  |
 *     module.c (backend) ---- fallback.c (backend), each behind its ops
 *        |                       |     table (struct mpl_backend) with
 *        |                       |     its cancel latch (latch.c), its
 *     batch.c, device.c        job.c, plan.c, pool.c, nodes.c
 *                  \            /
 *         req.c (a request's checks and outcome), progress.c
 *
 * A backend owns its state (an opaque pointer a context keeps) and never
 * calls up. Every internal name is prefixed mpl_, apart from the module's.
 */
#ifndef MEMPREPOP_INTERNAL_H
#define MEMPREPOP_INTERNAL_H

#include <pthread.h>
#include <sched.h>
#include <sys/types.h>
#include <stdbool.h>
#include <stddef.h>
#include <memprepop.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE	23
#endif
/* Policy modes of kernels newer than some numaif.h */
#ifndef MPOL_LOCAL
#define MPOL_LOCAL		4
#endif
#ifndef MPOL_PREFERRED_MANY
#define MPOL_PREFERRED_MANY	5
#endif
#ifndef MPOL_WEIGHTED_INTERLEAVE
#define MPOL_WEIGHTED_INTERLEAVE	6
#endif

#define MPL_OFFSETOFEND(type, member) \
	(offsetof(type, member) + sizeof(((type *)0)->member))

/*
 * The structures of libmemprepop 1.0, their first version: the smallest
 * @size accepted. Fields are only ever added after these.
 */
#define MPL_OPTS_SIZE_VER0	MPL_OFFSETOFEND(struct memprepop_opts, \
						progress_arg)
#define MPL_RESULT_SIZE_VER0	MPL_OFFSETOFEND(struct memprepop_result, \
						flags)

/* The MEMPREPOP_OPT_* flags this library takes */
#define MPL_OPT_FLAGS	(MEMPREPOP_OPT_LOCK | MEMPREPOP_OPT_FALLBACK | \
			 MEMPREPOP_OPT_BORROW_CPUS)

/* progress.c: the caller's progress callback, at most every 100 ms */
struct mpl_progress {
	memprepop_progress_fn fn;
	void *arg;
	uint64_t total;
	uint64_t last_ns;
};

struct timespec;

uint64_t mpl_now_ns(void);
void mpl_progress_deadline(struct timespec *ts);
void mpl_progress_init(struct mpl_progress *p,
		       const struct memprepop_opts *opts, uint64_t total);
bool mpl_progress_report(struct mpl_progress *p, uint64_t done);
void mpl_progress_final(struct mpl_progress *p, uint64_t done);

/*
 * target.c: whose memory a request populates: the calling process
 * (@pidfd -1), or another, through a pidfd
 */
struct bitmask;
struct mpl_vma;

struct mpl_target {
	int pidfd;			/* -1: the calling process */
	pid_t pid;			/* 0: the calling process */
	struct mpl_vma *vmas;		/* another's mappings, by address */
	size_t nr_vmas;
};

#define MPL_TARGET_SELF		((struct mpl_target){ .pidfd = -1 })

int mpl_target_open(struct mpl_target *t, int pidfd);
void mpl_target_close(struct mpl_target *t);
int mpl_target_prepare(struct mpl_target *t);
int mpl_target_populate(const struct mpl_target *t, void *addr, size_t len);
int mpl_target_policy(const struct mpl_target *t, const void *addr,
		      int *mode, struct bitmask *nodes);

/*
 * req.c: a call as the backends take it. The work is the caller's
 * ranges that are to be populated (valid, not empty, locked if asked), in
 * index order, in the module's format: len rounded up to pages, populated
 * and error written by the backend.
 */
struct mpl_req {
	const struct mpl_target *target;	/* whose memory */
	struct memprepop_opts opts;	/* the caller's, copied */
	struct memprepop_range *work;
	unsigned int *index;		/* per work entry: caller's index */
	unsigned int nr;		/* work entries */
	uint64_t total;			/* bytes of the work */
	/* opts.nr_nodes entries each, or NULL: the call's counts, scratch */
	uint64_t *node_pages;
	uint64_t *batch_pages;
};

int mpl_opts_copy(struct memprepop_opts *dst,
		  const struct memprepop_opts *opts);
unsigned int mpl_opts_flags(const struct memprepop_opts *opts);
void mpl_result_copy(struct memprepop_result *res,
		     const struct memprepop_result *ours);
int mpl_req_prepare(struct mpl_req *req, struct mpl_target *target,
		    struct memprepop_range *ranges, unsigned int nr,
		    const struct memprepop_opts *opts);
void mpl_req_lock(struct mpl_req *req, struct memprepop_range *ranges);
uint64_t mpl_req_populated(const struct mpl_req *req);
int mpl_req_finish(struct mpl_req *req, struct memprepop_range *ranges,
		   unsigned int nr, struct memprepop_result *res, int call_err);
void mpl_req_free(struct mpl_req *req);

/* device.c: the cached /dev/memprepop descriptor, or -errno */
int mpl_dev_fd(void);
int mpl_dev_open(void);
int mpl_dev_info(int fd, struct memprepop_info *info);

/*
 * batch.c: a request to the module: its work in batches of what one ioctl takes,
 * one after the other. Everything the module writes to is in here, for a
 * background batch to find it in place when it is reaped.
 */
struct mpl_dev {
	int fd;
	struct mpl_req *req;
	unsigned int batch;		/* ranges one ioctl takes */
	uint64_t borrow;		/* MEMPREPOP_F_BORROW_CPUS, if known */
	unsigned int next;		/* first work entry not yet issued */
	unsigned int cur, cur_n;	/* the batch in flight */
	bool single;			/* sent as @addr, @len: no ranges */
	struct memprepop_populate kreq;
	struct memprepop_control control;
	/* Atomics: bytes of the batches done; why no further batch starts */
	uint64_t base;
	int stop;
	uint32_t workers;
	uint64_t nsecs;
};

void mpl_dev_init(struct mpl_dev *d, int fd, const struct memprepop_info *info,
		  struct mpl_req *req);
int mpl_dev_run(struct mpl_dev *d, struct mpl_progress *progress);
int mpl_dev_start(struct mpl_dev *d);
int mpl_dev_reap(struct mpl_dev *d, bool nohang);
int mpl_dev_outcome(const struct mpl_dev *d);
uint64_t mpl_dev_done(struct mpl_dev *d);
void mpl_dev_cancel(struct mpl_dev *d);

/*
 * plan.c: where the fallback's threads run and which chunks each takes.
 * Chunks are cut range by range, in address order; each names the set of
 * nodes whose threads take it (any libnuma node number).
 */
struct mpl_chunk {
	unsigned int range;	/* work entry */
	unsigned int set;	/* plan->sets[]: whose threads take it */
	size_t start, end;	/* offsets in the range */
};

struct mpl_plan {
	size_t nchunks;
	struct mpl_chunk *chunks;
	size_t *first;		/* per range: 1st chunk; [nr]: nchunks */
	unsigned int nsets;
	struct bitmask **sets;	/* a NULL set: any thread */
	unsigned int nthreads;
	int *thread_node;	/* per thread: its node, -1 for anywhere */
	cpu_set_t *thread_cpus;	/* per thread: the CPUs it may run on */
	cpu_set_t allowed;	/* the caller's CPUs */
	/* The caller's task policy, for threads that did not inherit it */
	int task_mode;		/* -1: none to copy (no NUMA) */
	struct bitmask *task_nodes;
};

int mpl_plan_make(struct mpl_plan *plan, const struct mpl_target *target,
		  const struct memprepop_range *work, unsigned int nr,
		  unsigned int max_threads, bool borrow, bool need_thread,
		  struct mpl_progress *progress);
void mpl_plan_free(struct mpl_plan *plan);
bool mpl_plan_serves(const struct mpl_plan *plan, size_t chunk, int node);

/*
 * pool.c: threads that stay. Each job runs fn(arg, i) on threads [0, n) of
 * a plan, each pinned to its CPUs and given the caller's task policy first;
 * all are created before any job starts.
 */
struct mpl_pool;

int mpl_pool_new(struct mpl_pool **pool, int efd);
void mpl_pool_free(struct mpl_pool *pool);
void mpl_pool_forget(struct mpl_pool *pool);
int mpl_pool_start(struct mpl_pool *pool, const struct mpl_plan *plan,
		   void (*fn)(void *arg, unsigned int thread), void *arg);
bool mpl_pool_done(struct mpl_pool *pool);
void mpl_pool_wait(struct mpl_pool *pool, void (*tick)(void *arg), void *arg);
uint64_t mpl_pool_done_ns(struct mpl_pool *pool);

/* job.c: the fallback's threads issuing MADV_POPULATE_WRITE */
struct mpl_job;

bool mpl_job_supported(void);
int mpl_job_start(struct mpl_job **job, struct mpl_pool *pool,
		  struct mpl_req *req, struct mpl_progress *progress);
int mpl_job_wait(struct mpl_job *job, struct mpl_progress *progress,
		 struct memprepop_result *res);
void mpl_job_cancel(struct mpl_job *job);
bool mpl_job_finished(struct mpl_job *job);
void mpl_job_free(struct mpl_job *job);
uint64_t mpl_job_done(struct mpl_job *job);

/*
 * latch.c: a request's cancel, from the claim on, handed to the running
 * request (@live: the module's batches, the fallback's job) once there is
 * one. Each backend has one, which the context arms, cancels and asks.
 */
struct mpl_latch {
	pthread_mutex_t lock;
	void *live;		/* under lock: the running request, or NULL */
	bool cancelled;		/* under lock: since the request was claimed */
	void (*cancel)(void *live);
	uint64_t (*done)(void *live);
};

void mpl_latch_init(struct mpl_latch *l, void (*cancel)(void *live),
		    uint64_t (*done)(void *live));
void mpl_latch_fini(struct mpl_latch *l);
void mpl_latch_arm(struct mpl_latch *l);
void mpl_latch_cancel(struct mpl_latch *l);
void mpl_latch_set(struct mpl_latch *l, void *live);
void *mpl_latch_live(struct mpl_latch *l);
uint64_t mpl_latch_done(struct mpl_latch *l);

/*
 * A backend's ops (module.c, fallback.c): its state @be, made and undone,
 * and a request run, started, reaped; its latch cancels and follows it.
 * ctx.c calls them; nothing else branches on the backend.
 */
struct mpl_backend {
	int id;			/* MEMPREPOP_BACKEND_* */
	/*
	 * Its state, in *@be, and its latch: 0, or -errno (the next backend
	 * is tried)
	 */
	int (*init)(void **be, struct mpl_latch **latch, bool oneshot);
	/* Frees it; @forked: in a child, for a context of its parent */
	void (*fini)(void *be, bool forked);
	/* Can it do a request with work: 0, or -EOPNOTSUPP */
	int (*supported)(void *be);
	/* @req, to the end: the call's error */
	int (*run)(void *be, struct mpl_req *req, struct mpl_progress *progress,
		   struct memprepop_result *res);
	/* @req in the background: 0, or -errno with nothing started */
	int (*start)(void *be, struct mpl_req *req);
	/*
	 * Reaps it: 0 with *@outcome the call's error, or -errno when it was
	 * not (-EAGAIN with @nohang while it runs, -EINTR)
	 */
	int (*reap)(void *be, bool nohang, struct memprepop_result *res,
		    int *outcome);
	/* Waits for a background request nobody will reap, drops it */
	void (*drop)(void *be);
	/* What poll() says is done */
	int (*poll_fd)(void *be);
};

extern const struct mpl_backend mpl_module_backend;
extern const struct mpl_backend mpl_fallback_backend;
extern const struct mpl_backend mpl_remote_backend;

/*
 * ctx.c: a context, which every request goes through; a one-shot call is
 * one on the stack (populate.c), with the cached descriptor or threads of
 * its own.
 */
enum mpl_ctx_state {
	MPL_CTX_IDLE,		/* takes a request */
	MPL_CTX_SYNC,		/* a synchronous request runs */
	MPL_CTX_BACKGROUND,	/* started, not reaped */
};

struct memprepop_ctx {
	pid_t pid;		/* the process that made it */
	const volatile char *mark;	/* non-zero until fork(), or NULL */
	bool oneshot;		/* on the stack of one call */
	const struct mpl_backend *ops;
	void *be;		/* the backend's own state */
	struct mpl_latch *latch;	/* its latch, in it */

	pthread_mutex_t lock;
	enum mpl_ctx_state state;	/* under lock */
	bool prepared;		/* under lock: @req is ready */

	struct mpl_target target;	/* whose memory its requests populate */

	/* The request */
	struct memprepop_range *ranges;	/* the caller's */
	unsigned int nr;
	struct mpl_req req;
};

int mpl_ctx_init(struct memprepop_ctx *ctx, unsigned int flags,
		 bool oneshot);
void mpl_ctx_fini(struct memprepop_ctx *ctx);

/* nodes.c: node ids a counter array needs to count every page */
unsigned int mpl_possible_nodes(void);
/* memprepop_node_pages() of process @pid's memory, 0 for ours */
int mpl_node_pages(pid_t pid, const void *addr, size_t len, uint64_t *counts,
		   unsigned int nr_nodes);

#endif /* MEMPREPOP_INTERNAL_H */
