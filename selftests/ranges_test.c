// SPDX-License-Identifier: GPL-2.0
/*
 * Many ranges in one MEMPREPOP_IOC_POPULATE: each range's errno, pages and
 * populated as madvise(MADV_POPULATE_WRITE) of that range alone gives them
 * on an identical mapping; the call's errno the first range's that failed;
 * placement per range; and the array itself checked before anything is done.
 */
#define _GNU_SOURCE
#include <numa.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "memprepop_test.h"

#define SLOW	3600

/* Nodes below @nodes that have CPUs */
static int nodes_with_cpus(int nodes)
{
	struct bitmask *cpus = numa_allocate_cpumask();
	int n = 0;

	for (int i = 0; i < nodes; i++)
		if (!numa_node_to_cpus(i, cpus) && numa_bitmask_weight(cpus))
			n++;
	numa_free_cpumask(cpus);
	return n;
}

static int ioc_ranges(int fd, struct memprepop_range *r, unsigned int nr,
		      struct memprepop_populate *req)
{
	memset(req, 0, sizeof(*req));
	req->ranges = (uintptr_t)r;
	req->nr_ranges = nr;
	req->range_size = sizeof(*r);
	return ioctl(fd, MEMPREPOP_IOC_POPULATE, req) ? -errno : 0;
}

FIXTURE(ranges)
{
	int fd;
};

FIXTURE_SETUP(ranges)
{
	self->fd = open(MEMPREPOP_DEVICE, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, self->fd);
}

FIXTURE_TEARDOWN(ranges)
{
	close(self->fd);
}

/*
 * Layouts that fail in every way madvise() can, and layouts that do not,
 * interleaved, all in one call: each range as madvise() of it alone, and the
 * ones after a failure populated in full.
 */
TEST_F_TIMEOUT(ranges, each_range_like_madvise, SLOW)
{
	static const enum piece layouts[][3] = {
		{ RW, HOLE, RO }, { RW, RW, RW }, { RW, HOLE, RW },
		{ HOLE, NONE, RW }, { RW, HOLE, PAST_EOF }, { RW, RO, RW },
		{ RW, RW, HOLE }, { HOLE, RW, RW }, { RW, RW, RW },
	};
	enum { NL = sizeof(layouts) / sizeof(layouts[0]) };
	struct memprepop_range r[NL + 3];
	size_t len = 3 * PIECE, want_pages[NL];
	struct memprepop_populate req;
	int want[NL], first = 0, ret;
	uint64_t total = 0;
	char *p[NL], *base;

	/*
	 * All layouts side by side in one reservation, so that no hole is
	 * mapped again by the next layout: madvise() of each alone, then
	 * the same layouts afresh at the same addresses for the ioctl. It is
	 * huge page aligned: a transparent huge page faulted for one layout
	 * never covers the end of the one before, which its mapping may have
	 * merged with.
	 */
	base = mmap(NULL, NL * len + HPAGE, PROT_NONE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	ASSERT_NE(MAP_FAILED, base);
	base = (char *)(((uintptr_t)base + HPAGE - 1) & ~(HPAGE - 1));
	for (int l = 0; l < NL; l++) {
		p[l] = lay_out_at(base + l * len, layouts[l], 3);
		ASSERT_NE(NULL, p[l]);
		want[l] = madvise_populate_write(p[l], len);
		want_pages[l] = present_pages(p[l], len);
		if (want[l] && !first)
			first = want[l];
	}
	ASSERT_NE(MAP_FAILED, mmap(base, NL * len, PROT_NONE,
				   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE |
				   MAP_FIXED, -1, 0));
	for (int l = 0; l < NL; l++) {
		ASSERT_NE(NULL, lay_out_at(base + l * len, layouts[l], 3));
		r[l] = (struct memprepop_range){ .addr = (uintptr_t)p[l],
						 .len = len };
	}
	/* A range's own EINVAL, and nothing at all, are a range's too */
	r[NL] = (struct memprepop_range){ .addr = (uintptr_t)p[1] + 1,
					  .len = PIECE };
	r[NL + 1] = (struct memprepop_range){ .addr = -page_size(),
					      .len = 2 * page_size() };
	r[NL + 2] = (struct memprepop_range){ .addr = (uintptr_t)p[1] };

	ret = ioc_ranges(self->fd, r, NL + 3, &req);
	for (int l = 0; l < NL; l++) {
		TH_LOG("layout %d: madvise %d (%zu pages), range %d (%zu pages, populated %llu)",
		       l, want[l], want_pages[l], r[l].error,
		       present_pages(p[l], len),
		       (unsigned long long)r[l].populated);
		EXPECT_EQ(want[l], r[l].error);
		EXPECT_EQ(want_pages[l], present_pages(p[l], len));
		EXPECT_EQ(present_prefix(p[l], len), r[l].populated);
		total += r[l].populated;
	}
	EXPECT_EQ(-EINVAL, r[NL].error);
	EXPECT_EQ(0, r[NL].populated);
	EXPECT_EQ(-EINVAL, r[NL + 1].error);
	EXPECT_EQ(0, r[NL + 2].error);
	EXPECT_EQ(0, r[NL + 2].populated);
	EXPECT_EQ(first, ret);
	EXPECT_EQ(total, req.populated);
	munmap(base, NL * len);
}

/* The first failure by index is the call's, whatever order it happened in */
TEST_F_TIMEOUT(ranges, first_failure_by_index, SLOW)
{
	size_t len = 32 * MiB;
	struct memprepop_range r[3];
	struct memprepop_populate req;
	char *ok = map_anon(len), *ro = map_anon(len);
	char *hole = map_anon(len);

	ASSERT_NE(NULL, ok);
	ASSERT_NE(NULL, ro);
	ASSERT_NE(NULL, hole);
	ASSERT_EQ(0, mprotect(ro, len, PROT_READ));
	ASSERT_EQ(0, munmap(hole, len));
	/* ENOMEM, then a large good range, then EINVAL */
	r[0] = (struct memprepop_range){ .addr = (uintptr_t)hole, .len = len };
	r[1] = (struct memprepop_range){ .addr = (uintptr_t)ok, .len = len };
	r[2] = (struct memprepop_range){ .addr = (uintptr_t)ro, .len = len };
	EXPECT_EQ(-ENOMEM, ioc_ranges(self->fd, r, 3, &req));
	EXPECT_EQ(-ENOMEM, r[0].error);
	EXPECT_EQ(0, r[1].error);
	EXPECT_EQ(len, r[1].populated);
	EXPECT_EQ(len / page_size(), present_pages(ok, len));
	EXPECT_EQ(-EINVAL, r[2].error);
	EXPECT_EQ(len, req.populated);

	r[0] = r[2];
	r[2] = (struct memprepop_range){ .addr = (uintptr_t)hole, .len = len };
	EXPECT_EQ(-EINVAL, ioc_ranges(self->fd, r, 3, &req));
	munmap(ok, len);
	munmap(ro, len);
}

/*
 * A VM's layout: one region bound to each node, one call. Every page lands
 * on its region's node (numa_maps, read from outside), each node's workers
 * take part, and the call's node counts are numa_maps'.
 */
TEST_F_TIMEOUT(ranges, region_per_node_one_call, SLOW)
{
	size_t len = 64 * MiB;
	int nodes = numa_max_node() + 1;
	struct memprepop_range r[TEST_NODES];
	uint64_t counts[TEST_NODES], seen[TEST_NODES];
	struct memprepop_populate req;
	char *p[TEST_NODES];

	if (nodes < 2)
		SKIP(return, "one NUMA node");
	if (nodes > TEST_NODES)
		nodes = TEST_NODES;
	for (int n = 0; n < nodes; n++) {
		unsigned long mask = 1UL << n;

		p[n] = map_anon(len);
		ASSERT_NE(NULL, p[n]);
		ASSERT_EQ(0, mbind(p[n], len, MPOL_BIND, &mask, 64, 0));
		r[n] = (struct memprepop_range){ .addr = (uintptr_t)p[n],
						 .len = len };
	}
	memset(&req, 0, sizeof(req));
	req.ranges = (uintptr_t)r;
	req.nr_ranges = nodes;
	req.range_size = sizeof(r[0]);
	req.node_pages = (uintptr_t)counts;
	req.nr_node_pages = TEST_NODES;
	ASSERT_EQ(0, ioctl(self->fd, MEMPREPOP_IOC_POPULATE, &req));
	EXPECT_EQ(nodes * len, req.populated);
	/* A worker on each node with a CPU (memory-only ones are served) */
	EXPECT_LE(nodes_with_cpus(nodes), req.workers);
	for (int n = 0; n < nodes; n++) {
		ASSERT_EQ(0, numa_maps_nodes(p[n], len, seen, TEST_NODES));
		EXPECT_EQ(len / page_size(), seen[n]) TH_LOG("region %d", n);
		EXPECT_EQ(len / page_size(), counts[n]) TH_LOG("node %d", n);
		EXPECT_EQ(0, r[n].error);
		munmap(p[n], len);
	}
}

/*
 * A balloon's or virtio-mem's pattern: thousands of small runs with gaps.
 * Every run is populated, no gap is.
 */
TEST_F_TIMEOUT(ranges, thousands_of_small_runs, SLOW)
{
	unsigned int nr = 4096, i;
	size_t ps = page_size(), len = 4 * nr * ps, gaps = 0;
	struct memprepop_range *r = calloc(nr, sizeof(*r));
	struct memprepop_populate req;
	char *p = map_anon(len);

	ASSERT_NE(NULL, r);
	ASSERT_NE(NULL, p);
	ASSERT_EQ(0, no_thp(p, len));
	/* Run i: 1 to 3 pages at 4 * i pages; the rest of each 4 a gap */
	for (i = 0; i < nr; i++)
		r[i] = (struct memprepop_range){
			.addr = (uintptr_t)p + 4 * i * ps,
			.len = (1 + i % 3) * ps,
		};
	ASSERT_EQ(0, ioc_ranges(self->fd, r, nr, &req));
	for (i = 0; i < nr; i++) {
		char *run = p + 4 * i * ps;

		EXPECT_EQ(r[i].len, r[i].populated);
		EXPECT_EQ(r[i].len / ps, present_pages(run, r[i].len));
		gaps += present_pages(run + r[i].len, 4 * ps - r[i].len);
	}
	EXPECT_EQ(0, gaps);
	munmap(p, len);
	free(r);
}

/* Ranges need not be ordered nor apart: each is reported as its own */
TEST_F_TIMEOUT(ranges, unordered_and_overlapping, SLOW)
{
	size_t len = 32 * MiB;
	struct memprepop_range r[3];
	struct memprepop_populate req;
	char *p = map_anon(len);

	ASSERT_NE(NULL, p);
	r[0] = (struct memprepop_range){ .addr = (uintptr_t)p + len / 2,
					 .len = len / 2 };
	r[1] = (struct memprepop_range){ .addr = (uintptr_t)p, .len = len };
	r[2] = (struct memprepop_range){ .addr = (uintptr_t)p + len / 4,
					 .len = len / 4 };
	ASSERT_EQ(0, ioc_ranges(self->fd, r, 3, &req));
	for (int i = 0; i < 3; i++)
		EXPECT_EQ(r[i].len, r[i].populated);
	EXPECT_EQ(len + len / 4 * 3, req.populated);
	EXPECT_EQ(len / page_size(), present_pages(p, len));
	munmap(p, len);
}

/*
 * Overlapping ranges over many mappings: planning looks at each range's
 * mappings again, bounded only by the bytes planned. It must let go of
 * mmap_lock as it goes, as madvise() of each range does between ranges
 * (and within one, at each fault): else the process's own munmap() waits
 * for the whole walk, and every reader of its /proc files behind that.
 * A child plans MPP_WALK_RANGES ranges, each over the same
 * MPP_WALK_MAPPINGS mappings of one page (every other one MADV_DONTFORK:
 * mappings the kernel keeps apart, which plan alike), a walk of 10^9
 * mappings; 1 s in, a thread of it maps and unmaps a page ten times
 * (mmap_lock for writing): the slowest must take less than 1 s, and the
 * call must still be going on after them. Before, the first waited for
 * the whole walk (minutes). The child is killed then: the call would go
 * on for minutes.
 */
#define MPP_WALK_RANGES		65536
#define MPP_WALK_MAPPINGS	16384

struct walk_call {
	int fd;
	struct memprepop_range *r;
	volatile bool returned;
};

static void *walk_call(void *arg)
{
	struct walk_call *c = arg;
	struct memprepop_populate req;

	ioc_ranges(c->fd, c->r, MPP_WALK_RANGES, &req);
	c->returned = true;
	return NULL;
}

static void walk_child(int fd, int report)
{
	size_t ps = page_size(), len = MPP_WALK_MAPPINGS * ps;
	struct walk_call c = { .fd = fd };
	double slowest = 0;
	pthread_t t;
	char *p;

	c.r = calloc(MPP_WALK_RANGES, sizeof(*c.r));
	p = map_anon(len);
	if (!c.r || !p)
		_exit(2);
	for (size_t i = 1; i < MPP_WALK_MAPPINGS; i += 2)
		if (madvise(p + i * ps, ps, MADV_DONTFORK))
			_exit(2);
	for (unsigned int i = 0; i < MPP_WALK_RANGES; i++)
		c.r[i] = (struct memprepop_range){ .addr = (uintptr_t)p,
						   .len = len };
	if (pthread_create(&t, NULL, walk_call, &c))
		_exit(2);
	usleep(1000 * 1000);
	for (int i = 0; i < 10; i++) {
		double t0 = now();
		void *q = mmap(NULL, ps, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (q == MAP_FAILED || munmap(q, ps))
			_exit(2);
		if (now() - t0 > slowest)
			slowest = now() - t0;
	}
	/* Timed beside the call, not after it: -2 */
	if (c.returned)
		slowest = -2;
	_exit(write(report, &slowest, sizeof(slowest)) == sizeof(slowest) ?
	      0 : 2);
}

TEST_F_TIMEOUT(ranges, planning_lets_go_of_mmap_lock, SLOW)
{
	double slowest = -1;
	int rep[2], status;
	pid_t pid;

	ASSERT_EQ(0, pipe(rep));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		close(rep[0]);
		walk_child(self->fd, rep[1]);
	}
	close(rep[1]);
	if (!read_within(rep[0], &slowest, sizeof(slowest), 60))
		slowest = -1;
	kill(pid, SIGKILL);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	TH_LOG("%d ranges over the same %d mappings: the slowest of 10 mmap()+munmap() beside the call took %.3f s (-1: none in 60 s, -2: the call was over)",
	       MPP_WALK_RANGES, MPP_WALK_MAPPINGS, slowest);
	EXPECT_LE(0, slowest);
	EXPECT_GT(1.0, slowest);
	close(rep[0]);
}

/* Every misuse of the array fails the call before anything is faulted */
TEST_F(ranges, array_checked)
{
	size_t len = 4 * page_size();
	struct memprepop_info info;
	struct {
		struct memprepop_range r;
		uint64_t future;
	} big[2];
	struct memprepop_range r = { 0 }, *ro;
	struct memprepop_populate req;
	char *p = map_anon(len);

	ASSERT_NE(NULL, p);
	ASSERT_EQ(0, ioctl(self->fd, MEMPREPOP_IOC_INFO, &info));
	r.addr = (uintptr_t)p;
	r.len = len;

	/* Not readable */
	EXPECT_EQ(-EFAULT, ioc_ranges(self->fd, (void *)8, 1, &req));
	/* Readable, but its outputs not writable */
	ro = mmap(NULL, page_size(), PROT_READ | PROT_WRITE,
		  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, ro);
	*ro = r;
	ASSERT_EQ(0, mprotect(ro, page_size(), PROT_READ));
	EXPECT_EQ(-EFAULT, ioc_ranges(self->fd, ro, 1, &req));
	munmap(ro, page_size());

	/* A range's reserved field */
	r.__reserved = 1;
	EXPECT_EQ(-EINVAL, ioc_ranges(self->fd, &r, 1, &req));
	r.__reserved = 0;

	/* Ranges with addr or len, a count without ranges or the reverse */
	memset(&req, 0, sizeof(req));
	req.ranges = (uintptr_t)&r;
	req.nr_ranges = 1;
	req.range_size = sizeof(r);
	req.len = len;
	EXPECT_EQ(-1, ioctl(self->fd, MEMPREPOP_IOC_POPULATE, &req));
	EXPECT_EQ(EINVAL, errno);
	req.len = 0;
	req.nr_ranges = 0;
	EXPECT_EQ(-1, ioctl(self->fd, MEMPREPOP_IOC_POPULATE, &req));
	EXPECT_EQ(EINVAL, errno);
	req.ranges = 0;
	req.nr_ranges = 1;
	EXPECT_EQ(-1, ioctl(self->fd, MEMPREPOP_IOC_POPULATE, &req));
	EXPECT_EQ(EINVAL, errno);
	/* An entry smaller than the first version's, more than the most */
	req.ranges = (uintptr_t)&r;
	req.range_size = MEMPREPOP_RANGE_SIZE_VER0 - 8;
	EXPECT_EQ(-1, ioctl(self->fd, MEMPREPOP_IOC_POPULATE, &req));
	EXPECT_EQ(EINVAL, errno);
	req.range_size = sizeof(r);
	req.nr_ranges = info.max_ranges + 1;
	EXPECT_EQ(-1, ioctl(self->fd, MEMPREPOP_IOC_POPULATE, &req));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(0, present_pages(p, len));

	/* A newer caller's longer entries: a zero tail works, else E2BIG */
	memset(big, 0, sizeof(big));
	big[0].r = r;
	big[1].r = r;
	big[1].r.len = page_size();
	big[1].future = 1;
	memset(&req, 0, sizeof(req));
	req.ranges = (uintptr_t)big;
	req.nr_ranges = 2;
	req.range_size = sizeof(big[0]);
	EXPECT_EQ(-1, ioctl(self->fd, MEMPREPOP_IOC_POPULATE, &req));
	EXPECT_EQ(E2BIG, errno);
	EXPECT_EQ(0, present_pages(p, len));
	big[1].future = 0;
	EXPECT_EQ(0, ioctl(self->fd, MEMPREPOP_IOC_POPULATE, &req));
	EXPECT_EQ(len, big[0].r.populated);
	EXPECT_EQ(page_size(), big[1].r.populated);
	EXPECT_EQ(0, big[1].future);
	munmap(p, len);
}

TEST_HARNESS_MAIN
