// SPDX-License-Identifier: LGPL-2.1-or-later
/* libmemprepop: the module backend, /dev/memprepop and its ioctls. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "internal.h"

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

int mpp_device_populate(int fd, void *addr, size_t len,
			const struct memprepop_opts *opts,
			struct memprepop_result *res)
{
	struct memprepop_populate req = {
		.addr = (uintptr_t)addr,
		.len = len,
		.flags = opts->flags,
		.max_workers = opts->max_threads,
	};
	int ret = 0;
	int i;

	if (ioctl(fd, MEMPREPOP_IOC_POPULATE, &req) < 0)
		ret = -errno;
	res->populated = req.populated;
	res->workers = req.workers;
	for (i = 0; i < MEMPREPOP_STAT_NODES; i++)
		res->node_pages[i] = req.node_pages[i];
	return ret;
}
