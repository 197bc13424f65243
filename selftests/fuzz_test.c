// SPDX-License-Identifier: GPL-2.0
/*
 * A seeded, reproducible ioctl fuzzer: random and edge-case command
 * numbers, sizes, flags, reserved and trailing bytes, addresses (unaligned,
 * kernel, wrapping, holes, PROT_NONE, hugetlb without pool) and lengths,
 * while another thread unmaps, remaps, re-protects and DONTNEEDs the same
 * arena. Every call must end with an errno from the ABI and a populated
 * within the range; the test VM fails the run on any kernel splat.
 *
 * MEMPREPOP_FUZZ_SEED and MEMPREPOP_FUZZ_ITERS override the defaults.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>

#include "kselftest_harness.h"
#include "memprepop_test.h"

#define ARENA		(24 * MiB)
#define PIECES		12

struct fuzz {
	char *arena;
	unsigned int seed;
	volatile bool stop;
	unsigned long churn;
};

/* Keeps changing the arena under the populate calls */
static void *churn(void *arg)
{
	struct fuzz *f = arg;
	unsigned int seed = f->seed ^ 0x5eed;
	size_t piece = ARENA / PIECES;

	while (!f->stop) {
		char *q = f->arena + (rand_r(&seed) % PIECES) * piece;

		switch (rand_r(&seed) % 5) {
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
			break;
		case 4:
			mmap(q, piece, PROT_READ | PROT_WRITE,
			     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED |
			     MAP_HUGETLB | MAP_NORESERVE, -1, 0);
			break;
		}
		f->churn++;
		usleep(rand_r(&seed) % 2000);
	}
	return NULL;
}

static uint64_t pick_addr(struct fuzz *f, unsigned int *seed)
{
	static const uint64_t odd[] = {
		0, 1, 4095, 4096, 0x7fffffffe000ULL, 0x800000000000ULL,
		0xffff800000000000ULL, ~0ULL & ~4095ULL, ~0ULL,
	};
	uint64_t base = (uintptr_t)f->arena;

	switch (rand_r(seed) % 6) {
	case 0:
		return odd[rand_r(seed) % (sizeof(odd) / sizeof(odd[0]))];
	case 1:		/* unaligned, in the arena */
		return base + rand_r(seed) % ARENA;
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

static bool errno_allowed(int err)
{
	switch (err) {
	case 0: case EINVAL: case E2BIG: case ENOMEM: case EFAULT:
	case ENOTTY: case EHWPOISON:
		return true;
	default:
		return false;
	}
}

TEST(fuzz_ioctl)
{
	const char *env_seed = getenv("MEMPREPOP_FUZZ_SEED");
	const char *env_iters = getenv("MEMPREPOP_FUZZ_ITERS");
	unsigned long iters = env_iters ? strtoul(env_iters, NULL, 0) : 1500;
	struct fuzz f = { .seed = env_seed ? strtoul(env_seed, NULL, 0) :
				 20261130 };
	unsigned long calls = 0, bad = 0, by_errno[256] = { 0 };
	unsigned int seed = f.seed;
	union {
		struct memprepop_populate req;
		unsigned char bytes[256];
	} buf;
	struct memprepop_control ctl;
	pthread_t tid;
	int fd;

	fd = open(MEMPREPOP_DEVICE, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	f.arena = map_anon(ARENA);
	ASSERT_NE(NULL, f.arena);
	TH_LOG("seed %u, %lu calls", f.seed, iters);
	ASSERT_EQ(0, pthread_create(&tid, NULL, churn, &f));

	for (; calls < iters; calls++) {
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
			break;
		case 1:
			buf.req.control = pick_addr(&f, &seed);
			break;
		}
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
		case 3:		/* random bytes */
			for (unsigned int i = 0; i < sizeof(buf); i++)
				buf.bytes[i] = rand_r(&seed);
			break;
		}
		ret = ioctl(fd, _IOC(dir, MEMPREPOP_IOC_MAGIC, nr, size),
			    &buf);
		err = ret ? errno : 0;
		by_errno[err & 255]++;
		if (!errno_allowed(err)) {
			bad++;
			TH_LOG("call %lu: unexpected errno %d", calls, err);
		}
		/* populated never beyond the range asked for */
		if (nr == 1 && dir == (_IOC_READ | _IOC_WRITE) &&
		    size >= MEMPREPOP_POPULATE_SIZE_VER0 && ret == 0 &&
		    buf.req.populated > ((buf.req.len + 4095) & ~4095ULL)) {
			bad++;
			TH_LOG("call %lu: populated %llu past len %llu", calls,
			       (unsigned long long)buf.req.populated,
			       (unsigned long long)buf.req.len);
		}
	}
	f.stop = true;
	pthread_join(tid, NULL);
	TH_LOG("%lu calls, %lu arena changes: ok %lu, EINVAL %lu, E2BIG %lu, "
	       "ENOMEM %lu, EFAULT %lu, ENOTTY %lu", calls, f.churn,
	       by_errno[0], by_errno[EINVAL], by_errno[E2BIG],
	       by_errno[ENOMEM], by_errno[EFAULT], by_errno[ENOTTY]);
	EXPECT_EQ(0, bad);
	close(fd);
}

TEST_HARNESS_MAIN
