// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libmemprepop: /dev/memprepop itself: the descriptor one-shot calls share
 * (opened once), a context's own, and what the loaded module supports.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "internal.h"

/* -1: not opened yet; otherwise the descriptor or -errno of the open */
static int mpl_fd = -1;

int mpl_dev_fd(void)
{
	int fd = __atomic_load_n(&mpl_fd, __ATOMIC_ACQUIRE);
	int expected = -1;
	int got;

	if (fd != -1)
		return fd;
	got = open(MEMPREPOP_DEVICE, O_RDWR | O_CLOEXEC);
	if (got < 0)
		got = -errno;
	/* Two threads racing to open: the first one's result is kept */
	if (!__atomic_compare_exchange_n(&mpl_fd, &expected, got, 0,
					 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
		if (got >= 0)
			close(got);
		return expected;
	}
	return got;
}

int memprepop_query(struct memprepop_info *info, size_t size)
{
	int fd;

	/* The size travels in the command, as the module reads it */
	if (size < MEMPREPOP_INFO_SIZE_VER0 || size > _IOC_SIZEMASK)
		return -EINVAL;
	fd = mpl_dev_fd();
	if (fd < 0)
		return -ENODEV;
	if (ioctl(fd, _IOC(_IOC_READ, MEMPREPOP_IOC_MAGIC, 0x00, size), info))
		return -errno;
	return 0;
}

/* A descriptor of its own, for a context: the module keeps workers per file */
int mpl_dev_open(void)
{
	int fd = open(MEMPREPOP_DEVICE, O_RDWR | O_CLOEXEC);

	return fd < 0 ? -errno : fd;
}

/* What the module takes; an older one leaves the fields it lacks zero */
int mpl_dev_info(int fd, struct memprepop_info *info)
{
	memset(info, 0, sizeof(*info));
	if (ioctl(fd, MEMPREPOP_IOC_INFO, info))
		return -errno;
	return 0;
}
