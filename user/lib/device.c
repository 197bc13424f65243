// SPDX-License-Identifier: LGPL-2.1-or-later
/* libmemprepop: the module backend, /dev/memprepop and its ioctls. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "internal.h"

/*
 * With a progress callback, a range goes to the module in pieces of about
 * 100 ms each, sized from the rate of the piece before; pieces end on 2 MiB
 * boundaries, so that no transparent huge page is split between two calls.
 */
#define MPP_PIECE_FIRST		(64ull << 20)
#define MPP_PIECE_MIN		(16ull << 20)
#define MPP_PIECE_MAX		(16ull << 30)
#define MPP_PIECE_ALIGN		(2ull << 20)
#define MPP_PIECE_NS		100000000ull

/* -1: not opened yet; otherwise the descriptor or -errno of the open */
static int mpp_fd = -1;

int mpp_device_fd(void)
{
	int fd = __atomic_load_n(&mpp_fd, __ATOMIC_ACQUIRE);
	int expected = -1;
	int got;

	if (fd != -1)
		return fd;
	got = open(MEMPREPOP_DEVICE, O_RDWR | O_CLOEXEC);
	if (got < 0)
		got = -errno;
	/* Two threads racing to open: the first one's result is kept */
	if (!__atomic_compare_exchange_n(&mpp_fd, &expected, got, 0,
					 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
		if (got >= 0)
			close(got);
		return expected;
	}
	return got;
}

int memprepop_query(struct memprepop_info *info)
{
	int fd = mpp_device_fd();

	if (fd < 0)
		return -ENODEV;
	memset(info, 0, sizeof(*info));
	if (ioctl(fd, MEMPREPOP_IOC_INFO, info) < 0)
		return -errno;
	return 0;
}

/* One MEMPREPOP_IOC_POPULATE; adds its outcome to @res */
static int mpp_ioctl_populate(int fd, uintptr_t addr, uint64_t len,
			      const struct memprepop_opts *opts,
			      struct memprepop_result *res)
{
	struct memprepop_populate req = {
		.addr = addr,
		.len = len,
		.flags = opts->flags,
		.max_workers = opts->max_threads,
	};
	int ret = 0;
	int i;

	if (ioctl(fd, MEMPREPOP_IOC_POPULATE, &req) < 0)
		ret = -errno;
	res->populated += req.populated;
	if (req.workers > res->workers)
		res->workers = req.workers;
	for (i = 0; i < MEMPREPOP_STAT_NODES; i++)
		res->node_pages[i] += req.node_pages[i];
	return ret;
}

/* The next piece: about 100 ms at the rate of the last one */
static uint64_t mpp_next_piece(uint64_t last, uint64_t ns)
{
	uint64_t next = ns ? last * MPP_PIECE_NS / ns : MPP_PIECE_MAX;

	if (next < MPP_PIECE_MIN)
		next = MPP_PIECE_MIN;
	if (next > MPP_PIECE_MAX)
		next = MPP_PIECE_MAX;
	return next & ~(MPP_PIECE_ALIGN - 1);
}

int mpp_device_populate(int fd, void *addr, size_t len,
			const struct memprepop_opts *opts,
			struct memprepop_result *res,
			struct mpp_progress *progress)
{
	uintptr_t start = (uintptr_t)addr, pos = start, end = start + len;
	uint64_t piece = MPP_PIECE_FIRST;

	if (!progress->fn)
		return mpp_ioctl_populate(fd, start, len, opts, res);

	while (pos < end) {
		uintptr_t stop = (pos + piece) & ~(MPP_PIECE_ALIGN - 1);
		uint64_t t0 = mpp_now_ns();
		int ret;

		if (stop <= pos || stop > end || end - stop < MPP_PIECE_MIN)
			stop = end;
		ret = mpp_ioctl_populate(fd, pos, stop - pos, opts, res);
		if (ret)
			return ret;
		piece = mpp_next_piece(stop - pos, mpp_now_ns() - t0);
		pos = stop;
		if (pos < end && mpp_progress_report(progress, pos - start))
			return -ECANCELED;
	}
	return 0;
}
