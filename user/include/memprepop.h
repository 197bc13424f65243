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
#include <sys/types.h>	/* ssize_t */
#include <linux/memprepop.h>	/* the module's ABI: struct memprepop_info */
#include <memprepop/version.h>	/* MEMPREPOP_VERSION_*, MEMPREPOP_CHECK_VERSION */

#ifdef __cplusplus
extern "C" {
#endif

enum memprepop_backend {
	MEMPREPOP_BACKEND_MODULE = 1,	/* /dev/memprepop */
	MEMPREPOP_BACKEND_FALLBACK = 2,	/* threads + MADV_POPULATE_WRITE */
	/* threads + process_madvise(MADV_POPULATE_WRITE) on another process */
	MEMPREPOP_BACKEND_REMOTE = 3,
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
/*
 * Where the nodes the memory goes to have fewer of the caller's CPUs than
 * max_threads, let its CPUs on other nodes that the call leaves idle help,
 * nearest first; every page still goes where its policy says. Without it,
 * threads and workers run only on the CPUs of their memory's node. Since
 * 1.2; a module without MEMPREPOP_F_BORROW_CPUS works without helpers.
 */
#define MEMPREPOP_OPT_BORROW_CPUS	(1u << 2)

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
 * @size: in, sizeof(struct memprepop_opts), as MEMPREPOP_OPTS_INIT sets it:
 *	the structure's version. Zeroed (memset), the call fails with -EINVAL.
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
 * @size: in, sizeof(struct memprepop_result), as MEMPREPOP_RESULT_INIT sets
 *	it; zeroed, the call fails with -EINVAL.
 * @backend: out, the enum memprepop_backend that did the work
 * @populated: out, bytes from addr up to the first page not populated on
 *	return; for several ranges, the sum of theirs
 * @nsecs: out, wall-clock time of the call, in nanoseconds
 * @workers: out, threads or kernel workers that took part
 * @flags: out, MEMPREPOP_RESULT_* flags (1.3; zero before)
 */
struct memprepop_result {
	uint32_t size;
	uint32_t backend;
	uint64_t populated;
	uint64_t nsecs;
	uint32_t workers;
	uint32_t flags;
};

#define MEMPREPOP_RESULT_INIT	{ .size = sizeof(struct memprepop_result) }

/*
 * memprepop_result.flags: @opts->node_pages could not be counted, because
 * move_pages(2) is refused here (a container's default seccomp profile) or
 * the kernel has no NUMA; the counts stay zero, and the call succeeds as
 * madvise() by the caller would. Since 1.3; before, the call failed with
 * that errno after populating.
 */
#define MEMPREPOP_RESULT_NODES_UNKNOWN	(1u << 0)

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
 * could not be created, or -ENOMEM when the fallback cannot count
 * @node_pages (the range is populated). Where move_pages(2) is refused or
 * the kernel has no NUMA, the call succeeds with the counts zero and
 * MEMPREPOP_RESULT_NODES_UNKNOWN in @res->flags.
 */
int memprepop_populate(void *addr, size_t len,
		       const struct memprepop_opts *opts,
		       struct memprepop_result *res);

/**
 * memprepop_populate_ranges() - populate several ranges in one call
 * @ranges: @nr ranges (struct memprepop_range of <linux/memprepop.h>): addr
 *	(page aligned) and len in, __reserved zero; populated and error out
 * @nr: entries of @ranges; 0 does nothing
 * @opts: options, or NULL; @opts->node_pages counts the pages of all ranges
 * @res: filled on success and on failure, or NULL; @res->populated is the
 *	sum of the ranges' populated
 *
 * Each range is populated, and reported in its populated and error (0 or
 * -errno), exactly as memprepop_populate() of that range alone would be:
 * the same rules for alignment, holes, mappings and errno. With
 * MEMPREPOP_OPT_LOCK every range is made lock-on-fault first, and a range
 * that mlock2() refuses fails with its errno. One set of threads, or of the
 * module's workers, serves all ranges, each chunk faulted on its memory's
 * node. A failed range does not stop the others.
 *
 * Thread-safe, like memprepop_populate(); the threads of the fallback are
 * created for the call (a struct memprepop_ctx keeps them).
 *
 * Return: 0 when every range succeeded, else the error of the first range,
 * by index, that failed. Before anything is populated: -EINVAL for @ranges
 * NULL with @nr, a range's __reserved not zero, or the options
 * memprepop_populate() refuses; -E2BIG, -EOPNOTSUPP, -ENOMEM and -EAGAIN as
 * there. With @opts->progress cancelling, the ranges not done fail with
 * -ECANCELED.
 */
int memprepop_populate_ranges(struct memprepop_range *ranges, unsigned int nr,
			      const struct memprepop_opts *opts,
			      struct memprepop_result *res);

/**
 * memprepop_bitmap_ranges() - the runs of set bits of a bitmap, as ranges
 * @base: the address bit 0 stands for, aligned to the system page size
 * @page_size: bytes each bit stands for: a multiple of the system page size
 * @bitmap: @nbits bits, bit N of word N / (8 * sizeof(long)) standing for
 *	[base + N * page_size, base + (N + 1) * page_size)
 * @nbits: bits of @bitmap
 * @ranges: filled with the first @max runs, in address order; may be NULL
 *	when @max is 0
 * @max: entries of @ranges
 *
 * Like snprintf(), counts every run but fills only what fits: call it with
 * @max 0 to size the array.
 *
 * Return: the number of runs of set bits, or -EINVAL for @base not aligned to
 * the system page size, @page_size zero or not a multiple of it, or a range
 * that would wrap.
 */
ssize_t memprepop_bitmap_ranges(const void *base, size_t page_size,
				const unsigned long *bitmap, size_t nbits,
				struct memprepop_range *ranges, size_t max);

/**
 * memprepop_populate_bitmap() - populate the pages a bitmap marks
 * @base, @page_size, @bitmap, @nbits: as for memprepop_bitmap_ranges()
 * @opts: options, or NULL
 * @res: filled on success and on failure, or NULL
 *
 * Every run of set bits is a range of one memprepop_populate_ranges() call
 * (balloon deflate, virtio-mem plug, a migration destination). An empty
 * bitmap does nothing.
 *
 * Return: 0, the error of the first run that failed, the errors of
 * memprepop_bitmap_ranges() and memprepop_populate_ranges(), or -ENOMEM.
 */
int memprepop_populate_bitmap(void *base, size_t page_size,
			      const unsigned long *bitmap, size_t nbits,
			      const struct memprepop_opts *opts,
			      struct memprepop_result *res);

/*
 * A context: one request at a time, synchronous or in the background, on
 * workers that stay. With the module it has a descriptor of its own, on
 * which the module keeps its workers; with the fallback, a pool of threads
 * created before any of a call's populating starts, pinned per call to the
 * node of the memory each faults (within the caller's CPUs at that call),
 * and kept for the next call. Not shared between threads, but for
 * memprepop_ctx_cancel() and memprepop_ctx_progress(), which any thread may
 * call at any time; not usable in a child after fork() (-EPERM), where
 * memprepop_ctx_free() only releases the memory and descriptors.
 */
struct memprepop_ctx;

/**
 * memprepop_ctx_new() - a new context
 * @ctx: set to the new context
 * @flags: 0, or MEMPREPOP_OPT_FALLBACK never to use the module
 *
 * Uses the module when /dev/memprepop opens and takes background requests,
 * else the fallback.
 *
 * Return: 0, -EINVAL for an unknown flag, -ENOMEM, or -EMFILE or -ENFILE
 * from eventfd(2) (the fallback's completion descriptor). A module that
 * does not open makes a fallback context, not an error.
 */
int memprepop_ctx_new(struct memprepop_ctx **ctx, unsigned int flags);

/**
 * memprepop_ctx_new_pid() - a context for another process's memory
 * @ctx: set to the new context
 * @pidfd: the process, from pidfd_open(2); the context keeps a duplicate
 * @flags: 0
 *
 * Every request on it populates ranges of that process's address space,
 * as madvise(MADV_POPULATE_WRITE) by that process would (the same pages,
 * the same errno per range), from threads of the caller per NUMA node,
 * with process_madvise(2). A mapping's own policy places its pages;
 * pages of a mapping without one are placed by the caller's task policy
 * and cpuset, as the caller's threads' faults are. Progress, cancel,
 * background requests and node counts work as on any context;
 * MEMPREPOP_OPT_LOCK is refused (the process locks its own memory, as
 * with mlockall(MCL_ONFAULT), and the faults lock it). Needs a kernel
 * whose process_madvise() populates another process (contrib/linux), and
 * the right to attach to it with ptrace (PTRACE_MODE_ATTACH_REALCREDS, as
 * process_vm_writev(2)). Since 1.4.
 *
 * Return: 0, -EINVAL for a flag, -EBADF when @pidfd is not a pidfd,
 * -ESRCH when the process has exited, -EPERM without the right to attach
 * to it, -EOPNOTSUPP when the kernel cannot populate another process
 * (nothing was touched), -EMFILE, -ENFILE (the threads' eventfd), -ENOMEM.
 */
int memprepop_ctx_new_pid(struct memprepop_ctx **ctx, int pidfd,
			  unsigned int flags);

/**
 * memprepop_ctx_free() - cancel, reap and free
 * @ctx: a context, or NULL
 *
 * A request still running is cancelled and waited for; its outcome is lost,
 * and nothing is written to its ranges or node counts.
 */
void memprepop_ctx_free(struct memprepop_ctx *ctx);

/**
 * memprepop_ctx_populate() - memprepop_populate_ranges() on the context
 * @ctx: the context
 * @ranges, @nr, @opts, @res: as for memprepop_populate_ranges();
 *	MEMPREPOP_OPT_FALLBACK of @opts is ignored: the context decides
 *
 * Return: as memprepop_populate_ranges(), or -EBUSY while a background
 * request is not reaped, -EPERM in a child of the process that made @ctx.
 */
int memprepop_ctx_populate(struct memprepop_ctx *ctx,
			   struct memprepop_range *ranges, unsigned int nr,
			   const struct memprepop_opts *opts,
			   struct memprepop_result *res);

/**
 * memprepop_ctx_start() - start a request in the background
 * @ctx: the context
 * @ranges, @nr, @opts: as for memprepop_populate_ranges(), but for
 *	@opts->progress, which must be NULL (memprepop_ctx_progress() tells)
 *
 * Returns at once. @ranges and @opts->node_pages must stay valid until
 * memprepop_ctx_wait() reaps the request: their outputs are written then.
 * Locking (MEMPREPOP_OPT_LOCK) is done before it returns.
 *
 * Return: 0 when started (its outcome is memprepop_ctx_wait()'s), -EBUSY
 * while an earlier request is not reaped, -EINVAL for @opts->progress or
 * the arguments memprepop_populate_ranges() refuses, -EOPNOTSUPP, -EAGAIN
 * (threads), -ENOMEM, -EPERM in a child of the process that made @ctx.
 */
int memprepop_ctx_start(struct memprepop_ctx *ctx,
			struct memprepop_range *ranges, unsigned int nr,
			const struct memprepop_opts *opts);

/**
 * memprepop_ctx_fd() - a descriptor to poll for the background request
 * @ctx: the context
 *
 * POLLIN when memprepop_ctx_wait() with MEMPREPOP_WAIT_NOHANG is worth
 * calling: with the module, the context's /dev/memprepop descriptor (a
 * request of more ranges than the module takes at once is several, one
 * after the other: the wait then starts the next and gives -EAGAIN; a part
 * left to the reaping thread, userfaultfd-armed mappings, makes it readable
 * at once, and the wait then does that part, blocking); with
 * the fallback, an eventfd written when all threads of the request are
 * done. The same descriptor for the life of @ctx; it belongs to @ctx.
 *
 * Return: the descriptor.
 */
int memprepop_ctx_fd(struct memprepop_ctx *ctx);

/**
 * memprepop_ctx_wait() - reap the request
 * @ctx: the context
 * @flags: 0 to wait, or MEMPREPOP_WAIT_NOHANG (<linux/memprepop.h>)
 * @res: filled with the outcome, or NULL
 *
 * Writes the populated and error of each of the request's ranges, its node
 * counts and @res, as memprepop_populate_ranges() would have; @ctx then
 * takes a new request.
 *
 * Return: the request's outcome, 0 or -errno as memprepop_populate_ranges()
 * returns it (-ECANCELED after memprepop_ctx_cancel()); or, never an
 * outcome, -EAGAIN with MEMPREPOP_WAIT_NOHANG while it runs, -ENOENT when
 * no request was started, -EBUSY while a memprepop_ctx_populate() of
 * another thread runs, -EINVAL for an unknown flag or a @res->size below
 * the first version's, -EPERM in a child.
 */
int memprepop_ctx_wait(struct memprepop_ctx *ctx, unsigned int flags,
		       struct memprepop_result *res);

/**
 * memprepop_ctx_cancel() - stop the request soon
 * @ctx: the context
 *
 * The request stops within a chunk; the ranges not complete then fail with
 * -ECANCELED, populated exact. One that has finished keeps its outcome.
 *
 * Return: 0, or -ENOENT when no request is running or unreaped.
 */
int memprepop_ctx_cancel(struct memprepop_ctx *ctx);

/**
 * memprepop_ctx_progress() - how far the request is
 * @ctx: the context
 * @done: set to the bytes populated so far (updated every 100 ms or chunk)
 * @total: set to the bytes of the request
 *
 * Return: 0, or -ENOENT when no request is running or unreaped.
 */
int memprepop_ctx_progress(struct memprepop_ctx *ctx, uint64_t *done,
			   uint64_t *total);

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
 * Return: 0, -ENODEV when the module is not loaded or /dev/memprepop does
 * not open for the caller, -EINVAL when @size is below
 * MEMPREPOP_INFO_SIZE_VER0 or 16 KiB and more (more than an ioctl command
 * can carry), -EFAULT when @info is not writable.
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
 * -ENOMEM, or from move_pages(2) -ENOSYS (a kernel without NUMA) or -EPERM
 * (a sandbox that refuses it).
 */
int memprepop_node_pages(const void *addr, size_t len, uint64_t *counts,
			 unsigned int nr_nodes);

/**
 * memprepop_opt_flags() - the MEMPREPOP_OPT_* flags this library takes
 *
 * A flag it does not take fails a call with -EINVAL. Libraries before 1.3
 * lack this function; memprepop_version() tells which release runs there
 * (MEMPREPOP_OPT_BORROW_CPUS came with 1.2). Whether the loaded module
 * supports what a flag asks of it is memprepop_query()'s.
 *
 * Return: the flags, as a mask; never fails.
 */
uint32_t memprepop_opt_flags(void);

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
