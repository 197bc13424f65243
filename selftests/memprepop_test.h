/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers shared by the module selftests and the library tests: what the
 * kernel says about a range (pagemap, smaps, meminfo), and the reference
 * behaviour, madvise(MADV_POPULATE_WRITE), to compare with.
 */
#ifndef MEMPREPOP_TEST_H
#define MEMPREPOP_TEST_H

#include <errno.h>
#include <numaif.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <linux/memprepop.h>

/*
 * The module's tests need /dev/memprepop. Without it (the module neither
 * loaded nor loadable) a test program skips as a whole, as kselftests do,
 * instead of failing every case. The library's tests, which run without the
 * module too, define MEMPREPOP_TEST_NO_DEVICE.
 */
#ifndef MEMPREPOP_TEST_NO_DEVICE
static void __attribute__((constructor)) memprepop_test_need_device(void)
{
	/* Not loadable: the check below says so */
	if (access(MEMPREPOP_DEVICE, F_OK))
		(void)!system("modprobe -q memprepop 2>/dev/null");
	if (access(MEMPREPOP_DEVICE, F_OK)) {
		printf("TAP version 13\n");
		printf("1..0 # SKIP no %s: the memprepop module is not loaded\n",
		       MEMPREPOP_DEVICE);
		exit(4);	/* KSFT_SKIP */
	}
}
#endif

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE	23
#endif
#ifndef MLOCK_ONFAULT
#define MLOCK_ONFAULT		0x01
#endif

#define KiB	(1024UL)
#define MiB	(1024UL * KiB)
#define HPAGE	(2 * MiB)

static inline size_t page_size(void)
{
	return sysconf(_SC_PAGESIZE);
}

/* Pages of [addr, addr + len) that are present, per /proc/self/pagemap. */
/*
 * Walks the pagemap of [@addr, @addr + @len) 512 entries per read: the number
 * of pages present, or with @prefix_only the pages present before the first
 * that is not. One open and a read per 2 MiB, not per page: under KASAN and
 * TCG a per-page walk of a few hundred MiB takes minutes.
 */
static inline size_t pagemap_walk(const void *addr, size_t len,
				  bool prefix_only)
{
	size_t psz = page_size(), n = len / psz, i, present = 0;
	uint64_t ent[512];
	int fd = open("/proc/self/pagemap", O_RDONLY);

	if (fd < 0)
		return 0;
	for (i = 0; i < n; i += 512) {
		size_t batch = n - i < 512 ? n - i : 512, j;
		off_t off = ((uintptr_t)addr / psz + i) * sizeof(uint64_t);

		if (pread(fd, ent, batch * sizeof(uint64_t), off) !=
		    (ssize_t)(batch * sizeof(uint64_t)))
			break;
		for (j = 0; j < batch; j++) {
			bool here = ent[j] & (1ULL << 63);

			if (!here && prefix_only)
				goto out;
			present += here;
		}
	}
out:
	close(fd);
	return present;
}

static inline size_t present_pages(const void *addr, size_t len)
{
	return pagemap_walk(addr, len, false);
}

/* Is @line of an smaps file the head of a VMA's entry: its bounds */
static inline bool smaps_vma_head(const char *line, unsigned long *lo,
				  unsigned long *hi)
{
	return sscanf(line, "%lx-%lx ", lo, hi) == 2 &&
	       strchr(line, '-') < strchr(line, ' ');
}

/* A field (in kB) of the /proc/self/smaps entry of the VMA holding @addr. */
static inline long smaps_field_kb(const void *addr, const char *field)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	size_t flen = strlen(field);
	bool inside = false;
	char line[512];
	long val = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;

		if (smaps_vma_head(line, &lo, &hi)) {
			inside = (uintptr_t)addr >= lo && (uintptr_t)addr < hi;
			continue;
		}
		if (inside && !strncmp(line, field, flen) &&
		    line[flen] == ':') {
			val = strtol(line + flen + 1, NULL, 10);
			break;
		}
	}
	fclose(f);
	return val;
}

/*
 * The number after @key in a /proc file of "key: value" or "key value"
 * lines (/proc/meminfo, /proc/self/status, /proc/vmstat), or -1.
 */
static inline long proc_field(const char *path, const char *key)
{
	FILE *f = fopen(path, "r");
	size_t klen = strlen(key);
	char line[256];
	long val = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, klen) &&
		    (line[klen] == ':' || line[klen] == ' ')) {
			val = strtol(line + klen + 1, NULL, 10);
			break;
		}
	fclose(f);
	return val;
}

/* In kB for sizes, a count for HugePages_* */
static inline long meminfo_field(const char *key)
{
	return proc_field("/proc/meminfo", key);
}

/* In kB: VmLck and the like */
static inline long status_field_kb(const char *key)
{
	return proc_field("/proc/self/status", key);
}

/* CLOCK_MONOTONIC in seconds */
static inline double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/*
 * How long a timed race or stress run lasts: MEMPREPOP_STRESS_SECS (make
 * check sets 5, make check-debug 120), else @dflt seconds
 */
static inline double stress_secs(double dflt)
{
	const char *s = getenv("MEMPREPOP_STRESS_SECS");

	return s && atof(s) > 0 ? atof(s) : dflt;
}

/* Writes @s to a sysfs, procfs or debugfs file: 0, or -1 */
static inline int write_file(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = write(fd, s, strlen(s));
	close(fd);
	return n == (ssize_t)strlen(s) ? 0 : -1;
}

/* Reads a whole small file into buf; returns its length or -1 */
static inline ssize_t read_file(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n, total = 0;

	if (fd < 0)
		return -1;
	while ((n = read(fd, buf + total, size - 1 - total)) > 0)
		total += n;
	close(fd);
	buf[total] = 0;
	return total;
}

/* The number a one-number file holds, or -1 */
static inline long read_long(const char *path)
{
	FILE *f = fopen(path, "r");
	long v = -1;

	if (f) {
		if (fscanf(f, "%ld", &v) != 1)
			v = -1;
		fclose(f);
	}
	return v;
}

/*
 * Pages of [addr, addr + len) on each node N < @nr, from /proc/self/numa_maps
 * as an outsider reads them: exact whatever NUMA balancing does (a page it
 * has made PROT_NONE for a hinting fault, which move_pages(2) does not report
 * on 6.1, is counted), and nothing is faulted in. The range must be whole
 * VMAs (numa_maps counts per VMA). Huge pages count as their base pages.
 * Returns 0, or -1 when the range is not whole VMAs or a file cannot be read.
 */
static inline int numa_maps_nodes(const void *addr, size_t len,
				  uint64_t *counts, unsigned int nr)
{
	uintptr_t start = (uintptr_t)addr, end = start + len, covered = start;
	FILE *maps = fopen("/proc/self/maps", "r");
	FILE *nm = fopen("/proc/self/numa_maps", "r");
	char line[4096];
	int ret = -1;

	memset(counts, 0, nr * sizeof(*counts));
	if (!maps || !nm)
		goto out;
	/* The same VMAs in the same order, one line each (but the gate VMA) */
	while (covered < end && fgets(line, sizeof(line), maps)) {
		unsigned long lo, hi, kb = page_size() / KiB, n;
		char *tok, *save;
		int nid;

		if (!fgets(line + 2048, 2048, nm) ||
		    sscanf(line, "%lx-%lx", &lo, &hi) != 2)
			goto out;
		if (hi <= start || lo >= end)
			continue;
		if (lo != covered || hi > end)
			goto out;	/* not whole VMAs, or a gap */
		covered = hi;
		tok = strstr(line + 2048, "kernelpagesize_kB=");
		if (tok)
			sscanf(tok, "kernelpagesize_kB=%lu", &kb);
		for (tok = strtok_r(line + 2048, " \n", &save); tok;
		     tok = strtok_r(NULL, " \n", &save))
			if (sscanf(tok, "N%d=%lu", &nid, &n) == 2 &&
			    nid >= 0 && (unsigned int)nid < nr)
				counts[nid] += n * (kb * KiB / page_size());
	}
	ret = covered == end ? 0 : -1;
out:
	if (maps)
		fclose(maps);
	if (nm)
		fclose(nm);
	return ret;
}

/*
 * The node of every page of [p, p + len), all populated and readable, from
 * move_pages(2). A page it does not report (NUMA balancing made it PROT_NONE
 * for a hinting fault: -EFAULT or -ENOENT on 6.1) is read, which ends the
 * hinting fault, and asked again. Returns 0, or -1.
 */
static inline int page_nodes(char *p, size_t len, int *nodes)
{
	size_t n = len / page_size(), i;
	void **pages = malloc(n * sizeof(*pages));
	int round, ret = -1;

	if (!pages)
		return -1;
	for (i = 0; i < n; i++)
		pages[i] = p + i * page_size();
	for (round = 0; round < 10; round++) {
		bool again = false;

		if (move_pages(0, n, pages, NULL, nodes, 0))
			break;
		for (i = 0; i < n; i++)
			if (nodes[i] < 0) {
				(void)*(volatile char *)pages[i];
				again = true;
			}
		if (!again) {
			ret = 0;
			break;
		}
	}
	free(pages);
	return ret;
}

/* madvise(MADV_POPULATE_WRITE) as 0 or -errno: the reference behaviour. */
static inline int madvise_populate_write(void *addr, size_t len)
{
	return madvise(addr, len, MADV_POPULATE_WRITE) ? -errno : 0;
}

/* MEMPREPOP_IOC_POPULATE as 0 or -errno, with the struct filled. */
static inline int ioc_populate_workers(int fd, void *addr, size_t len,
				       uint64_t flags, unsigned int max_workers,
				       struct memprepop_populate *req)
{
	memset(req, 0, sizeof(*req));
	req->addr = (uintptr_t)addr;
	req->len = len;
	req->flags = flags;
	req->max_workers = max_workers;
	return ioctl(fd, MEMPREPOP_IOC_POPULATE, req) ? -errno : 0;
}

static inline int ioc_populate(int fd, void *addr, size_t len, uint64_t flags,
			       struct memprepop_populate *req)
{
	return ioc_populate_workers(fd, addr, len, flags, 0, req);
}

/**
 * struct ioc_call - a populate call for a thread of its own (ioc_thread())
 * @fd: the descriptor
 * @p: the range
 * @len: its length
 * @ret: the call's 0 or -errno, -EIO when it reported less than @len
 */
struct ioc_call {
	int fd;
	char *p;
	size_t len;
	int ret;
};

/* pthread_create()'s function: one ioc_populate() of @arg's range */
static inline void *ioc_thread(void *arg)
{
	struct ioc_call *c = arg;
	struct memprepop_populate req;

	c->ret = ioc_populate(c->fd, c->p, c->len, 0, &req);
	if (!c->ret && req.populated != c->len)
		c->ret = -EIO;
	return NULL;
}

/* MEMPREPOP_IOC_WAIT as 0 or -errno; the request's outcome in @result */
static inline int bg_wait(int fd, uint64_t flags, int *result)
{
	struct memprepop_wait w = { .flags = flags };
	int ret = ioctl(fd, MEMPREPOP_IOC_WAIT, &w) ? -errno : 0;

	*result = w.result;
	return ret;
}

/* Does poll() report @fd readable within @timeout_ms? */
static inline bool readable(int fd, int timeout_ms)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };

	return poll(&pfd, 1, timeout_ms) == 1 && (pfd.revents & POLLIN);
}

/* Reads @len bytes from @fd within @secs: true when it did */
static inline bool read_within(int fd, void *buf, size_t len, double secs)
{
	return readable(fd, secs * 1000) && read(fd, buf, len) == (ssize_t)len;
}

/* Entries of the node statistics arrays of the tests: any node up to it */
#define TEST_NODES	64

/* The same, with the call's node statistics in @counts[@nr] */
static inline int ioc_populate_stats(int fd, void *addr, size_t len,
				     uint64_t flags, uint64_t *counts,
				     unsigned int nr,
				     struct memprepop_populate *req)
{
	memset(req, 0, sizeof(*req));
	req->addr = (uintptr_t)addr;
	req->len = len;
	req->flags = flags;
	req->node_pages = (uintptr_t)counts;
	req->nr_node_pages = nr;
	return ioctl(fd, MEMPREPOP_IOC_POPULATE, req) ? -errno : 0;
}

/* Sum of @nr counters */
static inline uint64_t sum_counts(const uint64_t *counts, unsigned int nr)
{
	uint64_t sum = 0;

	while (nr--)
		sum += counts[nr];
	return sum;
}

/*
 * Keep [@addr, @addr + @len) in base pages, as the page counts the tests
 * compare assume: madvise(MADV_NOHUGEPAGE), 0 or -1 as madvise. A kernel
 * without transparent huge pages (PREEMPT_RT's, or one built without them)
 * refuses the advice with EINVAL and never makes a huge page: 0 there.
 */
static inline int no_thp(void *addr, size_t len)
{
	if (!madvise(addr, len, MADV_NOHUGEPAGE))
		return 0;
	if (errno == EINVAL &&
	    access("/sys/kernel/mm/transparent_hugepage", F_OK))
		return 0;
	return -1;
}

/*
 * An anonymous private mapping, or NULL. It is a VMA of its own, between two
 * PROT_NONE guard pages that stay after munmap(p, len): never merged with a
 * neighbour, so that numa_maps_nodes() can count it.
 */
static inline void *map_anon(size_t len)
{
	char *g = mmap(NULL, len + 2 * page_size(), PROT_NONE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	void *p;

	if (g == MAP_FAILED)
		return NULL;
	p = mmap(g + page_size(), len, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	if (p == MAP_FAILED) {
		munmap(g, len + 2 * page_size());
		return NULL;
	}
	return p;
}

/*
 * A writable shared mapping of the first @len bytes of file @fd, sized to
 * @len; @fd is closed either way. NULL on failure.
 */
static inline void *map_file_shared(int fd, size_t len)
{
	void *p = MAP_FAILED;

	if (fd >= 0 && !ftruncate(fd, len))
		p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (fd >= 0)
		close(fd);
	return p == MAP_FAILED ? NULL : p;
}

/* Both nodes' memory, so that a call wants a worker on each */
static inline int bind_both(void *p, size_t len)
{
	unsigned long mask = 3;

	return mbind(p, len, MPOL_BIND, &mask, 8 * sizeof(mask), 0);
}

static inline void *map_anon_both(size_t len)
{
	void *p = map_anon(len);

	if (p && bind_both(p, len)) {
		munmap(p, len);
		return NULL;
	}
	return p;
}

#define HUGE_1G_FREE \
	"/sys/kernel/mm/hugepages/hugepages-1048576kB/free_hugepages"

/*
 * @len of a memfd of 1 GiB hugetlb pages, mapped shared; its descriptor
 * in *@mfd. NULL on failure.
 */
static inline char *map_hugetlb_1g(size_t len, int *mfd)
{
	char *p;

	*mfd = memfd_create("mpp-1g", MFD_CLOEXEC | MFD_HUGETLB | (30 << 26));
	if (*mfd < 0)
		return NULL;
	if (ftruncate(*mfd, len))
		p = MAP_FAILED;
	else
		p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED,
			 *mfd, 0);
	if (p == MAP_FAILED) {
		close(*mfd);
		return NULL;
	}
	return p;
}

/* Workers the module has started so far, from its sysfs counters */
static inline long workers_started(void)
{
	return read_long("/sys/class/misc/memprepop/stats/workers_started");
}

/* Threads that stayed and worked again, from the same counters */
static inline long workers_reused(void)
{
	return read_long("/sys/class/misc/memprepop/stats/workers_reused");
}

/* Calls their caller did alone, without workers (kmod/alone.c) */
static inline long calls_alone(void)
{
	return read_long("/sys/class/misc/memprepop/stats/calls_alone");
}

/* Pass descriptor @fd over the socket @sock: 0, or -1 */
static inline int send_fd(int sock, int fd)
{
	char cbuf[CMSG_SPACE(sizeof(int))] = { 0 }, byte = 0;
	struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
	struct msghdr msg = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = cbuf, .msg_controllen = sizeof(cbuf),
	};
	struct cmsghdr *cmsg = CMSG_FIRSTHDR(&msg);

	cmsg->cmsg_level = SOL_SOCKET;
	cmsg->cmsg_type = SCM_RIGHTS;
	cmsg->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cmsg), &fd, sizeof(fd));
	return sendmsg(sock, &msg, 0) == 1 ? 0 : -1;
}

/* A descriptor passed over the socket @sock, or -1 */
static inline int recv_fd(int sock)
{
	char cbuf[CMSG_SPACE(sizeof(int))], byte;
	struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
	struct msghdr msg = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = cbuf, .msg_controllen = sizeof(cbuf),
	};
	int fd;

	if (recvmsg(sock, &msg, 0) != 1 || !CMSG_FIRSTHDR(&msg))
		return -1;
	memcpy(&fd, CMSG_DATA(CMSG_FIRSTHDR(&msg)), sizeof(fd));
	return fd;
}

/*
 * Layouts of 16 MiB pieces, each of one kind, to compare the ioctl with
 * madvise() on: a fresh reservation each, identical each time.
 */
enum piece { RW, HOLE, RO, NONE, PAST_EOF };

#define PIECE	(16 * MiB)

/*
 * Lays @n pieces out at @base, a reservation of @n pieces (PROT_NONE), or
 * from a fresh one when @base is NULL; returns its start.
 */
static inline char *lay_out_at(char *base, const enum piece *layout, int n)
{
	char *p = base ?: mmap(NULL, n * PIECE, PROT_NONE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
			       -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	for (int i = 0; i < n; i++) {
		char *q = p + i * PIECE;
		int mfd;

		switch (layout[i]) {
		case RW:
		case RO:
			if (mmap(q, PIECE, layout[i] == RW ?
				 PROT_READ | PROT_WRITE : PROT_READ,
				 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1,
				 0) == MAP_FAILED)
				return NULL;
			break;
		case HOLE:
			munmap(q, PIECE);
			break;
		case NONE:
			break;
		case PAST_EOF:
			/* An empty file: every page is past its end */
			mfd = memfd_create("mpp-eof", 0);
			if (mfd < 0 || mmap(q, PIECE, PROT_READ | PROT_WRITE,
					    MAP_SHARED | MAP_FIXED, mfd, 0) ==
			    MAP_FAILED)
				return NULL;
			close(mfd);
			break;
		}
	}
	return p;
}

static inline char *lay_out(const enum piece *layout, int n)
{
	return lay_out_at(NULL, layout, n);
}

/* Bytes from @p up to the first page that is not present */
static inline size_t present_prefix(const char *p, size_t len)
{
	return pagemap_walk(p, len, true) * page_size();
}

#endif /* MEMPREPOP_TEST_H */
