/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * memprepop: populate (fault in, writable) a range of the caller's own
 * address space, fast: split across per-NUMA-node workers that act as the
 * caller, each page placed by the range's memory policy.
 *
 * The device is /dev/memprepop. Every ioctl carries the size of its argument
 * in the command (_IOC_SIZE): structures grow at the end only, a caller built
 * against an older header passes a shorter structure and the kernel treats
 * the missing tail as zero, a caller built against a newer header may pass a
 * longer one whose unknown tail must be zero (E2BIG otherwise).
 */
#ifndef _UAPI_LINUX_MEMPREPOP_H
#define _UAPI_LINUX_MEMPREPOP_H

#include <linux/const.h>
#include <linux/ioctl.h>
#include <linux/types.h>

#define MEMPREPOP_DEVICE		"/dev/memprepop"

/*
 * MEMPREPOP_F_REQUIRE_MLOCKED: the caller has mlocked the range beforehand,
 * normally lock-on-fault (mlock2(MLOCK_ONFAULT)) right after setting its
 * memory policy, so that each page is locked as it is faulted in, on the
 * node its policy selects. The module does not lock anything: it refuses
 * with EINVAL any part of the range that is not VM_LOCKED, except the
 * mappings mlock() leaves without VM_LOCKED (hugetlb, DAX, VM_SPECIAL),
 * which are accepted locked or not. The lock and its RLIMIT_MEMLOCK
 * accounting stay mlock2()'s.
 */
#define MEMPREPOP_F_REQUIRE_MLOCKED	_BITULL(0)

/*
 * MEMPREPOP_F_BACKGROUND: start the request and return at once; it runs on
 * in the module's workers, and MEMPREPOP_IOC_WAIT reaps it. One background
 * request per open file at a time: poll() on that file reports EPOLLIN
 * when the request wants to be reaped. The structure, the ranges, @control
 * and @node_pages must stay in place until it is: the module writes the
 * results there when it is reaped.
 */
#define MEMPREPOP_F_BACKGROUND		_BITULL(1)

/*
 * MEMPREPOP_F_EVENTFD: with MEMPREPOP_F_BACKGROUND, also add 1 to the
 * eventfd @eventfd when the request wants to be reaped.
 */
#define MEMPREPOP_F_EVENTFD		_BITULL(2)

/*
 * MEMPREPOP_F_BORROW_CPUS: where the nodes the memory goes to have fewer of
 * the caller's CPUs than @max_workers, let the caller's CPUs on other nodes
 * that the request leaves idle fault for them, nearest first ("helpers").
 * Every page still goes where its policy says; only the zeroing is done
 * from another node. What a VMM whose preallocation threads float over all
 * its CPUs asks for (QEMU's prealloc-threads). Without it, workers run
 * only on the CPUs of the node whose memory they fault.
 */
#define MEMPREPOP_F_BORROW_CPUS		_BITULL(3)

/**
 * struct memprepop_info - what the loaded module supports
 * @flags: out, every flag %MEMPREPOP_IOC_POPULATE accepts
 * @populate_size: out, size of struct memprepop_populate the module knows:
 *	a caller may use the fields that fit in it
 * @info_size: out, size of this structure the module knows
 * @max_workers: out, most workers one populate call can use
 * @max_ranges: out, most ranges one populate call takes (0: the module
 *	takes only @addr and @len)
 * @range_size: out, size of struct memprepop_range the module knows
 * @__reserved: out, zero
 *
 * The machine's topology is not repeated here: sysfs has it
 * (/sys/devices/system/node/possible and online).
 */
struct memprepop_info {
	__u64 flags;
	__u32 populate_size;
	__u32 info_size;
	__u32 max_workers;
	__u32 max_ranges;
	__u32 range_size;
	__u32 __reserved;
};

/* The smallest struct memprepop_info accepted: all of its first version */
#define MEMPREPOP_INFO_SIZE_VER0	24

/**
 * struct memprepop_range - one range of a request that has several
 * @addr: in, start, page aligned
 * @len: in, length in bytes, rounded up to whole pages; 0 does nothing
 * @populated: out, how far the range got, as
 *	&memprepop_populate.populated for a request of that range alone
 * @error: out, 0 or the negative errno the range failed with: what a
 *	request of that range alone would have failed with
 * @__reserved: in, zero
 *
 * Each range is populated and reported as if it were a call of its own,
 * the same rules for holes, mappings and errno; all ranges share one set of
 * workers.
 */
struct memprepop_range {
	__u64 addr;
	__u64 len;
	__u64 populated;
	__s32 error;
	__u32 __reserved;
};

/* The smallest struct memprepop_range accepted: all of its first version */
#define MEMPREPOP_RANGE_SIZE_VER0	32

/**
 * struct memprepop_populate - populate a range of the caller's memory
 * @addr: in, start of the range, page aligned
 * @len: in, length in bytes, rounded up to whole pages like madvise() does;
 *	0 succeeds doing nothing
 * @flags: in, MEMPREPOP_F_* flags, or 0
 * @populated: out, how far the call got: [@addr, @addr + @populated) is
 *	populated and the call stopped at the page there (the failure, the
 *	first hole, a cancel); a lower bound after EINTR
 * @max_workers: in, most workers to use, 0 for the module's choice; with
 *	%MEMPREPOP_F_BORROW_CPUS, also how many to reach with helpers
 * @workers: out, workers that took part
 * @nsecs: out, time the call spent populating, in nanoseconds
 * @control: in, the address of a struct memprepop_control in the caller's
 *	memory, 8-byte aligned, through which another thread follows the
 *	call's progress and may cancel it; 0 for none
 * @node_pages: in, the address of an array of @nr_node_pages __u64 in the
 *	caller's memory, or 0 for no statistics. The module
 *	sets entry N to the base pages of the range that this call found or
 *	placed on node N (counted apart from the populate, which they never
 *	change; a page reference each); pages on nodes from @nr_node_pages
 *	up are not counted. Size it from /sys/devices/system/node/possible.
 * @nr_node_pages: in, entries of @node_pages (0 exactly when it is 0), at
 *	most %MEMPREPOP_NODE_PAGES_MAX
 * @__reserved: in, zero
 * @ranges: in, the address of an array of @nr_ranges struct memprepop_range,
 *	each @range_size bytes, to populate instead of @addr and @len (which
 *	must then be 0); 0 for the one range @addr, @len. With ranges,
 *	@populated is the sum of theirs, and the call fails with the error of
 *	the first range, by index, that failed
 * @nr_ranges: in, entries of @ranges (0 exactly when it is 0), at most
 *	&memprepop_info.max_ranges
 * @range_size: in, size of each entry of @ranges: at least
 *	%MEMPREPOP_RANGE_SIZE_VER0 and at most %MEMPREPOP_RANGE_SIZE_MAX; a
 *	longer one's unknown tail must be zero
 * @eventfd: in, with %MEMPREPOP_F_EVENTFD, an eventfd descriptor
 * @__reserved2: in, zero
 *
 * Only @addr, @len and @flags are required: a zero-filled structure with
 * those set is a valid call.
 */
struct memprepop_populate {
	__u64 addr;
	__u64 len;
	__u64 flags;
	__u64 populated;
	__u32 max_workers;
	__u32 workers;
	__u64 nsecs;
	__u64 control;
	__u64 node_pages;
	__u32 nr_node_pages;
	__u32 __reserved;
	__u64 ranges;
	__u32 nr_ranges;
	__u32 range_size;
	__s32 eventfd;
	__u32 __reserved2;
};

/* The smallest struct memprepop_populate accepted: up to @populated */
#define MEMPREPOP_POPULATE_SIZE_VER0	32

/*
 * The limits of one MEMPREPOP_IOC_POPULATE call, each checked before the
 * module allocates or does anything for the call:
 *
 * MEMPREPOP_RANGE_SIZE_MAX: the largest @range_size (E2BIG above), as
 * clone3() and sched_setattr() bound their growable structures.
 *
 * MEMPREPOP_NODE_PAGES_MAX: the largest @nr_node_pages (EINVAL above), more
 * than any kernel's possible nodes.
 *
 * MEMPREPOP_PLAN_LEN_MAX: the most mapped memory all ranges of a call may
 * cover together, a range covering memory another range covers too counted
 * again (E2BIG above): 128 TiB, the user address space of 4-level paging.
 * Parts of a range that are not mapped do not count: they fail as madvise()
 * fails them.
 *
 * MEMPREPOP_PLAN_RUNS_MAX: the most runs all ranges of a call may cut into
 * (E2BIG above). A run is a part of a range within one mapping and under
 * one memory policy; alike neighbours make one run.
 */
#define MEMPREPOP_RANGE_SIZE_MAX	4096
#define MEMPREPOP_NODE_PAGES_MAX	4096
#define MEMPREPOP_PLAN_LEN_MAX		(_AC(1, ULL) << 47)
#define MEMPREPOP_PLAN_RUNS_MAX		131072

/**
 * struct memprepop_control - progress and cancellation of a running call
 * @done: out, bytes populated so far, written every 100 ms while the call
 *	runs, whoever faults, and once when it returns
 * @cancel: in, set non-zero by another thread to cancel the call: it then
 *	stops within about 100 ms and fails with ECANCELED, populated exact.
 *	Not read while the calling thread is away taking a signal: its
 *	workers go on until it comes back, then the cancel is seen
 *	The call returns once no worker is inside one of its chunks: a worker
 *	in a wait of its own (a file system that does not answer) holds it
 *	as long as that wait lasts, as it would hold a thread of the caller
 *	inside madvise(), until the process is killed
 * @__reserved: in, zero
 *
 * The module writes @done until the call returns, and not while the
 * calling thread is away from it taking a signal, or, in the background,
 * until the request is reaped or its file released: once close() of the
 * file's last descriptor has returned, or MEMPREPOP_IOC_WAIT has, the
 * structure may be freed (a MEMPREPOP_IOC_WAIT in progress at that close
 * writes it until it returns).
 */
struct memprepop_control {
	__u64 done;
	__u32 cancel;
	__u32 __reserved;
};

/*
 * Unused in Documentation/userspace-api/ioctl/ioctl-number.rst of 6.1 and
 * 6.12; the line an upstream submission adds there is in
 * Documentation/userspace-api.rst.
 */
#define MEMPREPOP_IOC_MAGIC		0xB9

/**
 * DOC: MEMPREPOP_IOC_INFO
 *
 * Fills struct memprepop_info. A longer structure is zero-filled past what
 * the module knows.
 *
 * Return: 0 on success, or -1 with errno set to:
 *
 * - EFAULT: the argument is not writable;
 * - EINVAL: the argument is smaller than %MEMPREPOP_INFO_SIZE_VER0.
 */
#define MEMPREPOP_IOC_INFO \
	_IOR(MEMPREPOP_IOC_MAGIC, 0x00, struct memprepop_info)

/**
 * DOC: MEMPREPOP_IOC_POPULATE
 *
 * Faults in, writable, every page of [addr, addr + len) of the calling
 * process, or of each of @ranges, exactly as madvise(MADV_POPULATE_WRITE) by
 * the caller would on the running kernel (the first hole stops it with
 * ENOMEM), each page on the node its memory policy selects, by workers that
 * are threads of the calling process and carry its credentials and
 * scheduling attributes.
 * One set of workers serves all ranges, each chunk faulted on its memory's
 * node. Only a fatal signal interrupts it, at once. A stop (SIGSTOP, a
 * ptrace trap, the cgroup freezer, suspend) reaches the caller within about
 * 100 ms, or when the chunk it faults itself is done (16 MiB; longer when
 * a fault waits on I/O or a userfaultfd handler), and its workers between
 * chunks: the call is restarted once the caller runs again, and goes on
 * where it was (nothing is written before then). Not while it plans: ranges
 * that overlap over many mappings make a walk bounded only by
 * %MEMPREPOP_PLAN_LEN_MAX, which only a fatal signal ends.
 *
 * With %MEMPREPOP_F_BACKGROUND the call returns 0 as soon as the request is
 * started; its outcome is what MEMPREPOP_IOC_WAIT reports.
 *
 * Return: 0 on success, or -1 with errno set to (populated exact but after
 * EINTR):
 *
 * - EINVAL: @addr not page aligned, @addr + @len wraps, an unknown flag,
 *   %MEMPREPOP_F_EVENTFD without %MEMPREPOP_F_BACKGROUND, the argument
 *   shorter than %MEMPREPOP_POPULATE_SIZE_VER0, @__reserved or
 *   @__reserved2 not zero, @control not 8-byte aligned, @node_pages and
 *   @nr_node_pages not both zero or both non-zero, the reserved field of
 *   @control not zero, @ranges and @nr_ranges not both zero or both
 *   non-zero, @ranges with @addr or @len set, more than
 *   &memprepop_info.max_ranges ranges, @nr_node_pages above
 *   %MEMPREPOP_NODE_PAGES_MAX, @range_size below
 *   %MEMPREPOP_RANGE_SIZE_VER0, a range's @__reserved not zero; a mapping
 *   that cannot be populated writable (read-only, PROT_NONE, VM_IO or
 *   VM_PFNMAP, secretmem, a shadow stack, a protection key denying the
 *   caller writes, off x86 any protection key but the default), or
 *   with %MEMPREPOP_F_REQUIRE_MLOCKED a part of the range that is not
 *   mlocked;
 * - E2BIG: the argument, or an entry of @ranges, is longer than the module
 *   knows and its tail is not zero; @range_size above
 *   %MEMPREPOP_RANGE_SIZE_MAX; the ranges together cover more mapped memory
 *   than %MEMPREPOP_PLAN_LEN_MAX or cut into more runs than
 *   %MEMPREPOP_PLAN_RUNS_MAX (nothing is populated then);
 * - ENOMEM: part of the range is not mapped (or beyond the user address
 *   space), or out of memory;
 * - EFAULT: a fault failed (SIGBUS or SIGSEGV for a user access: hugetlb
 *   pool exhausted, file hole beyond EOF), or the argument, @control,
 *   @node_pages or @ranges is not accessible;
 * - EHWPOISON: a page is hardware poisoned;
 * - EINTR: a fatal signal arrived;
 * - ECANCELED: cancelled through @control (or, in the background, by the
 *   close of the request's process's last descriptor of the file while a
 *   thread of it reaps the request);
 * - EBUSY: %MEMPREPOP_F_BACKGROUND while the file has a background request
 *   not yet reaped, or while another thread starts one on it;
 * - EBADF: @eventfd is not an eventfd descriptor.
 *
 * With @ranges, the errors of a range (an unaligned @addr, a wrap, a mapping,
 * a hole, a failed fault) are that range's @error, and the call fails with
 * the first of them by index; the other errors fail the call before
 * anything is populated.
 */
#define MEMPREPOP_IOC_POPULATE \
	_IOWR(MEMPREPOP_IOC_MAGIC, 0x01, struct memprepop_populate)

/*
 * memprepop_wait.flags: do not wait for the workers: fault the part left to
 * the reaping thread, if any, then return EAGAIN when workers are still at
 * work.
 */
#define MEMPREPOP_WAIT_NOHANG		_BITULL(0)

/**
 * struct memprepop_wait - reap a background request
 * @flags: in, %MEMPREPOP_WAIT_NOHANG or 0
 * @result: out, 0 or the negative errno the request would have failed with
 *	had it not been in the background
 * @__reserved: in, zero
 */
struct memprepop_wait {
	__u64 flags;
	__s32 result;
	__u32 __reserved;
};

/* The smallest struct memprepop_wait accepted: all of its first version */
#define MEMPREPOP_WAIT_SIZE_VER0	16

/**
 * DOC: MEMPREPOP_IOC_WAIT
 *
 * Reaps the background request of the file: faults in the parts only a
 * thread of the caller may fault (userfaultfd-armed mappings, whose faults
 * wait for a handler), waits for the workers, then writes the outputs of
 * the request where its MEMPREPOP_IOC_POPULATE had them (the structure,
 * @ranges, @node_pages, @control) and its outcome to @result. The file then
 * takes a new background request. poll() reports EPOLLIN when the workers
 * are done, or at once when part of the request is left to the reaping
 * thread (userfaultfd-armed mappings, or no worker could be had): the wait
 * then faults that part and waits for any worker still running.
 *
 * Return: 0 on success (the request's own outcome is @result), or -1 with
 * errno set to:
 *
 * - EINVAL: an unknown flag, @__reserved not zero, the argument shorter than
 *   %MEMPREPOP_WAIT_SIZE_VER0;
 * - E2BIG: the argument is longer than the module knows and its tail is not
 *   zero;
 * - EFAULT: the argument is not accessible;
 * - ENOENT: the file has no background request;
 * - EPERM: the request was started by another process;
 * - EBUSY: another thread is starting or reaping a request of the file
 *   (a userfaultfd handler, say, while the thread it serves reaps);
 * - EAGAIN: %MEMPREPOP_WAIT_NOHANG and workers are still at work (the
 *   part left to the reaping thread was done): poll() reports EPOLLIN
 *   again when they are done;
 * - EINTR: a fatal signal arrived; the request goes on.
 *
 * A stop (SIGSTOP, a ptrace trap, a freezer) reaches the waiting thread
 * within about 100 ms; the wait is restarted once it runs again, and the
 * request goes on meanwhile.
 */
#define MEMPREPOP_IOC_WAIT \
	_IOWR(MEMPREPOP_IOC_MAGIC, 0x02, struct memprepop_wait)

#endif /* _UAPI_LINUX_MEMPREPOP_H */
