// SPDX-License-Identifier: GPL-2.0
/*
 * Every page lands on the node its memory policy selects, as if the caller
 * had faulted it itself: VMA policies (mbind), task policies
 * (set_mempolicy), the default policy; nothing is migrated afterwards; the
 * workers follow the caller's CPU mask. Needs two NUMA nodes with CPUs.
 */
#define _GNU_SOURCE
#include <numa.h>
#include <numaif.h>
#include <pthread.h>
#include <sched.h>

#include "kselftest_harness.h"
#include "memprepop_test.h"
#include "worker_helpers.h"

#ifndef MPOL_PREFERRED_MANY
#define MPOL_PREFERRED_MANY	5
#endif

#define LEN	(64 * MiB)

/*
 * Pages of [p, p + len) on each of nodes 0 and 1, from numa_maps; all must
 * be present, on those nodes
 */
static int count_nodes(char *p, size_t len, size_t counts[2])
{
	uint64_t n[TEST_NODES];

	counts[0] = counts[1] = 0;
	if (numa_maps_nodes(p, len, n, TEST_NODES) ||
	    n[0] + n[1] != len / page_size())
		return -1;
	counts[0] = n[0];
	counts[1] = n[1];
	return 0;
}

static void pin_to_cpu(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	sched_setaffinity(0, sizeof(set), &set);
}

/* Pages moved by others during a test, at most */
#define MIGRATED_ELSEWHERE	32

FIXTURE(place)
{
	int fd;
	char *p;
	long migrated;
};

FIXTURE_SETUP(place)
{
	if (numa_available() < 0 || numa_max_node() < 1 ||
	    numa_num_configured_cpus() < 2)
		SKIP(return, "needs two NUMA nodes and two CPUs");
	self->fd = open(MEMPREPOP_DEVICE, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, self->fd);
	self->p = mmap(NULL, LEN, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, self->p);
	/* Base pages, so that the interleave formula is per 4 KiB page */
	ASSERT_EQ(0, no_thp(self->p, LEN));
	self->migrated = proc_field("/proc/vmstat", "pgmigrate_success");
}

FIXTURE_TEARDOWN(place)
{
	if (_metadata->skip)
		return;
	/*
	 * Nothing was placed wrong and moved afterwards. The counter is the
	 * machine's: kcompactd or NUMA balancing may move a few pages of
	 * others meanwhile (seen on the debug kernel), while placing this
	 * range wrong and fixing it up would move thousands.
	 */
	EXPECT_GT(MIGRATED_ELSEWHERE,
		  proc_field("/proc/vmstat", "pgmigrate_success") -
		  self->migrated);
	munmap(self->p, LEN);
	close(self->fd);
}

#define RETURN_IF_SKIPPED() do { if (_metadata->skip) return; } while (0)

static int mbind_nodes(void *p, size_t len, int mode, unsigned long mask)
{
	return mbind(p, len, mode, &mask, 8 * sizeof(mask), 0);
}

static int populate(int fd, void *p, size_t len, unsigned int max_workers,
		    struct memprepop_populate *req)
{
	return ioc_populate_workers(fd, p, len, 0, max_workers, req);
}

TEST_F(place, vma_bind_each_node)
{
	struct memprepop_populate req;
	size_t counts[2];

	RETURN_IF_SKIPPED();
	ASSERT_EQ(0, mbind_nodes(self->p, LEN / 2, MPOL_BIND, 1 << 0));
	ASSERT_EQ(0, mbind_nodes(self->p + LEN / 2, LEN / 2, MPOL_BIND, 1 << 1));
	ASSERT_EQ(0, populate(self->fd, self->p, LEN, 0, &req));
	EXPECT_EQ(LEN, req.populated);
	EXPECT_EQ(2, req.workers);
	ASSERT_EQ(0, count_nodes(self->p, LEN / 2, counts));
	EXPECT_EQ(LEN / 2 / page_size(), counts[0]);
	ASSERT_EQ(0, count_nodes(self->p + LEN / 2, LEN / 2, counts));
	EXPECT_EQ(LEN / 2 / page_size(), counts[1]);
}

/*
 * Bind over both nodes: spread over them by node-local workers. A worker
 * that finishes its node's share takes chunks of the other, so the split
 * follows speed, a chunk at a time: each node's worker takes one at least.
 * A call of LEN is cut into eight chunks (MPP_PLAN_CHUNKS): at least an
 * eighth on each node; under TCG a worker that starts late has seen 7:1.
 */
TEST_F(place, vma_bind_both_nodes_spreads)
{
	struct memprepop_populate req;
	size_t counts[2];

	RETURN_IF_SKIPPED();
	ASSERT_EQ(0, mbind_nodes(self->p, LEN, MPOL_BIND, 3));
	ASSERT_EQ(0, populate(self->fd, self->p, LEN, 0, &req));
	ASSERT_EQ(0, madvise(self->p, LEN, MADV_DONTNEED));
	ASSERT_EQ(0, populate(self->fd, self->p, LEN, 0, &req));
	EXPECT_EQ(2, req.workers);
	ASSERT_EQ(0, count_nodes(self->p, LEN, counts));
	TH_LOG("node 0: %zu pages, node 1: %zu pages", counts[0], counts[1]);
	EXPECT_EQ(LEN / page_size(), counts[0] + counts[1]);
	EXPECT_LE(LEN / page_size() / 8, counts[0]);
	EXPECT_LE(LEN / page_size() / 8, counts[1]);
}

TEST_F(place, vma_preferred)
{
	struct memprepop_populate req;
	size_t counts[2];

	RETURN_IF_SKIPPED();
	pin_to_cpu(0);
	ASSERT_EQ(0, mbind_nodes(self->p, LEN, MPOL_PREFERRED, 1 << 1));
	ASSERT_EQ(0, populate(self->fd, self->p, LEN, 0, &req));
	ASSERT_EQ(0, count_nodes(self->p, LEN, counts));
	EXPECT_EQ(LEN / page_size(), counts[1]);
}

TEST_F(place, vma_preferred_many)
{
	struct memprepop_populate req;
	size_t counts[2];

	RETURN_IF_SKIPPED();
	pin_to_cpu(0);
	if (mbind_nodes(self->p, LEN, MPOL_PREFERRED_MANY, 1 << 1))
		SKIP(return, "no MPOL_PREFERRED_MANY: %s", strerror(errno));
	ASSERT_EQ(0, populate(self->fd, self->p, LEN, 0, &req));
	ASSERT_EQ(0, count_nodes(self->p, LEN, counts));
	EXPECT_EQ(LEN / page_size(), counts[1]);
}

/* Interleave: the very node the kernel's formula gives for each offset */
TEST_F(place, vma_interleave_per_page_formula)
{
	size_t n = LEN / page_size(), i, wrong = 0;
	struct memprepop_populate req;
	int *nodes;

	RETURN_IF_SKIPPED();
	ASSERT_EQ(0, mbind_nodes(self->p, LEN, MPOL_INTERLEAVE, 3));
	ASSERT_EQ(0, populate(self->fd, self->p, LEN, 0, &req));
	EXPECT_EQ(2, req.workers);
	nodes = malloc(n * sizeof(*nodes));
	ASSERT_NE(NULL, nodes);
	ASSERT_EQ(0, page_nodes(self->p, LEN, nodes));
	/* Anonymous VMAs: vm_pgoff is the page number of the address */
	for (i = 0; i < n; i++)
		if (nodes[i] != (int)((((uintptr_t)self->p) / page_size() + i) % 2))
			wrong++;
	EXPECT_EQ(0, wrong);
	free(nodes);
}

/* MPOL_LOCAL on the VMA: local to the caller, whichever node it is on */
TEST_F(place, vma_local_is_callers_node)
{
	struct memprepop_populate req;
	size_t counts[2];

	RETURN_IF_SKIPPED();
	pin_to_cpu(1);
	ASSERT_EQ(0, mbind(self->p, LEN, MPOL_LOCAL, NULL, 0, 0));
	ASSERT_EQ(0, populate(self->fd, self->p, LEN, 0, &req));
	ASSERT_EQ(0, count_nodes(self->p, LEN, counts));
	EXPECT_EQ(LEN / page_size(), counts[1]);
}

/* No policy at all: the caller's node, not the workers' */
TEST_F(place, default_is_callers_node)
{
	struct memprepop_populate req;
	size_t counts[2];

	RETURN_IF_SKIPPED();
	for (int cpu = 0; cpu < 2; cpu++) {
		char *q = map_anon(LEN);

		ASSERT_NE(NULL, q);
		pin_to_cpu(cpu);
		ASSERT_EQ(0, populate(self->fd, q, LEN, 0, &req));
		ASSERT_EQ(0, count_nodes(q, LEN, counts));
		EXPECT_EQ(LEN / page_size(), counts[cpu]);
		munmap(q, LEN);
	}
}

/* The task policy of the calling thread, not of whoever created a worker */
TEST_F(place, task_bind)
{
	struct memprepop_populate req;
	unsigned long mask = 1 << 1;
	size_t counts[2];

	RETURN_IF_SKIPPED();
	pin_to_cpu(0);
	ASSERT_EQ(0, set_mempolicy(MPOL_BIND, &mask, 8 * sizeof(mask)));
	ASSERT_EQ(0, populate(self->fd, self->p, LEN, 0, &req));
	ASSERT_EQ(0, set_mempolicy(MPOL_DEFAULT, NULL, 0));
	ASSERT_EQ(0, count_nodes(self->p, LEN, counts));
	EXPECT_EQ(LEN / page_size(), counts[1]);
}

TEST_F(place, task_preferred)
{
	struct memprepop_populate req;
	unsigned long mask = 1 << 0;
	size_t counts[2];

	RETURN_IF_SKIPPED();
	pin_to_cpu(1);
	ASSERT_EQ(0, set_mempolicy(MPOL_PREFERRED, &mask, 8 * sizeof(mask)));
	ASSERT_EQ(0, populate(self->fd, self->p, LEN, 0, &req));
	ASSERT_EQ(0, set_mempolicy(MPOL_DEFAULT, NULL, 0));
	ASSERT_EQ(0, count_nodes(self->p, LEN, counts));
	EXPECT_EQ(LEN / page_size(), counts[0]);
}

TEST_F(place, task_interleave)
{
	struct memprepop_populate req;
	unsigned long mask = 3;
	size_t counts[2], n = LEN / page_size();

	RETURN_IF_SKIPPED();
	ASSERT_EQ(0, set_mempolicy(MPOL_INTERLEAVE, &mask, 8 * sizeof(mask)));
	ASSERT_EQ(0, populate(self->fd, self->p, LEN, 0, &req));
	ASSERT_EQ(0, set_mempolicy(MPOL_DEFAULT, NULL, 0));
	EXPECT_EQ(2, req.workers);
	ASSERT_EQ(0, count_nodes(self->p, LEN, counts));
	EXPECT_EQ(n, counts[0] + counts[1]);
	/* Round robin per worker: within a few pages of half each */
	EXPECT_GE(16, labs((long)counts[0] - (long)counts[1]));
}

/* Workers never run outside the caller's CPU mask */
TEST_F(place, workers_follow_cpu_mask)
{
	struct memprepop_populate req;
	size_t counts[2];

	RETURN_IF_SKIPPED();
	pin_to_cpu(0);
	ASSERT_EQ(0, mbind_nodes(self->p, LEN, MPOL_BIND, 3));
	ASSERT_EQ(0, populate(self->fd, self->p, LEN, 0, &req));
	/* Only node 0 has a CPU the caller may use: one worker, there */
	EXPECT_EQ(1, req.workers);
	ASSERT_EQ(0, count_nodes(self->p, LEN, counts));
	EXPECT_EQ(LEN / page_size(), counts[0]);
}

/* A memory-only node (mbind to a node whose CPUs are not allowed) */
TEST_F(place, node_without_allowed_cpus_is_served)
{
	struct memprepop_populate req;
	size_t counts[2];

	RETURN_IF_SKIPPED();
	pin_to_cpu(0);
	ASSERT_EQ(0, mbind_nodes(self->p, LEN, MPOL_BIND, 1 << 1));
	ASSERT_EQ(0, populate(self->fd, self->p, LEN, 0, &req));
	EXPECT_EQ(1, req.workers);
	ASSERT_EQ(0, count_nodes(self->p, LEN, counts));
	EXPECT_EQ(LEN / page_size(), counts[1]);
}

/*
 * The CPUs memprepop workers run on while they work, from /proc/PID/stat.
 * A worker kept idle from an earlier call wakes now and then to check
 * whether it is still wanted, on whichever CPU it was left on: only the
 * threads whose CPU time grew by a few ticks over the call count as this
 * call's workers.
 */
#define SAMPLER_THREADS	64
#define WORKED_TICKS	3

struct sampled_worker {
	int tid;
	unsigned long first_ticks, last_ticks;
	unsigned long cpus;	/* bit N: seen running on CPU N */
};

struct cpu_sampler {
	pthread_t tid;
	volatile bool stop;
	volatile bool ready;	/* one scan done: it is up to speed */
	int nr;
	struct sampled_worker w[SAMPLER_THREADS];
};

static struct sampled_worker *sampled(struct cpu_sampler *s,
				      const struct worker_stat *ws)
{
	for (int i = 0; i < s->nr; i++)
		if (s->w[i].tid == ws->tid)
			return &s->w[i];
	if (s->nr == SAMPLER_THREADS)
		return NULL;
	s->w[s->nr] = (struct sampled_worker){ .tid = ws->tid,
					       .first_ticks = ws->ticks };
	return &s->w[s->nr++];
}

static void *sample_cpus(void *arg)
{
	struct cpu_sampler *s = arg;
	struct worker_stat ws[SAMPLER_THREADS];

	while (!s->stop) {
		int n = scan_workers(ws, SAMPLER_THREADS);

		for (int i = 0; i < n && i < SAMPLER_THREADS; i++) {
			struct sampled_worker *w = sampled(s, &ws[i]);

			if (!w)
				continue;
			w->last_ticks = ws[i].ticks;
			if (!worker_idle(&ws[i]) && ws[i].cpu < 64)
				w->cpus |= 1UL << ws[i].cpu;
		}
		s->ready = true;
		usleep(1000);
	}
	return NULL;
}

/* The CPUs of the sampled threads that worked */
static unsigned long worked_cpus(const struct cpu_sampler *s)
{
	unsigned long cpus = 0;

	for (int i = 0; i < s->nr; i++) {
		const struct sampled_worker *w = &s->w[i];
		bool worked = w->last_ticks - w->first_ticks >= WORKED_TICKS;

		fprintf(stderr, "# worker %d: %lu ticks, seen on CPUs %#lx%s\n",
			       w->tid, w->last_ticks - w->first_ticks, w->cpus,
			       worked ? "" : ", not counted");
		if (worked)
			cpus |= w->cpus;
	}
	return cpus;
}

/* Populate with @flags and @max_workers; *@cpus: where workers were seen */
static int populate_seen(int fd, void *p, size_t len, uint64_t flags,
			 unsigned int max_workers,
			 struct memprepop_populate *req, unsigned long *cpus)
{
	struct sched_param prio = { .sched_priority = 1 };
	struct cpu_sampler s = { 0 };
	pthread_attr_t attr;
	int ret;

	/*
	 * Real-time, so that it gets a CPU while the workers keep both busy;
	 * the workers take the calling thread's policy, not this one's
	 */
	pthread_attr_init(&attr);
	pthread_attr_setinheritsched(&attr, PTHREAD_EXPLICIT_SCHED);
	pthread_attr_setschedpolicy(&attr, SCHED_FIFO);
	pthread_attr_setschedparam(&attr, &prio);
	ret = pthread_create(&s.tid, &attr, sample_cpus, &s);
	pthread_attr_destroy(&attr);
	if (ret)
		return -ret;
	while (!s.ready)
		usleep(1000);
	ret = ioc_populate_workers(fd, p, len, flags, max_workers, req);
	s.stop = true;
	pthread_join(s.tid, NULL);
	*cpus = worked_cpus(&s);
	return ret;
}

/*
 * Bound to one node whose CPUs are fewer than the workers asked for (QEMU's
 * prealloc-threads for a backend bound to a node): with
 * MEMPREPOP_F_BORROW_CPUS the other node's CPU helps, and the pages still
 * all go to the bound node. Without the flag, without a count asked for, or
 * with only the bound node's CPUs allowed, no helper. Where the workers ran
 * is read from outside, from /proc/PID/stat. Four calls of 256 MiB, two
 * of them sampled: past the harness's default 30 s under KASAN, TCG and
 * preempt=full, so the runner's timeout bounds it.
 */
TEST_F_TIMEOUT(place, borrow_cpus_helpers, 3600)
{
	/* Long enough for the sampler to see the workers at work */
	size_t len = 4 * LEN;
	struct memprepop_populate req;
	unsigned long cpus;
	size_t counts[2];
	long w0;
	char *q;

	RETURN_IF_SKIPPED();
	if (numa_num_configured_cpus() != 2)
		SKIP(return, "needs exactly one CPU per node");
	q = map_anon(len);
	ASSERT_NE(NULL, q);
	ASSERT_EQ(0, no_thp(q, len));
	ASSERT_EQ(0, mbind_nodes(q, len, MPOL_BIND, 1 << 1));
	ASSERT_EQ(0, ioc_populate_workers(self->fd, q, len, 0, 2, &req));
	EXPECT_EQ(1, req.workers);
	ASSERT_EQ(0, madvise(q, len, MADV_DONTNEED));
	ASSERT_EQ(0, ioc_populate_workers(self->fd, q, len,
					  MEMPREPOP_F_BORROW_CPUS, 0, &req));
	EXPECT_EQ(1, req.workers);
	ASSERT_EQ(0, madvise(q, len, MADV_DONTNEED));

	w0 = workers_started() + workers_reused();
	ASSERT_EQ(0, populate_seen(self->fd, q, len,
				   MEMPREPOP_F_BORROW_CPUS, 2, &req, &cpus));
	TH_LOG("borrowing: %u workers, seen on CPUs %#lx", req.workers, cpus);
	EXPECT_EQ(2, req.workers);
	EXPECT_EQ(2, workers_started() + workers_reused() - w0);
	EXPECT_EQ(3, cpus);
	ASSERT_EQ(0, count_nodes(q, len, counts));
	EXPECT_EQ(len / page_size(), counts[1]);
	ASSERT_EQ(0, madvise(q, len, MADV_DONTNEED));

	pin_to_cpu(1);
	ASSERT_EQ(0, populate_seen(self->fd, q, len,
				   MEMPREPOP_F_BORROW_CPUS, 2, &req, &cpus));
	TH_LOG("pinned to CPU 1: %u workers, seen on CPUs %#lx", req.workers,
	       cpus);
	EXPECT_EQ(1, req.workers);
	EXPECT_EQ(2, cpus);
	ASSERT_EQ(0, count_nodes(q, len, counts));
	EXPECT_EQ(len / page_size(), counts[1]);
	munmap(q, len);
}

TEST_F(place, max_workers_caps)
{
	struct memprepop_populate req;

	RETURN_IF_SKIPPED();
	ASSERT_EQ(0, mbind_nodes(self->p, LEN, MPOL_INTERLEAVE, 3));
	ASSERT_EQ(0, populate(self->fd, self->p, LEN, 1, &req));
	EXPECT_EQ(1, req.workers);
	EXPECT_EQ(LEN / page_size(), present_pages(self->p, LEN));
}

/* Too small to be worth a worker: done by the caller, still placed right */
TEST_F(place, small_range_in_caller)
{
	struct memprepop_populate req;
	size_t counts[2];

	RETURN_IF_SKIPPED();
	pin_to_cpu(0);
	ASSERT_EQ(0, mbind_nodes(self->p, MiB, MPOL_BIND, 1 << 1));
	ASSERT_EQ(0, populate(self->fd, self->p, MiB, 0, &req));
	EXPECT_EQ(1, req.workers);
	ASSERT_EQ(0, count_nodes(self->p, MiB, counts));
	EXPECT_EQ(MiB / page_size(), counts[1]);
}

/* memfd (shmem) with a policy per half: the file's shared policy */
TEST_F(place, shmem_shared_policy)
{
	struct memprepop_populate req;
	size_t counts[2];
	char *q;
	int mfd;

	RETURN_IF_SKIPPED();
	mfd = memfd_create("place", MFD_CLOEXEC);
	ASSERT_LE(0, mfd);
	ASSERT_EQ(0, ftruncate(mfd, LEN));
	q = mmap(NULL, LEN, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0);
	ASSERT_NE(MAP_FAILED, q);
	ASSERT_EQ(0, mbind_nodes(q, LEN / 2, MPOL_BIND, 1 << 1));
	ASSERT_EQ(0, mbind_nodes(q + LEN / 2, LEN / 2, MPOL_BIND, 1 << 0));
	ASSERT_EQ(0, populate(self->fd, q, LEN, 0, &req));
	EXPECT_EQ(2, req.workers);
	ASSERT_EQ(0, count_nodes(q, LEN / 2, counts));
	EXPECT_EQ(LEN / 2 / page_size(), counts[1]);
	ASSERT_EQ(0, count_nodes(q + LEN / 2, LEN / 2, counts));
	EXPECT_EQ(LEN / 2 / page_size(), counts[0]);
	munmap(q, LEN);
	close(mfd);
}

TEST_HARNESS_MAIN
