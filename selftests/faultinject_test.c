// SPDX-License-Identifier: GPL-2.0
/*
 * Allocation failures in the middle of a populate, from the kernel's fault
 * injection (Documentation/fault-injection/fault-injection.rst): failslab
 * and fail_page_alloc with task-filter, so that only this process and the
 * workers it started fail, once a budget ("space") has been allocated. The
 * call must end as madvise(MADV_POPULATE_WRITE) would under the same
 * failure: ENOMEM, with "populated" exact (every page before it present),
 * and the module's references all dropped. Leaks are kmemleak's to find:
 * the test VM scans for them after the run.
 *
 * Needs CONFIG_FAULT_INJECTION_DEBUG_FS (the debug kernel of make
 * check-debug); skipped elsewhere.
 */
#define _GNU_SOURCE
#include <sys/syscall.h>

#include "kselftest_harness.h"
#include "memprepop_test.h"
#include "worker_helpers.h"

#define DEBUGFS		"/sys/kernel/debug/"
#define RANGE		(32 * MiB)

static int attr(const char *inj, const char *name, const char *val)
{
	char path[128];

	snprintf(path, sizeof(path), DEBUGFS "%s/%s", inj, name);
	return write_file(path, val);
}

/* Arm @inj for this task (and its workers) once @space is used up */
static int arm(const char *inj, unsigned long space)
{
	char buf[32];
	int ret;

	snprintf(buf, sizeof(buf), "%lu", space);
	ret = attr(inj, "probability", "0") ?:
	      attr(inj, "interval", "1") ?:
	      attr(inj, "times", "-1") ?:
	      attr(inj, "verbose", "0") ?:
	      attr(inj, "task-filter", "Y") ?:
	      attr(inj, "ignore-gfp-wait", "N") ?:
	      attr(inj, "space", buf);
	if (!ret && !strcmp(inj, "fail_page_alloc"))
		ret = attr(inj, "ignore-gfp-highmem", "N") ?:
		      attr(inj, "min-order", "0");
	return ret ?: attr(inj, "probability", "100");
}

static void disarm(const char *inj)
{
	attr(inj, "probability", "0");
}

static long module_refcnt(void)
{
	return read_long("/sys/module/memprepop/refcnt");
}

/*
 * Workers, kept or not, that still carry a call's fault-injection filter
 * (/proc/TID/make-it-fail): once the call has returned, none should, or
 * they fail allocations of their idle life and of later callers' calls.
 */
static int failing_workers(void)
{
	struct worker_stat ws[64];
	int n = scan_workers(ws, 64), bad = 0;

	for (int i = 0; i < n && i < 64; i++) {
		char path[64];

		snprintf(path, sizeof(path), "/proc/%d/make-it-fail", ws[i].tid);
		bad += read_long(path) > 0;
	}
	return bad;
}

/*
 * The module's references: the open files' only. A worker holds none (its
 * file's release stops it first, and the file holds the module), so a
 * failed call must leave the count where it was, workers kept or not.
 * Waits up to 2 s for it to be @want, and returns it.
 */
static long settled_refcnt(long want)
{
	long n = module_refcnt();

	for (int i = 0; i < 200 && n != want; i++) {
		usleep(10000);
		n = module_refcnt();
	}
	return n;
}

/*
 * Runs @call with make-it-fail set for this thread only: the writes go to
 * an fd opened beforehand, so that nothing between them allocates.
 */
struct failing {
	int mif;
};

static void failing_begin(struct failing *f)
{
	if (write(f->mif, "1", 1) != 1)
		f->mif = -1;
}

static void failing_end(struct failing *f)
{
	if (f->mif >= 0 && write(f->mif, "0", 1) != 1)
		f->mif = -1;
}

FIXTURE(inject) {
	int fd;
	char *buf;
	struct failing f;
};

/*
 * The budgets before failures start. fail_page_alloc counts "space" in
 * pages (1 << order, whatever its documentation says), failslab in bytes of
 * objects: the range's 8192 pages run out of the first part way through;
 * the second hits the module's own allocations, one after another, and
 * those of the fault path.
 */
static const unsigned long page_budgets[] = { 0, 16, 256, 1024, 3072, 6144 };
static const unsigned long slab_budgets[] = {
	0, 64, 256, 512, 1024, 2048, 4096, 16384,
};

FIXTURE_VARIANT(inject) {
	const char *inj;
	const unsigned long *budgets;
	unsigned int nr_budgets;
	uint64_t flags;
	unsigned int max_workers;
};

#define PAGE_BUDGETS	.inj = "fail_page_alloc", .budgets = page_budgets, \
			.nr_budgets = sizeof(page_budgets) / sizeof(long)
#define SLAB_BUDGETS	.inj = "failslab", .budgets = slab_budgets, \
			.nr_budgets = sizeof(slab_budgets) / sizeof(long)

FIXTURE_VARIANT_ADD(inject, page_alloc) {
	PAGE_BUDGETS,
};

FIXTURE_VARIANT_ADD(inject, page_alloc_one_worker) {
	PAGE_BUDGETS,
	.max_workers = 1,
};

FIXTURE_VARIANT_ADD(inject, page_alloc_lock) {
	PAGE_BUDGETS,
	.flags = MEMPREPOP_F_REQUIRE_MLOCKED,
};

FIXTURE_VARIANT_ADD(inject, slab) {
	SLAB_BUDGETS,
};

FIXTURE_VARIANT_ADD(inject, slab_lock) {
	SLAB_BUDGETS,
	.flags = MEMPREPOP_F_REQUIRE_MLOCKED,
};

FIXTURE_SETUP(inject)
{
	char path[64];

	self->fd = open(MEMPREPOP_DEVICE, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, self->fd);
	snprintf(path, sizeof(path), "/proc/%ld/task/%ld/make-it-fail",
		 (long)getpid(), (long)syscall(SYS_gettid));
	/* Only with CONFIG_FAULT_INJECTION: the test skips without it */
	self->f.mif = open(path, O_WRONLY | O_CLOEXEC);
	self->buf = NULL;
}

FIXTURE_TEARDOWN(inject)
{
	disarm(variant->inj);
	if (self->buf)
		munmap(self->buf, RANGE);
	close(self->f.mif);
	close(self->fd);
}

/* A fresh range; locked on fault when the variant locks */
static char *fresh_range(const FIXTURE_VARIANT(inject) *variant)
{
	char *p = mmap(NULL, RANGE, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	if ((variant->flags & MEMPREPOP_F_REQUIRE_MLOCKED) &&
	    syscall(SYS_mlock2, p, RANGE, MLOCK_ONFAULT)) {
		munmap(p, RANGE);
		return NULL;
	}
	return p;
}

/*
 * Failures from the first allocation on, then after a budget that runs out
 * in the middle of the range: ENOMEM or success, never anything else, and
 * "populated" exact.
 *
 * Only the debug kernel has fault injection, where under TCG the slab
 * variants' eight budgets took longer than the harness's default 30 s.
 */
#define SLOW	3600
TEST_F_TIMEOUT(inject, enomem_and_exact_populated, SLOW)
{
	unsigned int failed = 0, partial = 0, i;
	long refs = settled_refcnt(module_refcnt());
	char path[64];

	snprintf(path, sizeof(path), DEBUGFS "%s/space", variant->inj);
	if (access(path, W_OK))
		SKIP(return, "no %s (CONFIG_FAULT_INJECTION_DEBUG_FS)",
		     variant->inj);
	ASSERT_LE(0, self->f.mif);

	for (i = 0; i < variant->nr_budgets; i++) {
		struct memprepop_populate req;
		size_t psz = page_size(), upto;
		int ret, ref;

		/* The reference: madvise under the same failure */
		self->buf = fresh_range(variant);
		ASSERT_NE(NULL, self->buf);
		ASSERT_EQ(0, arm(variant->inj, variant->budgets[i]));
		failing_begin(&self->f);
		ref = madvise_populate_write(self->buf, RANGE);
		failing_end(&self->f);
		disarm(variant->inj);
		ASSERT_LE(0, self->f.mif);
		ASSERT_EQ(0, munmap(self->buf, RANGE));

		self->buf = fresh_range(variant);
		ASSERT_NE(NULL, self->buf);
		ASSERT_EQ(0, arm(variant->inj, variant->budgets[i]));
		failing_begin(&self->f);
		ret = ioc_populate_workers(self->fd, self->buf, RANGE,
					   variant->flags,
					   variant->max_workers, &req);
		failing_end(&self->f);
		disarm(variant->inj);
		ASSERT_LE(0, self->f.mif);
		EXPECT_EQ(0, failing_workers());

		TH_LOG("budget %lu: madvise %d, ioctl %d, populated %llu",
		       variant->budgets[i], ref, ret,
		       (unsigned long long)req.populated);
		/* No budget: both fail at once, as madvise does */
		if (!variant->budgets[i]) {
			EXPECT_EQ(-ENOMEM, ref);
			EXPECT_EQ(-ENOMEM, ret);
		}
		EXPECT_TRUE(ret == 0 || ret == -ENOMEM);
		EXPECT_TRUE(ref == 0 || ref == -ENOMEM);
		EXPECT_EQ(0, req.populated % psz);
		if (ret == 0) {
			EXPECT_EQ(RANGE, req.populated);
		} else {
			failed++;
			partial += req.populated > 0;
			EXPECT_GT(RANGE, req.populated);
		}
		upto = req.populated <= RANGE ? req.populated : RANGE;
		/* Everything before "populated" is there */
		EXPECT_EQ(upto / psz, present_pages(self->buf, upto));
		/* One worker goes in order: it stopped right there */
		if (ret && variant->max_workers == 1)
			EXPECT_EQ(0, present_pages(self->buf + upto, psz));
		/* No reference but the file's */
		EXPECT_EQ(refs, settled_refcnt(refs));

		/* And the range still populates once the failures stop */
		EXPECT_EQ(0, ioc_populate(self->fd, self->buf, RANGE,
					  variant->flags, &req));
		EXPECT_EQ(RANGE / psz, present_pages(self->buf, RANGE));
		ASSERT_EQ(0, munmap(self->buf, RANGE));
		self->buf = NULL;
	}
	/* The injection did bite; for pages, part of the way through too */
	TH_LOG("%u of %u calls failed, %u part of the way through", failed,
	       variant->nr_budgets, partial);
	EXPECT_LE(1, failed);
	if (variant->budgets == page_budgets)
		EXPECT_LE(1, partial);
}

TEST_HARNESS_MAIN
