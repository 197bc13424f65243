/* SPDX-License-Identifier: GPL-2.0 */
/*
 * userfaultfd for the tests: arm a range for missing faults, and a thread
 * that answers them with zeroed pages, as a VMM's postcopy handler would.
 */
#ifndef MEMPREPOP_UFFD_HELPERS_H
#define MEMPREPOP_UFFD_HELPERS_H

#include <linux/userfaultfd.h>
#include <poll.h>
#include <sys/syscall.h>

#include "memprepop_test.h"

/*
 * @faults counts the pages answered, after each answer has woken the
 * thread that faulted: read it once the handler thread is joined.
 */
struct uffd_handler {
	int uffd;
	int faults;
	char *zero;
	volatile bool stop;
};

static inline void *uffd_serve(void *arg)
{
	struct uffd_handler *h = arg;
	struct uffd_msg msg;

	while (!h->stop) {
		struct pollfd pfd = { .fd = h->uffd, .events = POLLIN };
		struct uffdio_copy copy;

		if (poll(&pfd, 1, 100) <= 0)
			continue;
		if (read(h->uffd, &msg, sizeof(msg)) != sizeof(msg))
			return NULL;
		if (msg.event != UFFD_EVENT_PAGEFAULT)
			continue;
		copy.dst = msg.arg.pagefault.address & ~(page_size() - 1);
		copy.src = (uintptr_t)h->zero;
		copy.len = page_size();
		copy.mode = 0;
		if (!ioctl(h->uffd, UFFDIO_COPY, &copy)) {
			h->faults++;
		} else {
			struct uffdio_range wake = {
				.start = copy.dst, .len = page_size(),
			};

			ioctl(h->uffd, UFFDIO_WAKE, &wake);
		}
	}
	return NULL;
}

static inline int uffd_arm(void *p, size_t len, uint64_t features)
{
	struct uffdio_api api = { .api = UFFD_API, .features = features };
	struct uffdio_register reg = {
		.range = { .start = (uintptr_t)p, .len = len },
		.mode = UFFDIO_REGISTER_MODE_MISSING,
	};
	int uffd = syscall(__NR_userfaultfd, O_CLOEXEC | O_NONBLOCK);

	if (uffd < 0)
		return -1;
	if (ioctl(uffd, UFFDIO_API, &api) || ioctl(uffd, UFFDIO_REGISTER, &reg)) {
		close(uffd);
		return -1;
	}
	return uffd;
}

#endif /* MEMPREPOP_UFFD_HELPERS_H */
