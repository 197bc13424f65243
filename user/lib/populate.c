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

#define MPL_OPT_FLAGS	(MEMPREPOP_OPT_LOCK | MEMPREPOP_OPT_FALLBACK)

const char *memprepop_version(void)
{
	return MEMPREPOP_VERSION;
}

int memprepop_backend(void)
{
	return mpl_device_fd() >= 0 ? MEMPREPOP_BACKEND_MODULE :
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

/*
 * The caller's options, as the kernel's copy_struct_from_user() takes a
 * structure: @opts->size bytes of it, the rest of ours zero; -EINVAL below
 * the first version, -E2BIG for a longer one whose tail we do not know and
 * is not zero.
 */
static int mpl_opts_copy(struct memprepop_opts *dst,
			 const struct memprepop_opts *opts)
{
	const unsigned char *tail = (const unsigned char *)opts;
	size_t size, i;

	memset(dst, 0, sizeof(*dst));
	dst->size = sizeof(*dst);
	if (!opts)
		return 0;
	size = opts->size;
	if (size < MPL_OPTS_SIZE_VER0)
		return -EINVAL;
	for (i = sizeof(*dst); i < size; i++)
		if (tail[i])
			return -E2BIG;
	memcpy(dst, opts, size < sizeof(*dst) ? size : sizeof(*dst));
	dst->size = sizeof(*dst);
	return 0;
}

/*
 * The outcome into the caller's result, never past its @size: what we do
 * not know of a longer one is zeroed, @size itself is left as it is.
 */
static void mpl_result_copy(struct memprepop_result *res,
			    const struct memprepop_result *ours)
{
	size_t size = res->size, skip = sizeof(res->size);

	memcpy((char *)res + skip, (const char *)ours + skip,
	       (size < sizeof(*ours) ? size : sizeof(*ours)) - skip);
	if (size > sizeof(*ours))
		memset((char *)res + sizeof(*ours), 0, size - sizeof(*ours));
}

static int mpl_check_args(void *addr, size_t len,
			  const struct memprepop_opts *opts)
{
	long page_size = sysconf(_SC_PAGESIZE);

	if (opts->flags & ~MPL_OPT_FLAGS)
		return -EINVAL;
	if (!opts->node_pages != !opts->nr_nodes)
		return -EINVAL;
	/* As madvise() checks them, before mlock2() could lock anything */
	if ((uintptr_t)addr % page_size)
		return -EINVAL;
	if (len > SIZE_MAX - page_size || (uintptr_t)addr + len < (uintptr_t)addr)
		return -EINVAL;
	return 0;
}

static int mpl_populate(void *addr, size_t len,
			const struct memprepop_opts *opts,
			struct memprepop_result *res)
{
	long page_size = sysconf(_SC_PAGESIZE);
	struct mpl_progress progress;
	int fd = -ENODEV;
	int ret;

	ret = mpl_check_args(addr, len, opts);
	if (ret)
		return ret;
	len = (len + page_size - 1) & ~(size_t)(page_size - 1);
	if (!(opts->flags & MEMPREPOP_OPT_FALLBACK))
		fd = mpl_device_fd();
	res->backend = fd >= 0 ? MEMPREPOP_BACKEND_MODULE :
				 MEMPREPOP_BACKEND_FALLBACK;
	if (opts->node_pages)
		memset(opts->node_pages, 0,
		       opts->nr_nodes * sizeof(*opts->node_pages));
	if (!len)
		return 0;
	/* Before locking: an unsupported call leaves the range as it was */
	if (fd < 0 && !mpl_fallback_supported())
		return -EOPNOTSUPP;
	mpl_progress_init(&progress, opts, len);

	/*
	 * Lock-on-fault first: mlock2() does the RLIMIT_MEMLOCK check and the
	 * accounting, and each page is then locked as it is faulted in on the
	 * node its policy selects, never locked first and moved later.
	 */
	if ((opts->flags & MEMPREPOP_OPT_LOCK) &&
	    mlock2(addr, len, MLOCK_ONFAULT))
		return -errno;

	if (fd >= 0)
		ret = mpl_device_populate(fd, addr, len, opts, res, &progress);
	else
		ret = mpl_fallback_populate(addr, len, opts, res, &progress);
	mpl_progress_final(&progress, res->populated);
	return ret;
}

int memprepop_populate(void *addr, size_t len,
		       const struct memprepop_opts *opts,
		       struct memprepop_result *res)
{
	struct memprepop_result ours = { .size = sizeof(ours) };
	struct memprepop_opts copy;
	uint64_t t0 = mpl_now_ns();
	int ret;

	if (res && res->size < MPL_RESULT_SIZE_VER0)
		return -EINVAL;
	ret = mpl_opts_copy(&copy, opts);
	if (!ret)
		ret = mpl_populate(addr, len, &copy, &ours);
	ours.nsecs = mpl_now_ns() - t0;
	if (res)
		mpl_result_copy(res, &ours);
	return ret;
}
