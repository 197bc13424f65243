// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libmemprepop: the public one-shot populate calls, one range or many, and
 * what the library is: its version, its flags, its backend.
 */
#include "internal.h"

const char *memprepop_version(void)
{
	return MEMPREPOP_VERSION;
}

uint32_t memprepop_opt_flags(void)
{
	return MPL_OPT_FLAGS;
}

int memprepop_backend(void)
{
	return mpl_dev_fd() >= 0 ? MEMPREPOP_BACKEND_MODULE :
				      MEMPREPOP_BACKEND_FALLBACK;
}

const char *memprepop_backend_name(int backend)
{
	switch (backend) {
	case MEMPREPOP_BACKEND_MODULE:
		return "module";
	case MEMPREPOP_BACKEND_FALLBACK:
		return "fallback";
	case MEMPREPOP_BACKEND_REMOTE:
		return "remote";
	default:
		return "none";
	}
}

/*
 * The one-shot calls: a context on the stack, with the cached descriptor or
 * threads of their own, chosen by the call's options, and a request on it.
 */
int memprepop_populate_ranges(struct memprepop_range *ranges, unsigned int nr,
			      const struct memprepop_opts *opts,
			      struct memprepop_result *res)
{
	struct memprepop_ctx ctx;
	int ret;

	ret = mpl_ctx_init(&ctx, mpl_opts_flags(opts) & MEMPREPOP_OPT_FALLBACK,
			   true);
	if (ret) {
		/* Nothing ran: the result says so, as after any failure */
		struct memprepop_result none = { .size = sizeof(none) };

		if (res && res->size >= MPL_RESULT_SIZE_VER0)
			mpl_result_copy(res, &none);
		return ret;
	}
	ret = memprepop_ctx_populate(&ctx, ranges, nr, opts, res);
	mpl_ctx_fini(&ctx);
	return ret;
}

int memprepop_populate(void *addr, size_t len,
		       const struct memprepop_opts *opts,
		       struct memprepop_result *res)
{
	struct memprepop_range range = {
		.addr = (uintptr_t)addr,
		.len = len,
	};

	return memprepop_populate_ranges(&range, 1, opts, res);
}
