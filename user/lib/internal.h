/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libmemprepop internals: one backend per file, dispatched by populate.c. */
#ifndef MEMPREPOP_INTERNAL_H
#define MEMPREPOP_INTERNAL_H

#include <memprepop.h>

/* device.c: the cached /dev/memprepop descriptor, or -errno */
int mpp_device_fd(void);
int mpp_device_populate(int fd, void *addr, size_t len,
			const struct memprepop_opts *opts,
			struct memprepop_result *res);

/* fallback.c: threads issuing MADV_POPULATE_WRITE */
int mpp_fallback_populate(void *addr, size_t len,
			  const struct memprepop_opts *opts,
			  struct memprepop_result *res);

#endif /* MEMPREPOP_INTERNAL_H */
