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

/**
 * struct memprepop_info - what the loaded module supports
 * @flags: out, every flag %MEMPREPOP_IOC_POPULATE accepts
 * @populate_size: out, size of struct memprepop_populate the module knows:
 *	a caller may use the fields that fit in it
 * @info_size: out, size of this structure the module knows
 * @max_workers: out, most workers one populate call can use
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
	__u32 __reserved;
};

/* The smallest struct memprepop_info accepted: all of its first version */
#define MEMPREPOP_INFO_SIZE_VER0	24

/**
 * struct memprepop_populate - populate a range of the caller's memory
 * @addr: in, start of the range, page aligned
 * @len: in, length in bytes, rounded up to whole pages like madvise() does;
 *	0 succeeds doing nothing
 * @flags: in, %MEMPREPOP_F_REQUIRE_MLOCKED or 0
 * @populated: out, how far the call got: [@addr, @addr + @populated) is
 *	populated and the call stopped at the page there (the failure, the
 *	first hole, a cancel); a lower bound after EINTR
 * @max_workers: in, most workers to use, 0 for the module's choice
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
 * @nr_node_pages: in, entries of @node_pages (0 exactly when it is 0)
 * @__reserved: in, zero
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
};

/* The smallest struct memprepop_populate accepted: up to @populated */
#define MEMPREPOP_POPULATE_SIZE_VER0	32

/**
 * struct memprepop_control - progress and cancellation of a running call
 * @done: out, bytes populated so far, written every 100 ms while the call
 *	runs, whoever faults, and once when it returns
 * @cancel: in, set non-zero by another thread to cancel the call: it then
 *	stops within about 100 ms and fails with ECANCELED, populated exact
 * @__reserved: in, zero
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
 *   the argument shorter than %MEMPREPOP_POPULATE_SIZE_VER0, @__reserved
 *   not zero, @control not 8-byte aligned, @node_pages and
 *   @nr_node_pages not both zero or both non-zero, the reserved field of
 *   @control not zero; a mapping that cannot be populated writable
 *   (read-only, PROT_NONE, VM_IO or VM_PFNMAP, secretmem, a protection key
 *   denying the caller writes), or with %MEMPREPOP_F_REQUIRE_MLOCKED a part
 *   of the range that is not mlocked;
 * - E2BIG: the argument is longer than the module knows and its tail is not
 *   zero;
 * - ENOMEM: part of the range is not mapped (or beyond the user address
 *   space), or out of memory;
 * - EFAULT: a fault failed (SIGBUS or SIGSEGV for a user access: hugetlb
 *   pool exhausted, file hole beyond EOF), or the argument, @control or
 *   @node_pages is not accessible;
 * - EHWPOISON: a page is hardware poisoned;
 * - EINTR: a fatal signal arrived;
 * - ECANCELED: cancelled through @control.
 */
#define MEMPREPOP_IOC_POPULATE \
	_IOWR(MEMPREPOP_IOC_MAGIC, 0x01, struct memprepop_populate)

#endif /* _UAPI_LINUX_MEMPREPOP_H */
