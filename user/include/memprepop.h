/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libmemprepop: populate (fault in, writable) and optionally lock a range of
 * the calling process's memory as fast as the machine allows, through the
 * memprepop kernel module when it is loaded, and otherwise through threads
 * issuing MADV_POPULATE_WRITE, each on the NUMA node its pages belong to.
 *
 * Every function returns 0 (or a non-negative value) on success and -errno on
 * failure. Nothing prints, nothing exits; the only global state is a cached
 * O_CLOEXEC descriptor of /dev/memprepop.
 */
#ifndef MEMPREPOP_H
#define MEMPREPOP_H

#include <stddef.h>
#include <stdint.h>
#include <linux/memprepop.h>	/* MEMPREPOP_F_* flags, struct memprepop_info */

#ifdef __cplusplus
extern "C" {
#endif

/* Nodes, from node 0, counted in struct memprepop_result.node_pages. */
#define MEMPREPOP_MAX_NODES	64

enum memprepop_backend {
	MEMPREPOP_BACKEND_MODULE = 1,	/* /dev/memprepop */
	MEMPREPOP_BACKEND_FALLBACK = 2,	/* threads + MADV_POPULATE_WRITE */
};

/* memprepop_opts.lib_flags */
#define MEMPREPOP_OPT_FALLBACK	(1u << 0)	/* never use the module */
/*
 * Where the kernel has neither the module nor MADV_POPULATE_WRITE (before
 * Linux 5.14), touch every page instead of failing with -EOPNOTSUPP. Each
 * page is written with an atomic add of zero, so its contents are kept;
 * SIGBUS and SIGSEGV are caught for the duration of the call (the process's
 * handlers for them are replaced meanwhile and restored after, and such
 * calls are serialised) and reported as -EFAULT.
 */
#define MEMPREPOP_OPT_TOUCH	(1u << 1)
/* Touch pages even where MADV_POPULATE_WRITE exists (for testing). */
#define MEMPREPOP_OPT_TOUCH_ALWAYS	(1u << 2)

/**
 * typedef memprepop_progress_fn - called while a populate call runs
 * @done: bytes populated so far
 * @total: bytes to populate
 * @arg: memprepop_opts.progress_arg
 *
 * Called at most about every 100 ms, from the calling thread or, with the
 * module, from a thread of the library, never twice at once; and once at
 * the end, from the calling thread (that return value is ignored).
 *
 * Return: 0 to go on, anything else to cancel: the call then stops within
 * a chunk, and fails with -ECANCELED and an exact populated.
 */
typedef int (*memprepop_progress_fn)(uint64_t done, uint64_t total,
				     void *arg);

/**
 * struct memprepop_opts - how to populate; NULL means all zero
 * @flags: MEMPREPOP_F_LOCK (lock the range as mlock2(MLOCK_ONFAULT) does,
 *	every page locked where its policy put it), MEMPREPOP_F_NODE_STATS
 *	(fill memprepop_result.node_pages)
 * @max_threads: most threads (fallback) or kernel workers (module) to use;
 *	0 chooses from the allowed CPUs and the size
 * @lib_flags: MEMPREPOP_OPT_* flags
 * @progress: called with the progress, may cancel; NULL for none
 * @progress_arg: passed to @progress
 * @reserved: must be zero
 */
struct memprepop_opts {
	uint64_t flags;
	uint32_t max_threads;
	uint32_t lib_flags;
	memprepop_progress_fn progress;
	void *progress_arg;
	uint64_t reserved[4];
};

/**
 * struct memprepop_result - what a populate call did
 * @populated: bytes from addr up to the first page not populated on return
 * @nsecs: wall-clock time of the call, in nanoseconds
 * @backend: the enum memprepop_backend that did the work
 * @workers: threads or kernel workers that took part
 * @node_pages: with MEMPREPOP_F_NODE_STATS, base pages of the range on node
 *	N, for N < MEMPREPOP_MAX_NODES (the module reports the first
 *	MEMPREPOP_STAT_NODES nodes)
 */
struct memprepop_result {
	uint64_t populated;
	uint64_t nsecs;
	uint32_t backend;
	uint32_t workers;
	uint64_t node_pages[MEMPREPOP_MAX_NODES];
};

/**
 * memprepop_populate() - fault in [addr, addr + len) writable, maybe locked
 * @addr: page-aligned start
 * @len: length in bytes (rounded up to pages); 0 does nothing
 * @opts: options, or NULL
 * @res: filled on success and on failure, or NULL
 *
 * Thread-safe; may be called from several threads at once, and after fork().
 *
 * Return: 0, or -errno: the errno madvise(MADV_POPULATE_WRITE) gives for the
 * same range (-EINVAL, -ENOMEM, -EFAULT, -EHWPOISON, -EINTR), the errno of
 * mlock2() for MEMPREPOP_F_LOCK (-EAGAIN, -ENOMEM, -EPERM), -EINVAL for bad
 * options, -ECANCELED when @opts->progress cancelled, -EOPNOTSUPP when the
 * kernel has neither the module nor MADV_POPULATE_WRITE (and
 * MEMPREPOP_OPT_TOUCH is not set), -EAGAIN when a thread could not be
 * created.
 */
int memprepop_populate(void *addr, size_t len,
		       const struct memprepop_opts *opts,
		       struct memprepop_result *res);

/**
 * memprepop_backend() - the backend memprepop_populate() uses by default
 *
 * Return: MEMPREPOP_BACKEND_MODULE when /dev/memprepop opens, else
 * MEMPREPOP_BACKEND_FALLBACK.
 */
int memprepop_backend(void);

/* "module" or "fallback" */
const char *memprepop_backend_name(int backend);

/**
 * memprepop_query() - what the loaded module supports
 * @info: filled from MEMPREPOP_IOC_INFO
 *
 * Return: 0, -ENODEV when the module is not there, or the ioctl's -errno.
 */
int memprepop_query(struct memprepop_info *info);

/**
 * memprepop_node_pages() - count the present pages of a range per node
 * @addr: page-aligned start
 * @len: length in bytes
 * @counts: array of @nr_nodes counters, set to the pages on node N
 * @nr_nodes: size of @counts; pages on higher nodes are not counted
 *
 * Pages that are not present are not counted (move_pages(2) is asked).
 *
 * Return: 0, or -errno of move_pages(2), -EINVAL for an unaligned @addr.
 */
int memprepop_node_pages(const void *addr, size_t len, uint64_t *counts,
			 unsigned int nr_nodes);

/* The library's version, "MAJOR.MINOR.PATCH". */
const char *memprepop_version(void);

#ifdef __cplusplus
}
#endif

#endif /* MEMPREPOP_H */
