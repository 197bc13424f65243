/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libmemprepop internals: one backend per file, dispatched by populate.c.
 * Every internal name is prefixed mpl_, apart from the module's.
 */
#ifndef MEMPREPOP_INTERNAL_H
#define MEMPREPOP_INTERNAL_H

#include <sched.h>
#include <stdbool.h>
#include <stddef.h>
#include <memprepop.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE	23
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
						__reserved)

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

/* device.c: the cached /dev/memprepop descriptor, or -errno */
int mpl_device_fd(void);
int mpl_device_populate(int fd, void *addr, size_t len,
			const struct memprepop_opts *opts,
			struct memprepop_result *res,
			struct mpl_progress *progress);

/* plan.c: where the fallback's threads run and which chunks each takes */
struct mpl_plan {
	char *base;
	size_t len;
	size_t chunk_size;
	size_t nchunks;
	uint64_t *served;	/* per chunk: nodes whose threads take it */
	unsigned int nthreads;
	int *thread_node;	/* per thread: its node, -1 for anywhere */
	cpu_set_t *thread_cpus;	/* per thread: the CPUs it may run on */
};

int mpl_plan_make(struct mpl_plan *plan, char *base, size_t len,
		  unsigned int max_threads);
void mpl_plan_free(struct mpl_plan *plan);
size_t mpl_chunk_start(const struct mpl_plan *plan, size_t index);
size_t mpl_chunk_end(const struct mpl_plan *plan, size_t index);

/* fallback.c: threads issuing MADV_POPULATE_WRITE */
bool mpl_fallback_supported(void);
int mpl_fallback_populate(void *addr, size_t len,
			  const struct memprepop_opts *opts,
			  struct memprepop_result *res,
			  struct mpl_progress *progress);

/* nodes.c: node ids a counter array needs to count every page */
unsigned int mpl_possible_nodes(void);

#endif /* MEMPREPOP_INTERNAL_H */
