// SPDX-License-Identifier: GPL-2.0
/*
 * Stress: several processes of several threads each populate, lock, unmap
 * and re-map ranges, and kill one another, for a bounded time; killed ones
 * are replaced. Afterwards the module must unload (every worker gone, every
 * reference dropped) and memory must be back where it was: Mlocked and
 * HugePages_Free exactly, MemFree of the machine and of every node (with
 * the pages on per-CPU lists counted as free) within what the kernel's own
 * caches grew by (slab, stacks, page tables; KASAN's quarantine lives in
 * slab) and a little more. The
 * module is loaded again at the end for whatever runs next.
 *
 * MEMPREPOP_STRESS_SECS sets the duration (default 10 s),
 * MEMPREPOP_KO the module to load again (default /lib/modules/memprepop.ko).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>

#include "kselftest_harness.h"
#include "memprepop_test.h"

#define PROCS		4
#define THREADS		3
#define SLOTS		8
#define MAX_NODES	8
/* What else comes and goes: vmalloc, page-table caches, per-CPU data */
#define SLACK_KB	(16 * 1024L)

struct shared {
	volatile pid_t pid[PROCS];
	unsigned long calls, bytes, errors, kills, maps;
};

/* One process's ranges, that all its threads populate and unmap */
struct slot {
	char *addr;
	size_t len;
	bool locked;
};

struct proc {
	struct shared *sh;
	struct slot slot[SLOTS];
	pthread_mutex_t lock;
	double deadline;
	unsigned int seed;
	int fd;
};

/* A new range in slot @i: anonymous, shared or hugetlb, maybe lock-on-fault */
static void remap_slot(struct proc *p, unsigned int i, unsigned int *seed)
{
	static const int kinds[] = {
		MAP_PRIVATE | MAP_ANONYMOUS,
		MAP_SHARED | MAP_ANONYMOUS,
		MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB | MAP_NORESERVE,
	};
	size_t len = (1 + rand_r(seed) % 8) * HPAGE;
	struct slot s = { .len = len };
	struct slot old;

	s.addr = mmap(NULL, len, PROT_READ | PROT_WRITE,
		      kinds[rand_r(seed) % 3], -1, 0);
	if (s.addr == MAP_FAILED)
		return;
	if (rand_r(seed) % 2)
		s.locked = !syscall(SYS_mlock2, s.addr, len, MLOCK_ONFAULT);
	pthread_mutex_lock(&p->lock);
	old = p->slot[i];
	p->slot[i] = s;
	pthread_mutex_unlock(&p->lock);
	/* Maybe while another thread is populating it */
	if (old.addr)
		munmap(old.addr, old.len);
	__atomic_add_fetch(&p->sh->maps, 1, __ATOMIC_RELAXED);
}

static void populate_slot(struct proc *p, unsigned int i, unsigned int *seed)
{
	struct memprepop_populate req;
	uint64_t counts[TEST_NODES];
	struct slot s;
	int ret;

	pthread_mutex_lock(&p->lock);
	s = p->slot[i];
	pthread_mutex_unlock(&p->lock);
	if (!s.addr)
		return;
	memset(&req, 0, sizeof(req));
	req.addr = (uintptr_t)s.addr;
	req.len = s.len;
	req.flags = s.locked ? MEMPREPOP_F_REQUIRE_MLOCKED : 0;
	req.max_workers = rand_r(seed) % 3;
	if (rand_r(seed) % 2) {
		req.node_pages = (uintptr_t)counts;
		req.nr_node_pages = 1 + rand_r(seed) % TEST_NODES;
	}
	ret = ioctl(p->fd, MEMPREPOP_IOC_POPULATE, &req) ? -errno : 0;
	__atomic_add_fetch(&p->sh->calls, 1, __ATOMIC_RELAXED);
	__atomic_add_fetch(&p->sh->bytes, req.populated, __ATOMIC_RELAXED);
	if (ret)
		__atomic_add_fetch(&p->sh->errors, 1, __ATOMIC_RELAXED);
}

static void *stress_thread(void *arg)
{
	struct proc *p = arg;
	unsigned int seed = __atomic_add_fetch(&p->seed, 7919,
					       __ATOMIC_RELAXED);

	while (now() < p->deadline) {
		unsigned int i = rand_r(&seed) % SLOTS, op = rand_r(&seed) % 20;
		struct slot s;

		if (op < 12) {
			populate_slot(p, i, &seed);
		} else if (op < 17) {
			remap_slot(p, i, &seed);
		} else if (op < 19) {
			/* Unmap or unlock part of it, racing populates */
			pthread_mutex_lock(&p->lock);
			s = p->slot[i];
			pthread_mutex_unlock(&p->lock);
			if (s.addr && op == 17)
				munmap(s.addr + s.len / 2, s.len / 2);
			else if (s.addr)
				munlock(s.addr, s.len / 2);
		} else {
			/* Kill a sibling process, maybe mid-populate */
			pid_t victim = p->sh->pid[rand_r(&seed) % PROCS];

			if (victim > 0 && victim != getpid() &&
			    !kill(victim, SIGKILL))
				__atomic_add_fetch(&p->sh->kills, 1,
						   __ATOMIC_RELAXED);
		}
	}
	return NULL;
}

static void child(struct shared *sh, double deadline, unsigned int seed)
{
	struct proc p = { .sh = sh, .deadline = deadline, .seed = seed };
	pthread_t tid[THREADS];
	unsigned int i;

	pthread_mutex_init(&p.lock, NULL);
	p.fd = open(MEMPREPOP_DEVICE, O_RDWR | O_CLOEXEC);
	if (p.fd < 0)
		_exit(1);
	for (i = 0; i < THREADS; i++)
		if (pthread_create(&tid[i], NULL, stress_thread, &p))
			_exit(1);
	for (i = 0; i < THREADS; i++)
		pthread_join(tid[i], NULL);
	_exit(0);
}

struct mem {
	long free, pcp, slab, stack, tables, mlocked, huge_free;
};

/*
 * Free pages on the per-CPU lists of @node's zones (all nodes for -1), in
 * kB: not in MemFree, and nothing user space can do drains them all
 */
static long pcp_kb(int node)
{
	FILE *f = fopen("/proc/zoneinfo", "r");
	long pages = 0, count;
	char line[256];
	int cur = -1;

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "Node %d, zone", &cur) == 1)
			continue;
		if ((node < 0 || cur == node) &&
		    sscanf(line, " count: %ld", &count) == 1)
			pages += count;
	}
	fclose(f);
	return pages * (page_size() / KiB);
}

/* "Node N Key:  V kB" lines, or /proc/meminfo's "Key:  V kB" */
static long mem_field(const char *path, const char *key)
{
	char line[256], name[64];
	FILE *f = fopen(path, "r");
	long val = -1, v;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		char *p = line;

		if (!strncmp(p, "Node ", 5))
			p = strchr(p + 5, ' ') + 1;
		if (sscanf(p, "%63[^:]: %ld", name, &v) == 2 &&
		    !strcmp(name, key)) {
			val = v;
			break;
		}
	}
	fclose(f);
	return val;
}

static void mem_read(const char *path, int node, struct mem *m)
{
	m->free = mem_field(path, "MemFree");
	m->pcp = pcp_kb(node);
	m->slab = mem_field(path, "Slab");
	m->stack = mem_field(path, "KernelStack");
	m->tables = mem_field(path, "PageTables");
	m->mlocked = mem_field(path, "Mlocked");
	m->huge_free = mem_field(path, "HugePages_Free");
}

static int nodes_read(struct mem *m)
{
	char path[96];
	int n;

	for (n = 0; n < MAX_NODES; n++) {
		snprintf(path, sizeof(path),
			 "/sys/devices/system/node/node%d/meminfo", n);
		if (access(path, R_OK))
			break;
		mem_read(path, n, &m[n]);
	}
	return n;
}

static void settle(void)
{
	sync();
	if (write_file("/proc/sys/vm/drop_caches", "3"))
		perror("drop_caches");
	/* Compaction drains the per-CPU page lists too */
	if (write_file("/proc/sys/vm/compact_memory", "1"))
		perror("compact_memory");
	sleep(1);
	/*
	 * Meminfo's counters leave out what each CPU has not folded in yet
	 * (up to its threshold, tens of pages of Mlocked): fold them now
	 */
	if (write_file("/proc/sys/vm/stat_refresh", "1"))
		perror("stat_refresh");
}

/* Free memory lost, less what the kernel's own caches grew by, in kB */
static long unaccounted_kb(const struct mem *a, const struct mem *b)
{
	return (a->free + a->pcp - b->free - b->pcp) - (b->slab - a->slab) -
	       (b->stack - a->stack) - (b->tables - a->tables);
}

static int module_unload(void)
{
	int i;

	/* The last workers may still be on their way out */
	for (i = 0; i < 100; i++) {
		if (!syscall(SYS_delete_module, "memprepop", O_NONBLOCK))
			return 0;
		if (errno != EAGAIN && errno != EWOULDBLOCK)
			return -errno;
		usleep(50000);
	}
	return -errno;
}

static int module_load(void)
{
	const char *ko = getenv("MEMPREPOP_KO") ?: "/lib/modules/memprepop.ko";
	int fd = open(ko, O_RDONLY | O_CLOEXEC), ret;

	if (fd < 0)
		return -errno;
	ret = syscall(SYS_finit_module, fd, "", 0) ? -errno : 0;
	close(fd);
	for (int i = 0; !ret && i < 100 && access(MEMPREPOP_DEVICE, F_OK);
	     i++)
		usleep(10000);
	return ret;
}

/*
 * Longer than the harness's 30 s default allows: the runner's timeout (the
 * settings file) is what bounds it.
 */
FIXTURE(stress) {
};

FIXTURE_SETUP(stress)
{
}

FIXTURE_TEARDOWN(stress)
{
}

TEST_F_TIMEOUT(stress, processes_threads_kills, 6 * 3600)
{
	double secs = stress_secs(10), deadline;
	struct mem base, after, nbase[MAX_NODES], nafter[MAX_NODES];
	unsigned int spawned = 0, i;
	struct shared *sh;
	int nodes, n;

	if (access(MEMPREPOP_DEVICE, R_OK | W_OK))
		SKIP(return, "no %s", MEMPREPOP_DEVICE);
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, sh);
	memset(sh, 0, sizeof(*sh));

	settle();
	mem_read("/proc/meminfo", -1, &base);
	nodes = nodes_read(nbase);

	deadline = now() + secs;
	while (now() < deadline) {
		pid_t pid;
		int status;

		/* Keep PROCS alive: start the missing, reap the killed */
		for (i = 0; i < PROCS; i++) {
			if (sh->pid[i] > 0)
				continue;
			pid = fork();
			ASSERT_LE(0, pid);
			if (!pid)
				child(sh, deadline, 1 + spawned);
			sh->pid[i] = pid;
			spawned++;
		}
		pid = waitpid(-1, &status, 0);
		for (i = 0; pid > 0 && i < PROCS; i++)
			if (sh->pid[i] == pid)
				sh->pid[i] = 0;
	}
	for (i = 0; i < PROCS; i++)
		if (sh->pid[i] > 0)
			kill(sh->pid[i], SIGKILL);
	while (wait(NULL) > 0)
		;
	TH_LOG("%.0f s: %u processes of %d threads, %lu calls (%lu failed), "
	       "%lu MiB populated, %lu maps, %lu kills", secs, spawned,
	       THREADS, sh->calls, sh->errors, sh->bytes >> 20, sh->maps,
	       sh->kills);
	EXPECT_LT(100, sh->calls);
	EXPECT_LT(0, sh->kills);

	/* Every worker gone and every reference dropped */
	ASSERT_EQ(0, module_unload());

	settle();
	mem_read("/proc/meminfo", -1, &after);
	n = nodes_read(nafter);
	TH_LOG("MemFree %+ld kB (per-CPU lists %+ld, slab %+ld, stacks %+ld, "
	       "page tables %+ld), Mlocked %ld -> %ld kB, HugePages_Free %ld "
	       "-> %ld", after.free - base.free, after.pcp - base.pcp,
	       after.slab - base.slab,
	       after.stack - base.stack, after.tables - base.tables,
	       base.mlocked, after.mlocked, base.huge_free, after.huge_free);
	EXPECT_EQ(base.mlocked, after.mlocked);
	EXPECT_EQ(base.huge_free, after.huge_free);
	EXPECT_GT(SLACK_KB, unaccounted_kb(&base, &after));
	ASSERT_EQ(nodes, n);
	for (i = 0; i < (unsigned int)n; i++) {
		TH_LOG("node %u: MemFree %+ld kB, unaccounted %ld kB", i,
		       nafter[i].free - nbase[i].free,
		       unaccounted_kb(&nbase[i], &nafter[i]));
		EXPECT_EQ(nbase[i].mlocked, nafter[i].mlocked);
		EXPECT_GT(SLACK_KB, unaccounted_kb(&nbase[i], &nafter[i]));
	}

	ASSERT_EQ(0, module_load());
	munmap(sh, sizeof(*sh));
}

TEST_HARNESS_MAIN
