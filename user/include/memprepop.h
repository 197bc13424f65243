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
 *
 * Structures passed in or out carry their size in their first field, set by
 * the caller to sizeof() as its header has it (MEMPREPOP_OPTS_INIT,
 * MEMPREPOP_RESULT_INIT): a library newer than the caller's header reads and
 * writes only that much, an older one refuses a longer structure whose tail
 * it does not know unless that tail is zero (-E2BIG).
 */
#ifndef MEMPREPOP_H
#define MEMPREPOP_H

#include <stddef.h>
#include <stdint.h>
#include <linux/memprepop.h>	/* the module's ABI: struct memprepop_info */
#include <memprepop/version.h>	/* MEMPREPOP_VERSION_*, MEMPREPOP_CHECK_VERSION */

#ifdef __cplusplus
extern "C" {
#endif

enum memprepop_backend {
	MEMPREPOP_BACKEND_MODULE = 1,	/* /dev/memprepop */
	MEMPREPOP_BACKEND_FALLBACK = 2,	/* threads + MADV_POPULATE_WRITE */
};

/* memprepop_opts.flags */
/*
 * Lock the range as mlock2(MLOCK_ONFAULT) does (its RLIMIT_MEMLOCK check,
 * its accounting, its errno), then populate it: every page is locked as it
 * is faulted in, where its policy put it, never locked first and moved later.
 */
#define MEMPREPOP_OPT_LOCK	(1u << 0)
/* Never use the module. */
#define MEMPREPOP_OPT_FALLBACK	(1u << 1)

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
 * struct memprepop_opts - how to populate; a NULL pointer means defaults
 * @size: in, sizeof(struct memprepop_opts)
 * @flags: in, MEMPREPOP_OPT_* flags
 * @max_threads: in, most threads (fallback) or kernel workers (module) to
 *	use; 0 chooses from the allowed CPUs and the size
 * @nr_nodes: in, entries of @node_pages
 * @node_pages: out, or NULL: entry N is set to the base pages of the range
 *	found or placed on node N by this call; pages on nodes from @nr_nodes
 *	up are not counted (numa_num_possible_nodes() entries count them all)
 * @progress: in, called with the progress, may cancel; NULL for none
 * @progress_arg: in, passed to @progress
 */
struct memprepop_opts {
	uint32_t size;
	uint32_t flags;
	uint32_t max_threads;
	uint32_t nr_nodes;
	uint64_t *node_pages;
	memprepop_progress_fn progress;
	void *progress_arg;
};

#define MEMPREPOP_OPTS_INIT	{ .size = sizeof(struct memprepop_opts) }

/**
 * struct memprepop_result - what a populate call did
 * @size: in, sizeof(struct memprepop_result)
 * @backend: out, the enum memprepop_backend that did the work
 * @populated: out, bytes from addr up to the first page not populated on
 *	return
 * @nsecs: out, wall-clock time of the call, in nanoseconds
 * @workers: out, threads or kernel workers that took part
 * @__reserved: out, zero
 */
struct memprepop_result {
	uint32_t size;
	uint32_t backend;
	uint64_t populated;
	uint64_t nsecs;
	uint32_t workers;
	uint32_t __reserved;
};

#define MEMPREPOP_RESULT_INIT	{ .size = sizeof(struct memprepop_result) }

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
 * mlock2() for MEMPREPOP_OPT_LOCK (-EAGAIN, -ENOMEM, -EPERM), -EINVAL for
 * unknown flags, a @size smaller than the first version's or @node_pages
 * and @nr_nodes not both set or both zero, -E2BIG for a longer structure
 * with a non-zero tail this library does not know, -ECANCELED when
 * @opts->progress cancelled, -EOPNOTSUPP when the kernel has neither the
 * module nor MADV_POPULATE_WRITE (before Linux 5.14), -EAGAIN when a thread
 * could not be created, or the -errno of memprepop_node_pages() when the
 * fallback cannot count @node_pages (the range is populated).
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

/**
 * memprepop_backend_name() - a backend's name
 * @backend: an enum memprepop_backend
 *
 * Return: "module", "fallback", or "none" for any other value.
 */
const char *memprepop_backend_name(int backend);

/**
 * memprepop_query() - what the loaded module supports
 * @info: filled from MEMPREPOP_IOC_INFO
 * @size: sizeof(*info) as the caller's header has it
 *
 * Return: 0, -ENODEV when the module is not there, -EINVAL when @size is
 * below MEMPREPOP_INFO_SIZE_VER0, or the ioctl's -errno.
 */
int memprepop_query(struct memprepop_info *info, size_t size);

/**
 * memprepop_node_pages() - count the present pages of a range per node
 * @addr: page-aligned start
 * @len: length in bytes
 * @counts: array of @nr_nodes counters, set to the pages on node N
 * @nr_nodes: size of @counts; pages on higher nodes are not counted
 *
 * Counts every page mapped in the range, wherever it is and whatever NUMA
 * balancing did to its mapping meanwhile: a page that move_pages(2) cannot
 * report (a NUMA hinting fault pending on it) is read once through
 * process_vm_readv(2) and asked again. Pages not mapped are not counted and
 * not faulted in.
 *
 * Return: 0, or -EINVAL for an unaligned @addr or a range that wraps,
 * -ENOMEM, or the -errno of move_pages(2).
 */
int memprepop_node_pages(const void *addr, size_t len, uint64_t *counts,
			 unsigned int nr_nodes);

/**
 * memprepop_version() - the library's version, as it runs
 *
 * Return: "MAJOR.MINOR.PATCH"; MEMPREPOP_VERSION is the one compiled against.
 */
const char *memprepop_version(void);

#ifdef __cplusplus
}
#endif

#endif /* MEMPREPOP_H */
