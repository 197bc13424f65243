/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libmemprepop internals: one backend per file, dispatched by populate.c. */
#ifndef MEMPREPOP_INTERNAL_H
#define MEMPREPOP_INTERNAL_H

#include <sched.h>
#include <stdbool.h>
#include <memprepop.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE	23
#endif

/* progress.c: the caller's progress callback, at most every 100 ms */
struct mpp_progress {
	memprepop_progress_fn fn;
	void *arg;
	uint64_t total;
	uint64_t last_ns;
};

struct timespec;

uint64_t mpp_now_ns(void);
void mpp_progress_deadline(struct timespec *ts);
void mpp_progress_init(struct mpp_progress *p,
		       const struct memprepop_opts *opts, uint64_t total);
bool mpp_progress_report(struct mpp_progress *p, uint64_t done);
void mpp_progress_final(struct mpp_progress *p, uint64_t done);

/* device.c: the cached /dev/memprepop descriptor, or -errno */
int mpp_device_fd(void);
int mpp_device_populate(int fd, void *addr, size_t len,
			const struct memprepop_opts *opts,
			struct memprepop_result *res,
			struct mpp_progress *progress);

/* plan.c: where the fallback's threads run and which chunks each takes */
struct mpp_plan {
	char *base;
	size_t len;
	size_t chunk_size;
	size_t nchunks;
	uint64_t *served;	/* per chunk: nodes whose threads take it */
	unsigned int nthreads;
	int *thread_node;	/* per thread: its node, -1 for anywhere */
	cpu_set_t *thread_cpus;	/* per thread: the CPUs it may run on */
};

int mpp_plan_make(struct mpp_plan *plan, char *base, size_t len,
		  unsigned int max_threads);
void mpp_plan_free(struct mpp_plan *plan);
size_t mpp_chunk_start(const struct mpp_plan *plan, size_t index);
size_t mpp_chunk_end(const struct mpp_plan *plan, size_t index);

/* fallback.c: threads issuing MADV_POPULATE_WRITE */
int mpp_fallback_populate(void *addr, size_t len,
			  const struct memprepop_opts *opts,
			  struct memprepop_result *res,
			  struct mpp_progress *progress);

/* touch.c: touching every page, for kernels without MADV_POPULATE_WRITE */
int mpp_touch_range(char *p, size_t len, size_t *done);

#endif /* MEMPREPOP_INTERNAL_H */
