/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * memprepop: populate (fault in, writable) and optionally lock a range of the
 * caller's own address space, fast.
 *
 * The device is /dev/memprepop. Every ioctl carries the size of its argument
 * in the command (_IOC_SIZE): structures grow at the end only, a caller built
 * against an older header passes a shorter structure and the kernel treats
 * the missing tail as zero, a caller built against a newer header may pass a
 * longer one whose unknown tail must be zero.
 */
#ifndef _UAPI_LINUX_MEMPREPOP_H
#define _UAPI_LINUX_MEMPREPOP_H

#include <linux/const.h>
#include <linux/ioctl.h>
#include <linux/types.h>

#define MEMPREPOP_DEVICE		"/dev/memprepop"

/* Bumped on any incompatible change of the interface (none so far). */
#define MEMPREPOP_ABI_VERSION		0

/*
 * MEMPREPOP_F_LOCK: the range must already be mlocked, normally lock-on-fault
 * (mlock2(MLOCK_ONFAULT)), so that every page is locked as it is faulted in,
 * on the node its policy selects. Refused with EINVAL on any part of the
 * range that is not VM_LOCKED, except the mappings mlock() leaves without
 * VM_LOCKED (hugetlb, DAX, VM_SPECIAL), which are accepted locked or not:
 * the lock and its RLIMIT_MEMLOCK accounting are mlock2()'s, never a
 * half-accounted lock of the module's own.
 */
#define MEMPREPOP_F_LOCK		_BITULL(0)
/*
 * Fill struct memprepop_populate.node_pages, by a lookup apart from the
 * populate that never changes its result (costs a page reference each).
 */
#define MEMPREPOP_F_NODE_STATS		_BITULL(1)

/* Number of nodes, from node 0, reported in memprepop_populate.node_pages. */
#define MEMPREPOP_STAT_NODES		8

/**
 * struct memprepop_info - what the loaded module supports
 * @abi_version: out, %MEMPREPOP_ABI_VERSION of the module
 * @populate_size: out, size of struct memprepop_populate the module knows;
 *	a caller may use the fields that fit in it
 * @flags: out, every flag the module accepts (%MEMPREPOP_F_LOCK, ...)
 * @nr_online_nodes: out, number of online NUMA nodes
 * @max_workers: out, most workers one populate call can use (the online CPUs)
 * @online_nodes: out, bit N set when node N (N < 64) is online
 * @nr_node_ids: out, highest possible node number plus one
 * @__reserved: out, zero
 */
struct memprepop_info {
	__u32 abi_version;
	__u32 populate_size;
	__u64 flags;
	__u32 nr_online_nodes;
	__u32 max_workers;
	__u64 online_nodes;
	__u32 nr_node_ids;
	__u32 __reserved;
};

/**
 * struct memprepop_populate - populate a range of the caller's memory
 * @addr: in, start of the range, page aligned
 * @len: in, length in bytes, rounded up to whole pages like madvise() does;
 *	0 succeeds doing nothing
 * @flags: in, %MEMPREPOP_F_LOCK, %MEMPREPOP_F_NODE_STATS
 * @populated: out, how far the call got: [@addr, @addr + @populated) is
 *	populated and the call stopped at the page there (the failure, the
 *	first hole, a cancel); a lower bound after EINTR
 * @max_workers: in, most workers to use, 0 for the module's choice
 * @workers: out, workers that took part
 * @nsecs: out, time the call spent populating, in nanoseconds
 * @node_pages: out, with %MEMPREPOP_F_NODE_STATS: base pages of the range
 *	that this call found or placed on node N, for N < %MEMPREPOP_STAT_NODES
 * @control: in, the address of a struct memprepop_control in the caller's
 *	memory, 8-byte aligned, through which another thread follows the
 *	call's progress and may cancel it; 0 for none
 *
 * Only @addr, @len and @flags are required: a zero-filled structure with
 * those set is a valid call. The first 32 bytes (up to and including
 * @populated) are the smallest structure accepted.
 */
struct memprepop_populate {
	__u64 addr;
	__u64 len;
	__u64 flags;
	__u64 populated;
	__u32 max_workers;
	__u32 workers;
	__u64 nsecs;
	__u64 node_pages[MEMPREPOP_STAT_NODES];
	__u64 control;
};

#define MEMPREPOP_POPULATE_SIZE_VER0	32

/**
 * struct memprepop_control - progress and cancellation of a running call
 * @done: out, bytes populated so far, written every 100 ms while the call
 *	runs, whoever faults, and once when it returns
 * @cancel: in, set non-zero by another thread to cancel the call: it then
 *	stops within about 100 ms and fails with ECANCELED, populated exact
 * @__reserved: in, zero (EINVAL otherwise)
 */
struct memprepop_control {
	__u64 done;
	__u32 cancel;
	__u32 __reserved;
};

#define MEMPREPOP_IOC_MAGIC		0xB7

/**
 * DOC: MEMPREPOP_IOC_INFO
 *
 * Fills struct memprepop_info. A shorter structure gets the fields that fit,
 * a longer one is zero-filled past what the module knows.
 *
 * Return: 0 on success, or -1 with errno set to:
 *
 * - EFAULT: the argument is not writable;
 * - EINVAL: the argument is smaller than the first three fields (16 bytes).
 */
#define MEMPREPOP_IOC_INFO \
	_IOR(MEMPREPOP_IOC_MAGIC, 0x00, struct memprepop_info)

/**
 * DOC: MEMPREPOP_IOC_POPULATE
 *
 * Faults in, writable, every page of [addr, addr + len) of the calling
 * process, exactly as madvise(MADV_POPULATE_WRITE) by the caller would on
 * the running kernel (holes included: before 6.9 madvise steps over them and
 * fails with ENOMEM at the end, from 6.9 it stops at the first), each page on
 * the node its memory policy selects, by workers that carry the caller's
 * credentials, cgroups, limits and scheduling attributes. Only a fatal
 * signal interrupts it, at once.
 *
 * Return: 0 on success, or -1 with errno set to (populated exact but after
 * EINTR):
 *
 * - EINVAL: @addr not page aligned, @addr + @len wraps, an unknown flag,
 *   the argument shorter than %MEMPREPOP_POPULATE_SIZE_VER0, @control not
 *   8-byte aligned or its reserved field not zero; a mapping that cannot be
 *   populated writable (read-only, PROT_NONE, VM_IO or VM_PFNMAP,
 *   secretmem, a protection key denying the caller writes), or with
 *   %MEMPREPOP_F_LOCK a part of the range that is not mlocked;
 * - E2BIG: the argument is longer than the module knows and its tail is not
 *   zero;
 * - ENOMEM: part of the range is not mapped (or beyond the user address
 *   space), or out of memory;
 * - EFAULT: a fault failed (SIGBUS or SIGSEGV for a user access: hugetlb
 *   pool exhausted, file hole beyond EOF), or the argument or @control is
 *   not accessible;
 * - EHWPOISON: a page is hardware poisoned;
 * - EINTR: a fatal signal arrived;
 * - ECANCELED: cancelled through @control.
 */
#define MEMPREPOP_IOC_POPULATE \
	_IOWR(MEMPREPOP_IOC_MAGIC, 0x01, struct memprepop_populate)

#endif /* _UAPI_LINUX_MEMPREPOP_H */
