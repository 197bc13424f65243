// SPDX-License-Identifier: LGPL-2.1-or-later
/* libmemprepop: the public entry points, choosing a backend per call. */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "internal.h"

#ifndef MLOCK_ONFAULT
#define MLOCK_ONFAULT	0x01
#endif

#define MPP_LIB_FLAGS	(MEMPREPOP_OPT_FALLBACK | MEMPREPOP_OPT_TOUCH | \
			 MEMPREPOP_OPT_TOUCH_ALWAYS)

const char *memprepop_version(void)
{
	return MEMPREPOP_VERSION;
}

int memprepop_backend(void)
{
	return mpp_device_fd() >= 0 ? MEMPREPOP_BACKEND_MODULE :
				      MEMPREPOP_BACKEND_FALLBACK;
}

const char *memprepop_backend_name(int backend)
{
	switch (backend) {
	case MEMPREPOP_BACKEND_MODULE:
		return "module";
	case MEMPREPOP_BACKEND_FALLBACK:
		return "fallback";
	default:
		return "none";
	}
}

static int mpp_check_args(void *addr, size_t len,
			  const struct memprepop_opts *opts)
{
	long page_size = sysconf(_SC_PAGESIZE);
	size_t i;

	if (opts->flags & ~(MEMPREPOP_F_LOCK | MEMPREPOP_F_NODE_STATS))
		return -EINVAL;
	if (opts->lib_flags & ~MPP_LIB_FLAGS)
		return -EINVAL;
	for (i = 0; i < sizeof(opts->reserved) / sizeof(opts->reserved[0]); i++)
		if (opts->reserved[i])
			return -EINVAL;
	/* As madvise() checks them, before mlock2() could lock anything */
	if ((uintptr_t)addr % page_size)
		return -EINVAL;
	if (len > SIZE_MAX - page_size || (uintptr_t)addr + len < (uintptr_t)addr)
		return -EINVAL;
	return 0;
}

int memprepop_populate(void *addr, size_t len,
		       const struct memprepop_opts *opts,
		       struct memprepop_result *res)
{
	static const struct memprepop_opts no_opts;
	long page_size = sysconf(_SC_PAGESIZE);
	struct memprepop_result scratch;
	struct mpp_progress progress;
	uint64_t t0 = mpp_now_ns();
	int fd = -ENODEV;
	int ret;

	if (!opts)
		opts = &no_opts;
	if (!res)
		res = &scratch;
	memset(res, 0, sizeof(*res));

	ret = mpp_check_args(addr, len, opts);
	if (ret)
		return ret;
	len = (len + page_size - 1) & ~(size_t)(page_size - 1);
	if (!(opts->lib_flags & (MEMPREPOP_OPT_FALLBACK |
				 MEMPREPOP_OPT_TOUCH_ALWAYS)))
		fd = mpp_device_fd();
	res->backend = fd >= 0 ? MEMPREPOP_BACKEND_MODULE :
				 MEMPREPOP_BACKEND_FALLBACK;
	if (!len)
		goto out;
	mpp_progress_init(&progress, opts, len);

	/*
	 * Lock-on-fault first: mlock2() does the RLIMIT_MEMLOCK check and the
	 * accounting, and each page is then locked as it is faulted in on the
	 * node its policy selects, never locked first and moved later.
	 */
	if ((opts->flags & MEMPREPOP_F_LOCK) &&
	    mlock2(addr, len, MLOCK_ONFAULT)) {
		ret = -errno;
		goto out;
	}

	if (fd >= 0)
		ret = mpp_device_populate(fd, addr, len, opts, res, &progress);
	else
		ret = mpp_fallback_populate(addr, len, opts, res, &progress);
	mpp_progress_final(&progress, res->populated);
out:
	res->nsecs = mpp_now_ns() - t0;
	return ret;
}
