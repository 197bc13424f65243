// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libmemprepop: touching pages, for kernels without MADV_POPULATE_WRITE
 * (before Linux 5.14), when the caller opts in (MEMPREPOP_OPT_TOUCH).
 *
 * Each page is written with an atomic add of zero, which faults it in
 * writable without changing what it holds, even if another thread writes it
 * at the same time. A fault that fails raises SIGBUS (a hugetlb pool
 * exhausted) or SIGSEGV: for the duration, both are caught and turned into
 * -EFAULT for the thread that took them, like madvise reports them. The
 * process's own handlers are restored after, and, the handlers being
 * process-wide, such calls are serialised by this file's lock.
 *
 * Holes and mappings that cannot be written are found first from
 * /proc/self/maps, and reported as madvise does (-ENOMEM, -EINVAL).
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

static pthread_mutex_t mpp_touch_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned int mpp_touch_users;
static struct sigaction mpp_old_bus, mpp_old_segv;
static __thread sigjmp_buf *mpp_touch_jmp;

static void mpp_touch_signal(int sig)
{
	(void)sig;
	if (mpp_touch_jmp)
		siglongjmp(*mpp_touch_jmp, 1);
	/* Not ours: the process's own handler would have run; die as it would */
	signal(sig, SIG_DFL);
	raise(sig);
}

static void mpp_touch_enter(void)
{
	struct sigaction sa;

	pthread_mutex_lock(&mpp_touch_lock);
	if (!mpp_touch_users++) {
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = mpp_touch_signal;
		sigemptyset(&sa.sa_mask);
		sigaction(SIGBUS, &sa, &mpp_old_bus);
		sigaction(SIGSEGV, &sa, &mpp_old_segv);
	}
	pthread_mutex_unlock(&mpp_touch_lock);
}

static void mpp_touch_leave(void)
{
	pthread_mutex_lock(&mpp_touch_lock);
	if (!--mpp_touch_users) {
		sigaction(SIGBUS, &mpp_old_bus, NULL);
		sigaction(SIGSEGV, &mpp_old_segv, NULL);
	}
	pthread_mutex_unlock(&mpp_touch_lock);
}

/*
 * How much of [p, p + len) is mapped writable, as /proc/self/maps says:
 * returns that many bytes from p, with *err the errno madvise gives for
 * what follows (-ENOMEM for a hole, -EINVAL for a mapping it refuses).
 */
static size_t mpp_writable_prefix(char *p, size_t len, int *err)
{
	uintptr_t pos = (uintptr_t)p, end = pos + len;
	FILE *f = fopen("/proc/self/maps", "re");
	char line[512];

	*err = 0;
	if (!f) {
		*err = -errno;
		return 0;
	}
	while (pos < end && fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;
		char perms[5];

		if (sscanf(line, "%lx-%lx %4s", &lo, &hi, perms) != 3 ||
		    hi <= pos)
			continue;
		if (lo > pos) {
			*err = -ENOMEM;
			break;
		}
		if (perms[1] != 'w') {
			*err = -EINVAL;
			break;
		}
		pos = hi;
	}
	fclose(f);
	if (pos < end && !*err)
		*err = -ENOMEM;
	return (pos < end ? pos : end) - (uintptr_t)p;
}

int mpp_touch_range(char *p, size_t len, size_t *done)
{
	long page_size = sysconf(_SC_PAGESIZE);
	volatile size_t off = 0;
	sigjmp_buf jmp;
	size_t ok;
	int err;

	ok = mpp_writable_prefix(p, len, &err);
	mpp_touch_enter();
	if (sigsetjmp(jmp, 1)) {
		/* A fault failed at p + off */
		mpp_touch_jmp = NULL;
		mpp_touch_leave();
		*done = off;
		return -EFAULT;
	}
	mpp_touch_jmp = &jmp;
	for (; off < ok; off += page_size)
		__atomic_fetch_add((char *)p + off, 0, __ATOMIC_RELAXED);
	mpp_touch_jmp = NULL;
	mpp_touch_leave();
	*done = ok;
	return err;
}
