// SPDX-License-Identifier: GPL-2.0
/*
 * A seeded, reproducible ioctl fuzzer: random and edge-case command
 * numbers, sizes, flags, reserved and trailing bytes, addresses (unaligned,
 * kernel, wrapping, holes, PROT_NONE, VM_PFNMAP, userfaultfd-armed, hugetlb
 * with and without a pool) and lengths, range arrays that overlap, cover a
 * huge mapping again and again or have entries of any size, and node
 * count arrays of any length, while another thread unmaps,
 * remaps, mremaps, re-protects, DONTNEEDs and forks the same arena, and a
 * third kills the calling process at a random time; it is started again,
 * with the next seed, until all the calls are made. Every call must end
 * with an errno from the ABI and a populated within the range; the test VM
 * fails the run on any kernel splat or leak.
 *
 * The calls of a seed are the same from run to run; where the killer
 * strikes, and how the arena changes under a call, are up to timing.
 * MEMPREPOP_FUZZ_SEED and MEMPREPOP_FUZZ_ITERS override the defaults.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>

#include "kselftest_harness.h"
#include "memprepop_test.h"
#include "uffd_helpers.h"

#define ARENA		(24 * MiB)
#define HUGE_MAP	(1ULL << 40)
#define PIECES		12
#define UFFD_LEN	(2 * MiB)

/* Across the fuzzing processes, in shared memory */
struct tally {
	unsigned long calls, bad, churn, forks, kills;
	unsigned long by_errno[256];
};

struct fuzz {
	struct tally *t;
	char *arena;
	char *huge;		/* 1 TiB, MAP_NORESERVE, never touched */
	uint64_t special[4];	/* [vvar], /dev/mem, two uffd-armed ranges */
	unsigned int seed;
	volatile bool stop;
};

/* Keeps changing the arena under the populate calls */
static void *churn(void *arg)
{
	struct fuzz *f = arg;
	unsigned int seed = f->seed ^ 0x5eed;
	size_t piece = ARENA / PIECES;

	while (!f->stop) {
		char *q = f->arena + (rand_r(&seed) % PIECES) * piece;
		char *to = f->arena + (rand_r(&seed) % PIECES) * piece;

		switch (rand_r(&seed) % 8) {
		case 0:
			munmap(q, piece);
			break;
		case 1:
			mmap(q, piece, PROT_READ | PROT_WRITE,
			     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
			break;
		case 2:
			mprotect(q, piece, rand_r(&seed) % 2 ? PROT_NONE :
				 PROT_READ | PROT_WRITE);
			break;
		case 3:
			madvise(q, piece, MADV_DONTNEED);
			madvise((void *)(uintptr_t)f->special[2], UFFD_LEN,
				MADV_DONTNEED);
			break;
		case 4:
			mmap(q, piece, PROT_READ | PROT_WRITE,
			     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED |
			     MAP_HUGETLB | MAP_NORESERVE, -1, 0);
			break;
		case 5:
			mremap(q, piece, piece, MREMAP_MAYMOVE | MREMAP_FIXED,
			       to);
			break;
		case 6:		/* the arena shared copy-on-write for a while */
			if (!fork()) {
				usleep(rand_r(&seed) % 5000);
				_exit(0);
			}
			__atomic_add_fetch(&f->t->forks, 1, __ATOMIC_RELAXED);
			break;
		case 7:
			mprotect(q, piece, PROT_READ);
			break;
		}
		__atomic_add_fetch(&f->t->churn, 1, __ATOMIC_RELAXED);
		usleep(rand_r(&seed) % 2000);
	}
	return NULL;
}

/*
 * SIGKILLs the process, mid-call or not, after a random while: mostly
 * within half a second, every fourth process only after a few seconds,
 * for long runs of calls too
 */
static void *killer(void *arg)
{
	struct fuzz *f = arg;
	unsigned int seed = f->seed ^ 0xdead;

	if (rand_r(&seed) % 4)
		usleep(20000 + rand_r(&seed) % 500000);
	else
		usleep(2000000 + rand_r(&seed) % 8000000);
	kill(getpid(), SIGKILL);
	return NULL;
}

static uint64_t pick_addr(struct fuzz *f, unsigned int *seed)
{
	static const uint64_t odd[] = {
		0, 1, 4095, 4096, 0x7fffffffe000ULL, 0x800000000000ULL,
		0xffff800000000000ULL, ~0ULL & ~4095ULL, ~0ULL,
	};
	uint64_t base = (uintptr_t)f->arena, sp;

	switch (rand_r(seed) % 8) {
	case 0:
		return odd[rand_r(seed) % (sizeof(odd) / sizeof(odd[0]))];
	case 1:		/* unaligned, in the arena */
		return base + rand_r(seed) % ARENA;
	case 2:		/* VM_PFNMAP or userfaultfd-armed, when there */
		sp = f->special[rand_r(seed) % 4];
		if (sp)
			return sp;
		/* fall through */
	default:	/* a page of the arena, or just before it */
		return base + ((int64_t)(rand_r(seed) % (ARENA / 4096 + 8)) -
			       4) * 4096;
	}
}

static uint64_t pick_len(unsigned int *seed)
{
	static const uint64_t odd[] = {
		0, 1, 4095, 4096, ARENA, ARENA + 4096, 1ULL << 47, ~0ULL,
		~0ULL - 4095,
	};

	if (rand_r(seed) % 4 == 0)
		return odd[rand_r(seed) % (sizeof(odd) / sizeof(odd[0]))];
	return (uint64_t)(rand_r(seed) % (ARENA / 4096)) * 4096 +
	       (rand_r(seed) % 8 == 0 ? rand_r(seed) % 4096 : 0);
}

/*
 * A range array or node count array past or at the limits: the same huge
 * mapping again and again (more than MEMPREPOP_PLAN_LEN_MAX together, so
 * never populated), many overlapping pieces of the arena, entries of any
 * size with zero tails, node counts of any length.
 */
static void pick_degenerate(struct fuzz *f, struct memprepop_populate *req,
			    unsigned int *seed)
{
	static struct memprepop_range many[65536];
	static uint64_t counts[MEMPREPOP_NODE_PAGES_MAX + 1];
	static const uint32_t sizes[] = {
		MEMPREPOP_RANGE_SIZE_VER0, 48, MEMPREPOP_RANGE_SIZE_MAX,
		MEMPREPOP_RANGE_SIZE_MAX + 1, 0xffffffe0, ~0U,
	};
	static const uint32_t nodes[] = {
		1, MEMPREPOP_NODE_PAGES_MAX, MEMPREPOP_NODE_PAGES_MAX + 1,
		1U << 30, ~0U,
	};
	unsigned int nr, i, size;

	req->addr = req->len = 0;
	req->ranges = (uintptr_t)many;
	req->range_size = sizeof(many[0]);
	switch (rand_r(seed) % 4) {
	case 0:
		nr = MEMPREPOP_PLAN_LEN_MAX / HUGE_MAP + 1 +
		     rand_r(seed) % 65000;
		for (i = 0; i < nr; i++) {
			many[i].addr = (uintptr_t)f->huge;
			many[i].len = HUGE_MAP;
			many[i].__reserved = 0;
		}
		break;
	case 1:
		nr = 1 + rand_r(seed) % 4096;
		for (i = 0; i < nr; i++) {
			many[i].addr = pick_addr(f, seed);
			many[i].len = (uint64_t)(rand_r(seed) % 4) * 4096;
			many[i].__reserved = 0;
		}
		break;
	case 2:
		size = sizes[rand_r(seed) % (sizeof(sizes) / sizeof(sizes[0]))];
		nr = 1 + rand_r(seed) % 8;
		req->range_size = size;
		memset(many, 0, sizeof(many));
		for (i = 0; size <= MEMPREPOP_RANGE_SIZE_MAX && i < nr; i++) {
			struct memprepop_range *r =
				(void *)((char *)many + (size_t)i * size);

			r->addr = pick_addr(f, seed);
			r->len = rand_r(seed) % (ARENA / 4096) * 4096;
		}
		break;
	default:
		nr = 1;
		many[0].addr = pick_addr(f, seed);
		many[0].len = rand_r(seed) % (ARENA / 4096) * 4096;
		many[0].__reserved = 0;
		req->node_pages = (uintptr_t)counts;
		req->nr_node_pages =
			nodes[rand_r(seed) % (sizeof(nodes) / sizeof(nodes[0]))];
		break;
	}
	req->nr_ranges = nr;
}

static bool errno_allowed(int err)
{
	switch (err) {
	case 0: case EINVAL: case E2BIG: case ENOMEM: case EFAULT:
	case ENOTTY: case EHWPOISON:
	/* A background request: one at a time, its eventfd, its reaping */
	case EBUSY: case EBADF: case EAGAIN: case ENOENT:
		return true;
	default:
		return false;
	}
}

/* The [vvar] mapping: VM_PFNMAP in every x86-64 process */
static uint64_t find_vvar(void)
{
	FILE *maps = fopen("/proc/self/maps", "r");
	unsigned long lo = 0;
	char line[256];

	if (!maps)
		return 0;
	while (fgets(line, sizeof(line), maps))
		if (strstr(line, "[vvar]") && sscanf(line, "%lx-", &lo) == 1)
			break;
	fclose(maps);
	return lo;
}

/* Maps the special ranges; the uffd handler thread serves special[2] */
static void map_special(struct fuzz *f, struct uffd_handler *h,
			pthread_t *serve)
{
	int fd = open("/dev/mem", O_RDWR | O_CLOEXEC);
	void *p;

	f->special[0] = find_vvar();
	if (fd >= 0) {
		/* The first page of physical memory: remap_pfn_range() */
		p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
			 0);
		if (p != MAP_FAILED)
			f->special[1] = (uintptr_t)p;
		close(fd);
	}
	p = map_anon(UFFD_LEN);
	h->uffd = p ? uffd_arm(p, UFFD_LEN, 0) : -1;
	h->zero = calloc(1, page_size());
	if (h->uffd >= 0 && h->zero &&
	    !pthread_create(serve, NULL, uffd_serve, h))
		f->special[2] = (uintptr_t)p;
	/* Armed with no handler: faults get SIGBUS, populate EFAULT */
	p = map_anon(UFFD_LEN);
	if (p && uffd_arm(p, UFFD_LEN, UFFD_FEATURE_SIGBUS) >= 0)
		f->special[3] = (uintptr_t)p;
}

/* One fuzzing process: calls until the tally has @iters, or killed */
static void fuzz_calls(struct tally *t, unsigned int gen_seed,
		       unsigned long iters)
{
	struct fuzz f = { .t = t, .seed = gen_seed };
	unsigned int seed = gen_seed;
	union {
		struct memprepop_populate req;
		unsigned char bytes[256];
	} buf;
	struct memprepop_range ranges[8];
	struct uffd_handler h = { 0 };
	struct memprepop_control ctl;
	pthread_t tid, serve, kill_tid;
	int fd;

	signal(SIGCHLD, SIG_IGN);	/* the churn's children reap themselves */
	fd = open(MEMPREPOP_DEVICE, O_RDWR | O_CLOEXEC);
	f.arena = map_anon(ARENA);
	f.huge = mmap(NULL, HUGE_MAP, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (fd < 0 || !f.arena || f.huge == MAP_FAILED)
		_exit(2);
	map_special(&f, &h, &serve);
	if (pthread_create(&tid, NULL, churn, &f) ||
	    pthread_create(&kill_tid, NULL, killer, &f))
		_exit(2);

	while (__atomic_add_fetch(&t->calls, 1, __ATOMIC_RELAXED) <= iters) {
		unsigned int size = sizeof(buf.req), nr = 1, dir;
		int ret, err;

		memset(&buf, 0, sizeof(buf));
		buf.req.addr = pick_addr(&f, &seed);
		buf.req.len = pick_len(&seed);
		buf.req.flags = rand_r(&seed) % 4 ? rand_r(&seed) % 4 :
				1ULL << (rand_r(&seed) % 64);
		buf.req.max_workers = rand_r(&seed) % 8 ? rand_r(&seed) % 4 :
				      rand_r(&seed);
		switch (rand_r(&seed) % 8) {
		case 0:
			buf.req.control = (uintptr_t)&ctl;
			memset(&ctl, 0, sizeof(ctl));
			ctl.cancel = rand_r(&seed) % 4 == 0;
			break;
		case 1:
			buf.req.control = pick_addr(&f, &seed);
			break;
		}
		/* Several ranges, or the background's eventfd */
		if (rand_r(&seed) % 4 == 0) {
			buf.req.addr = buf.req.len = 0;
			buf.req.nr_ranges = rand_r(&seed) % 9;
			buf.req.range_size = rand_r(&seed) % 8 ? sizeof(ranges[0]) :
					     rand_r(&seed) % 64;
			buf.req.ranges = rand_r(&seed) % 8 ? (uintptr_t)ranges :
					 pick_addr(&f, &seed);
			for (unsigned int i = 0; i < 8; i++) {
				ranges[i].addr = pick_addr(&f, &seed);
				ranges[i].len = pick_len(&seed);
				ranges[i].__reserved = rand_r(&seed) % 16 == 0;
			}
		}
		if (rand_r(&seed) % 32 == 0)
			pick_degenerate(&f, &buf.req, &seed);
		if (buf.req.flags & MEMPREPOP_F_EVENTFD)
			buf.req.eventfd = rand_r(&seed) % 4 ? -1 : rand_r(&seed) % 8;
		dir = _IOC_READ | _IOC_WRITE;
		switch (rand_r(&seed) % 10) {
		case 0:		/* any size the command can carry */
			size = rand_r(&seed) % sizeof(buf);
			break;
		case 1:		/* a longer struct, maybe with a non-zero tail */
			size = sizeof(buf.req) + 8 * (1 + rand_r(&seed) % 8);
			if (rand_r(&seed) % 2)
				buf.bytes[sizeof(buf.req) +
					  rand_r(&seed) % (size -
							   sizeof(buf.req))] = 1;
			break;
		case 2:		/* another command or direction */
			nr = rand_r(&seed) % 4;
			dir = rand_r(&seed) % 4;
			break;
		case 4:		/* reap a background request, maybe not there */
			nr = 2;
			size = sizeof(struct memprepop_wait);
			memset(&buf, 0, sizeof(buf));
			buf.bytes[0] = rand_r(&seed) % 2 ? MEMPREPOP_WAIT_NOHANG :
				       rand_r(&seed) % 8 ? 0 : rand_r(&seed);
			break;
		case 3:		/* random bytes */
			for (unsigned int i = 0; i < sizeof(buf); i++)
				buf.bytes[i] = rand_r(&seed);
			break;
		}
		ret = ioctl(fd, _IOC(dir, MEMPREPOP_IOC_MAGIC, nr, size),
			    &buf);
		err = ret ? errno : 0;
		__atomic_add_fetch(&t->by_errno[err & 255], 1,
				   __ATOMIC_RELAXED);
		/* ECANCELED: the control block asked for it, or so it read */
		if (!errno_allowed(err) &&
		    !(err == ECANCELED && buf.req.control)) {
			__atomic_add_fetch(&t->bad, 1, __ATOMIC_RELAXED);
			fprintf(stderr, "# seed %u: unexpected errno %d\n",
				gen_seed, err);
		}
		/* populated never beyond the range asked for */
		if (nr == 1 && dir == (_IOC_READ | _IOC_WRITE) &&
		    !buf.req.ranges &&
		    size >= MEMPREPOP_POPULATE_SIZE_VER0 && ret == 0 &&
		    buf.req.populated > ((buf.req.len + 4095) & ~4095ULL)) {
			__atomic_add_fetch(&t->bad, 1, __ATOMIC_RELAXED);
			fprintf(stderr, "# seed %u: populated %llu past %llu\n",
				gen_seed,
				(unsigned long long)buf.req.populated,
				(unsigned long long)buf.req.len);
		}
	}
	f.stop = true;
	h.stop = true;
	pthread_join(tid, NULL);
	_exit(0);
}

/*
 * Longer than the harness's 30 s default allows: the runner's timeout (the
 * settings file) is what bounds it.
 */
FIXTURE(fuzz) {
};

FIXTURE_SETUP(fuzz)
{
}

FIXTURE_TEARDOWN(fuzz)
{
}

TEST_F_TIMEOUT(fuzz, ioctl, 6 * 3600)
{
	const char *env_seed = getenv("MEMPREPOP_FUZZ_SEED");
	const char *env_iters = getenv("MEMPREPOP_FUZZ_ITERS");
	unsigned long iters = env_iters ? strtoul(env_iters, NULL, 0) : 1500;
	unsigned int seed = env_seed ? strtoul(env_seed, NULL, 0) : 20261130;
	unsigned int gen, failed = 0;
	size_t pool_len = 0;
	double t0 = now();
	struct tally *t;
	char *pool = MAP_FAILED;

	if (access(MEMPREPOP_DEVICE, R_OK | W_OK))
		SKIP(return, "no %s", MEMPREPOP_DEVICE);
	t = mmap(NULL, sizeof(*t), PROT_READ | PROT_WRITE,
		 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, t);
	memset(t, 0, sizeof(*t));
	TH_LOG("seed %u, %lu calls", seed, iters);

	for (gen = 0; t->calls < iters; gen++) {
		unsigned int gen_seed = seed + gen * 0x9e3779b9U;
		int status;
		pid_t pid;

		/*
		 * Every fourth process meets hugetlb without a pool: this one
		 * holds every free huge page of the default size meanwhile
		 */
		if (gen % 4 == 1) {
			pool_len = meminfo_field("HugePages_Free") *
				   meminfo_field("Hugepagesize") * KiB;
			pool = pool_len ? mmap(NULL, pool_len,
					       PROT_READ | PROT_WRITE,
					       MAP_PRIVATE | MAP_ANONYMOUS |
					       MAP_HUGETLB | MAP_POPULATE,
					       -1, 0) : MAP_FAILED;
			if (pool == MAP_FAILED)
				pool_len = 0;
		}
		pid = fork();
		ASSERT_LE(0, pid);
		if (!pid)
			fuzz_calls(t, gen_seed, iters);
		ASSERT_EQ(pid, waitpid(pid, &status, 0));
		if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
			t->kills++;
		else if (!WIFEXITED(status) || WEXITSTATUS(status))
			failed++;
		if (pool_len) {
			munmap(pool, pool_len);
			pool_len = 0;
		}
	}
	if (t->calls > iters)
		t->calls = iters;
	TH_LOG("%lu calls in %u processes (%lu killed) in %.1f s, %lu arena "
	       "changes, %lu forks: ok %lu, EINVAL %lu, E2BIG %lu, ENOMEM %lu, "
	       "EFAULT %lu, ENOTTY %lu, ECANCELED %lu", t->calls, gen,
	       t->kills, now() - t0, t->churn, t->forks, t->by_errno[0],
	       t->by_errno[EINVAL], t->by_errno[E2BIG], t->by_errno[ENOMEM],
	       t->by_errno[EFAULT], t->by_errno[ENOTTY],
	       t->by_errno[ECANCELED]);
	EXPECT_EQ(0, t->bad);
	EXPECT_EQ(0, failed);
	/* The killer struck, and calls got through in between */
	EXPECT_LT(0, t->kills);
	EXPECT_LT(0, t->by_errno[0]);
	munmap(t, sizeof(*t));
}

TEST_HARNESS_MAIN
