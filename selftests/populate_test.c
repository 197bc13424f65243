// SPDX-License-Identifier: GPL-2.0
/*
 * MEMPREPOP_IOC_POPULATE and MEMPREPOP_IOC_INFO: the ABI, the populate
 * outcome for each memory kind, and the errno for each bad range compared
 * with madvise(MADV_POPULATE_WRITE) on an identical mapping.
 */
#define _GNU_SOURCE
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include <numa.h>

#include "kselftest_harness.h"
#include "memprepop_test.h"

#define MEMPREPOP_IOC_POPULATE_SIZED(size) \
	_IOC(_IOC_READ | _IOC_WRITE, MEMPREPOP_IOC_MAGIC, 0x01, (size))

FIXTURE(dev)
{
	int fd;
};

FIXTURE_SETUP(dev)
{
	self->fd = open(MEMPREPOP_DEVICE, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, self->fd) TH_LOG("open %s: %s (module not loaded?)",
				       MEMPREPOP_DEVICE, strerror(errno));
}

FIXTURE_TEARDOWN(dev)
{
	close(self->fd);
}

#define MEMPREPOP_IOC_INFO_SIZED(size) \
	_IOC(_IOC_READ, MEMPREPOP_IOC_MAGIC, 0x00, size)

TEST_F(dev, info)
{
	struct {
		struct memprepop_info info;
		uint64_t future[2];
	} big;
	struct memprepop_info info;

	memset(&info, 0xff, sizeof(info));
	ASSERT_EQ(0, ioctl(self->fd, MEMPREPOP_IOC_INFO, &info));
	EXPECT_EQ(MEMPREPOP_F_REQUIRE_MLOCKED | MEMPREPOP_F_BACKGROUND |
		  MEMPREPOP_F_EVENTFD | MEMPREPOP_F_BORROW_CPUS, info.flags);
	EXPECT_EQ(sizeof(struct memprepop_populate), info.populate_size);
	EXPECT_EQ(sizeof(struct memprepop_info), info.info_size);
	EXPECT_EQ(sysconf(_SC_NPROCESSORS_ONLN), info.max_workers);
	EXPECT_LE(1024, info.max_ranges);
	EXPECT_EQ(sizeof(struct memprepop_range), info.range_size);
	EXPECT_EQ(0, info.__reserved);

	/* A newer caller's longer structure: what the module does not know 0 */
	memset(&big, 0xff, sizeof(big));
	ASSERT_EQ(0, ioctl(self->fd, MEMPREPOP_IOC_INFO_SIZED(sizeof(big)),
			   &big));
	EXPECT_EQ(0, memcmp(&info, &big.info, sizeof(info)));
	EXPECT_EQ(0, big.future[0]);
	EXPECT_EQ(0, big.future[1]);
	EXPECT_EQ(-1, ioctl(self->fd, MEMPREPOP_IOC_INFO_SIZED(
				MEMPREPOP_INFO_SIZE_VER0 - 8), &info));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, ioctl(self->fd, MEMPREPOP_IOC_INFO, (void *)8));
	EXPECT_EQ(EFAULT, errno);
}

/* Every reserved field and unknown flag is refused, before anything is done */
TEST_F(dev, reserved_fields_refused)
{
	struct memprepop_control ctl = { .__reserved = 1 };
	struct memprepop_populate req;
	size_t len = 4 * page_size();
	char *p = map_anon(len);

	ASSERT_NE(NULL, p);
	for (int bit = 4; bit < 64; bit++) {
		EXPECT_EQ(-EINVAL, ioc_populate(self->fd, p, len, 1ULL << bit,
						&req));
	}
	/* An eventfd is only for the background */
	EXPECT_EQ(-EINVAL, ioc_populate(self->fd, p, len, MEMPREPOP_F_EVENTFD,
					&req));
	memset(&req, 0, sizeof(req));
	req.addr = (uintptr_t)p;
	req.len = len;
	req.__reserved = 1;
	EXPECT_EQ(-1, ioctl(self->fd, MEMPREPOP_IOC_POPULATE, &req));
	EXPECT_EQ(EINVAL, errno);
	req.__reserved = 0;
	req.__reserved2 = 1;
	EXPECT_EQ(-1, ioctl(self->fd, MEMPREPOP_IOC_POPULATE, &req));
	EXPECT_EQ(EINVAL, errno);
	req.__reserved2 = 0;
	req.control = (uintptr_t)&ctl;
	EXPECT_EQ(-1, ioctl(self->fd, MEMPREPOP_IOC_POPULATE, &req));
	EXPECT_EQ(EINVAL, errno);
	req.control = (uintptr_t)&ctl + 4;
	EXPECT_EQ(-1, ioctl(self->fd, MEMPREPOP_IOC_POPULATE, &req));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(0, present_pages(p, len));
	munmap(p, len);
}

/* Populated writable: every page present, and writing them faults no more */
TEST_F(dev, anon_private_4k)
{
	size_t len = 64 * MiB, i;
	struct memprepop_populate req;
	struct rusage before, after;
	char *p = map_anon(len);

	ASSERT_NE(NULL, p);
	ASSERT_EQ(0, no_thp(p, len));
	ASSERT_EQ(0, ioc_populate(self->fd, p, len, 0, &req));
	EXPECT_EQ(len, req.populated);
	EXPECT_LE(1, req.workers);
	EXPECT_LT(0, req.nsecs);
	EXPECT_EQ(len / page_size(), present_pages(p, len));

	getrusage(RUSAGE_SELF, &before);
	for (i = 0; i < len; i += page_size())
		p[i] = 1;
	getrusage(RUSAGE_SELF, &after);
	EXPECT_EQ(before.ru_minflt, after.ru_minflt);
	munmap(p, len);
}

TEST_F(dev, len_zero_does_nothing)
{
	struct memprepop_populate req;
	char *p = map_anon(page_size());

	ASSERT_NE(NULL, p);
	EXPECT_EQ(0, ioc_populate(self->fd, p, 0, 0, &req));
	EXPECT_EQ(0, req.populated);
	EXPECT_EQ(0, present_pages(p, page_size()));
	munmap(p, page_size());
}

TEST_F(dev, len_rounded_up_like_madvise)
{
	struct memprepop_populate req;
	char *p = map_anon(4 * page_size());

	ASSERT_NE(NULL, p);
	EXPECT_EQ(0, ioc_populate(self->fd, p, page_size() + 1, 0, &req));
	EXPECT_EQ(2 * page_size(), req.populated);
	EXPECT_EQ(2, present_pages(p, 4 * page_size()));
	munmap(p, 4 * page_size());
}

TEST_F(dev, bad_arguments_einval)
{
	struct memprepop_populate req;
	char *p = map_anon(2 * page_size());

	ASSERT_NE(NULL, p);
	/* unaligned address */
	EXPECT_EQ(-EINVAL, ioc_populate(self->fd, p + 1, page_size(), 0, &req));
	EXPECT_EQ(-EINVAL, madvise_populate_write(p + 1, page_size()));
	/* addr + len wraps */
	EXPECT_EQ(-EINVAL, ioc_populate(self->fd, p, -page_size(), 0, &req));
	EXPECT_EQ(-EINVAL, ioc_populate(self->fd, p, ~0UL, 0, &req));
	/* beyond the user address space: nothing mapped there, as madvise */
	EXPECT_EQ(madvise_populate_write((void *)0xffff800000000000UL,
					 page_size()),
		  ioc_populate(self->fd, (void *)0xffff800000000000UL,
			       page_size(), 0, &req));
	EXPECT_EQ(-ENOMEM, ioc_populate(self->fd,
					(void *)0xffff800000000000UL,
					page_size(), 0, &req));
	/* len 0 succeeds wherever the address is, as madvise */
	EXPECT_EQ(0, madvise_populate_write((void *)0xffff800000000000UL, 0));
	EXPECT_EQ(0, ioc_populate(self->fd, (void *)0xffff800000000000UL, 0,
				  0, &req));
	/* unknown flags, every one of them, and an eventfd without background */
	for (int bit = 2; bit < 64; bit++) {
		if (1ULL << bit == MEMPREPOP_F_BORROW_CPUS)
			continue;
		EXPECT_EQ(-EINVAL, ioc_populate(self->fd, p, page_size(),
						1ULL << bit, &req));
	}
	EXPECT_EQ(0, present_pages(p, 2 * page_size()));
	munmap(p, 2 * page_size());
}

/* The struct travels with its size: shorter is refused, longer must be 0 */
TEST_F(dev, struct_sizes)
{
	struct {
		struct memprepop_populate req;
		uint64_t future[2];
	} big;
	struct memprepop_populate req;
	char *p = map_anon(4 * page_size());

	ASSERT_NE(NULL, p);
	memset(&req, 0, sizeof(req));
	req.addr = (uintptr_t)p;
	req.len = page_size();
	EXPECT_EQ(-1, ioctl(self->fd, MEMPREPOP_IOC_POPULATE_SIZED(24), &req));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(0, ioctl(self->fd, MEMPREPOP_IOC_POPULATE_SIZED(
				MEMPREPOP_POPULATE_SIZE_VER0), &req));
	EXPECT_EQ(page_size(), req.populated);

	memset(&big, 0, sizeof(big));
	big.req.addr = (uintptr_t)p;
	big.req.len = 2 * page_size();
	EXPECT_EQ(0, ioctl(self->fd, MEMPREPOP_IOC_POPULATE_SIZED(sizeof(big)),
			   &big));
	EXPECT_EQ(2 * page_size(), big.req.populated);
	big.future[1] = 1;
	EXPECT_EQ(-1, ioctl(self->fd, MEMPREPOP_IOC_POPULATE_SIZED(sizeof(big)),
			    &big));
	EXPECT_EQ(E2BIG, errno);

	EXPECT_EQ(-1, ioctl(self->fd, _IO(MEMPREPOP_IOC_MAGIC, 0x7f)));
	EXPECT_EQ(ENOTTY, errno);
	munmap(p, 4 * page_size());
}

/* A hole: ENOMEM like madvise, populated up to the hole exactly */
TEST_F(dev, hole_enomem)
{
	size_t chunk = 4 * MiB;
	struct memprepop_populate req;
	char *p = map_anon(3 * chunk);

	ASSERT_NE(NULL, p);
	ASSERT_EQ(0, munmap(p + chunk, chunk));
	EXPECT_EQ(-ENOMEM, ioc_populate(self->fd, p, 3 * chunk, 0, &req));
	EXPECT_EQ(chunk, req.populated);
	EXPECT_EQ(chunk / page_size(), present_pages(p, chunk));
	EXPECT_EQ(-ENOMEM, madvise_populate_write(p, 3 * chunk));
	/* a range that starts in the hole */
	EXPECT_EQ(-ENOMEM, ioc_populate(self->fd, p + chunk, chunk, 0, &req));
	EXPECT_EQ(0, req.populated);
	munmap(p, chunk);
	munmap(p + 2 * chunk, chunk);
}

/* Mappings that cannot be populated writable: the errno madvise gives */
TEST_F(dev, not_writable_like_madvise)
{
	static const int prots[] = { PROT_READ, PROT_NONE, PROT_EXEC };
	size_t len = 8 * page_size();
	struct memprepop_populate req;

	for (unsigned int i = 0; i < sizeof(prots) / sizeof(prots[0]); i++) {
		char *p = mmap(NULL, len, prots[i], MAP_PRIVATE | MAP_ANONYMOUS,
			       -1, 0);
		int want;

		ASSERT_NE(MAP_FAILED, p);
		want = madvise_populate_write(p, len);
		EXPECT_EQ(-EINVAL, want);
		EXPECT_EQ(want, ioc_populate(self->fd, p, len, 0, &req));
		EXPECT_EQ(0, req.populated);
		munmap(p, len);
	}
}

/* Writable then read-only: populated stops exactly at the read-only part */
TEST_F(dev, populated_exact_at_bad_vma)
{
	size_t len = 16 * page_size();
	struct memprepop_populate req;
	char *p = map_anon(len);

	ASSERT_NE(NULL, p);
	ASSERT_EQ(0, mprotect(p + len / 2, len / 2, PROT_READ));
	EXPECT_EQ(-EINVAL, ioc_populate(self->fd, p, len, 0, &req));
	EXPECT_EQ(len / 2, req.populated);
	EXPECT_EQ(len / 2 / page_size(), present_pages(p, len));
	munmap(p, len);
}

TEST_F(dev, lock_requires_mlocked_range)
{
	size_t len = 16 * MiB;
	struct memprepop_populate req;
	char *p = map_anon(len);

	ASSERT_NE(NULL, p);
	EXPECT_EQ(-EINVAL, ioc_populate(self->fd, p, len, MEMPREPOP_F_REQUIRE_MLOCKED,
					&req));
	EXPECT_EQ(0, present_pages(p, len));

	ASSERT_EQ(0, mlock2(p, len, MLOCK_ONFAULT));
	EXPECT_EQ(0, smaps_field_kb(p, "Locked"));
	EXPECT_EQ(0, ioc_populate(self->fd, p, len, MEMPREPOP_F_REQUIRE_MLOCKED, &req));
	EXPECT_EQ(len, req.populated);
	EXPECT_EQ(len / KiB, smaps_field_kb(p, "Locked"));
	EXPECT_EQ(len / page_size(), present_pages(p, len));
	ASSERT_EQ(0, munlock(p, len));
	EXPECT_EQ(0, smaps_field_kb(p, "Locked"));
	munmap(p, len);
}

TEST_F(dev, shared_anon_and_memfd)
{
	size_t len = 16 * MiB;
	struct memprepop_populate req;
	char *p;
	int mfd;

	p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, p);
	EXPECT_EQ(0, ioc_populate(self->fd, p, len, 0, &req));
	EXPECT_EQ(len, req.populated);
	EXPECT_EQ(len / page_size(), present_pages(p, len));
	munmap(p, len);

	mfd = memfd_create("memprepop-test", MFD_CLOEXEC);
	ASSERT_LE(0, mfd);
	ASSERT_EQ(0, ftruncate(mfd, len));
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0);
	ASSERT_NE(MAP_FAILED, p);
	EXPECT_EQ(0, ioc_populate(self->fd, p, len, 0, &req));
	EXPECT_EQ(len, req.populated);
	EXPECT_EQ(len / page_size(), present_pages(p, len));
	munmap(p, len);
	close(mfd);
}

TEST_F(dev, hugetlb_memfd_2m)
{
	size_t len = 8 * HPAGE;
	struct memprepop_populate req;
	long free_before;
	char *p;
	int mfd;

	free_before = meminfo_field("HugePages_Free");
	if (free_before < 8)
		SKIP(return, "needs 8 free 2 MiB hugetlb pages, has %ld",
		     free_before);
	mfd = memfd_create("memprepop-huge", MFD_CLOEXEC | MFD_HUGETLB);
	ASSERT_LE(0, mfd);
	ASSERT_EQ(0, ftruncate(mfd, len));
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0);
	ASSERT_NE(MAP_FAILED, p);
	EXPECT_EQ(0, ioc_populate(self->fd, p, len, 0, &req));
	EXPECT_EQ(len, req.populated);
	EXPECT_EQ(free_before - 8, meminfo_field("HugePages_Free"));
	EXPECT_EQ(len / page_size(), present_pages(p, len));
	munmap(p, len);
	close(mfd);
}

/* Hugetlb pool exhausted: EFAULT like madvise, never SIGBUS */
TEST_F(dev, hugetlb_pool_exhausted_efault)
{
	long free_pages = meminfo_field("HugePages_Free");
	size_t len = (free_pages + 4) * HPAGE;
	struct memprepop_populate req;
	char *p;

	if (free_pages < 1)
		SKIP(return, "no free 2 MiB hugetlb pages");
	p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB | MAP_NORESERVE,
		 -1, 0);
	ASSERT_NE(MAP_FAILED, p);
	EXPECT_EQ(-EFAULT, ioc_populate(self->fd, p, len, 0, &req));
	EXPECT_EQ(free_pages * HPAGE, req.populated);
	EXPECT_EQ(0, meminfo_field("HugePages_Free"));
	munmap(p, len);

	p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB | MAP_NORESERVE,
		 -1, 0);
	ASSERT_NE(MAP_FAILED, p);
	EXPECT_EQ(-EFAULT, madvise_populate_write(p, len));
	munmap(p, len);
	EXPECT_EQ(free_pages, meminfo_field("HugePages_Free"));
}

/* Node statistics: what numa_maps says, node for node, into any array size */
TEST_F(dev, node_stats_as_numa_maps)
{
	uint64_t counts[TEST_NODES + 2], want[TEST_NODES];
	size_t len = 32 * MiB;
	int nid;
	struct memprepop_populate req;
	char *p = map_anon(len);

	ASSERT_NE(NULL, p);
	ASSERT_LT(numa_max_node(), TEST_NODES);
	memset(counts, 0xff, sizeof(counts));
	ASSERT_EQ(0, ioc_populate_stats(self->fd, p, len, 0, counts,
					TEST_NODES, &req));
	ASSERT_EQ(0, numa_maps_nodes(p, len, want, TEST_NODES));
	for (nid = 0; nid < TEST_NODES; nid++)
		EXPECT_EQ(want[nid], counts[nid]) TH_LOG("node %d", nid);
	EXPECT_EQ(len / page_size(), sum_counts(counts, TEST_NODES));
	/* Never written past the array */
	EXPECT_EQ(UINT64_MAX, counts[TEST_NODES]);
	munmap(p, len);

	/* One entry: node 0's pages only, the rest not counted */
	p = map_anon(len);
	ASSERT_NE(NULL, p);
	memset(counts, 0xff, sizeof(counts));
	ASSERT_EQ(0, ioc_populate_stats(self->fd, p, len, 0, counts, 1, &req));
	ASSERT_EQ(0, numa_maps_nodes(p, len, want, TEST_NODES));
	EXPECT_EQ(want[0], counts[0]);
	EXPECT_EQ(UINT64_MAX, counts[1]);
	munmap(p, len);
}

/* The array and its length go together; a bad array fails before any fault */
TEST_F(dev, node_stats_array_checked)
{
	size_t len = 4 * MiB;
	struct memprepop_populate req;
	uint64_t counts[TEST_NODES], *ro;
	char *p = map_anon(len);

	ASSERT_NE(NULL, p);
	EXPECT_EQ(-EINVAL, ioc_populate_stats(self->fd, p, len, 0, counts, 0,
					      &req));
	EXPECT_EQ(-EINVAL, ioc_populate_stats(self->fd, p, len, 0, NULL,
					      TEST_NODES, &req));
	EXPECT_EQ(-EFAULT, ioc_populate_stats(self->fd, p, len, 0,
					      (uint64_t *)8, TEST_NODES,
					      &req));
	EXPECT_EQ(0, present_pages(p, len));
	/* Read-only memory is not written either */
	ro = mmap(NULL, page_size(), PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS,
		  -1, 0);
	ASSERT_NE(MAP_FAILED, ro);
	EXPECT_EQ(-EFAULT, ioc_populate_stats(self->fd, p, len, 0, ro,
					      TEST_NODES, &req));
	EXPECT_EQ(0, present_pages(p, len));
	munmap(ro, page_size());
	munmap(p, len);
}

/* THP: populated in PMD steps, every 2 MiB a huge page */
TEST_F(dev, thp_private_anon)
{
	size_t len = 32 * MiB;
	struct memprepop_populate req;
	char *raw, *p;

	if (access("/sys/kernel/mm/transparent_hugepage/enabled", R_OK))
		SKIP(return, "no THP");
	raw = map_anon(len + HPAGE);
	ASSERT_NE(NULL, raw);
	p = (char *)(((uintptr_t)raw + HPAGE - 1) & ~(HPAGE - 1));
	ASSERT_EQ(0, madvise(p, len, MADV_HUGEPAGE));
	ASSERT_EQ(0, ioc_populate(self->fd, p, len, 0, &req));
	EXPECT_EQ(len, req.populated);
	EXPECT_EQ(len / KiB, smaps_field_kb(p, "AnonHugePages"));
	munmap(raw, len + HPAGE);
}

/* A file on hugetlbfs, as a VMM maps guest RAM from it */
TEST_F(dev, hugetlbfs_file)
{
	size_t len = 4 * HPAGE;
	struct memprepop_populate req;
	char path[64];
	long free0;
	char *p;
	int fd;

	free0 = meminfo_field("HugePages_Free");
	if (free0 < 4 || access("/dev/hugepages", W_OK))
		SKIP(return, "needs hugetlbfs on /dev/hugepages, 4 free pages");
	snprintf(path, sizeof(path), "/dev/hugepages/mpp-%d", getpid());
	fd = open(path, O_CREAT | O_RDWR | O_CLOEXEC, 0600);
	ASSERT_LE(0, fd);
	unlink(path);
	ASSERT_EQ(0, ftruncate(fd, len));
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	EXPECT_EQ(0, ioc_populate(self->fd, p, len, 0, &req));
	EXPECT_EQ(len, req.populated);
	EXPECT_EQ(free0 - 4, meminfo_field("HugePages_Free"));
	munmap(p, len);
	close(fd);
}

/* A shared tmpfs file: its pages are allocated in the file */
TEST_F(dev, tmpfs_file_shared)
{
	size_t len = 16 * MiB;
	struct memprepop_populate req;
	struct stat st;
	char path[64];
	char *p;
	int fd;

	snprintf(path, sizeof(path), "/dev/shm/mpp-%d", getpid());
	fd = open(path, O_CREAT | O_RDWR | O_CLOEXEC, 0600);
	ASSERT_LE(0, fd);
	unlink(path);
	ASSERT_EQ(0, ftruncate(fd, len));
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	EXPECT_EQ(0, ioc_populate(self->fd, p, len, 0, &req));
	EXPECT_EQ(len, req.populated);
	ASSERT_EQ(0, fstat(fd, &st));
	EXPECT_EQ(len, (size_t)st.st_blocks * 512);
	munmap(p, len);
	close(fd);
}

TEST_F(dev, hugetlb_memfd_1g)
{
	size_t len = 1024 * MiB;
	struct memprepop_populate req;
	long free0 = read_long(HUGE_1G_FREE);
	char *p;
	int mfd;

	if (free0 < 1)
		SKIP(return, "no free 1 GiB hugetlb page");
	p = map_hugetlb_1g(len, &mfd);
	ASSERT_NE(NULL, p);
	EXPECT_EQ(0, ioc_populate(self->fd, p, len, 0, &req));
	EXPECT_EQ(len, req.populated);
	EXPECT_EQ(free0 - 1, read_long(HUGE_1G_FREE));
	munmap(p, len);
	close(mfd);
}

/* VM_IO | VM_PFNMAP (/dev/mem): the errno madvise gives */
TEST_F(dev, pfnmap_like_madvise)
{
	struct memprepop_populate req;
	int mem = open("/dev/mem", O_RDWR | O_CLOEXEC);
	char *p;

	if (mem < 0)
		SKIP(return, "no /dev/mem");
	p = mmap(NULL, page_size(), PROT_READ | PROT_WRITE, MAP_SHARED, mem,
		 0);
	if (p == MAP_FAILED)
		SKIP(return, "cannot map /dev/mem: %s", strerror(errno));
	EXPECT_EQ(-EINVAL, madvise_populate_write(p, page_size()));
	EXPECT_EQ(-EINVAL, ioc_populate(self->fd, p, page_size(), 0, &req));
	EXPECT_EQ(0, req.populated);
	munmap(p, page_size());
	close(mem);
}

#ifndef __NR_memfd_secret
#define __NR_memfd_secret 447
#endif

TEST_F(dev, secretmem_like_madvise)
{
	size_t len = 4 * page_size();
	struct memprepop_populate req;
	int sfd = syscall(__NR_memfd_secret, 0);
	char *p;

	if (sfd < 0)
		SKIP(return, "no memfd_secret: %s", strerror(errno));
	ASSERT_EQ(0, ftruncate(sfd, len));
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, sfd, 0);
	ASSERT_NE(MAP_FAILED, p);
	EXPECT_EQ(-EINVAL, madvise_populate_write(p, len));
	EXPECT_EQ(-EINVAL, ioc_populate(self->fd, p, len, 0, &req));
	EXPECT_EQ(0, req.populated);
	munmap(p, len);
	close(sfd);
}

/* mlock() leaves hugetlb mappings as they are: F_REQUIRE_MLOCKED takes them so too */
TEST_F(dev, lock_hugetlb_like_mlock)
{
	size_t len = 4 * HPAGE;
	struct memprepop_populate req;
	char *p;

	if (meminfo_field("HugePages_Free") < 4)
		SKIP(return, "needs 4 free 2 MiB hugetlb pages");
	p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB, -1, 0);
	ASSERT_NE(MAP_FAILED, p);
	ASSERT_EQ(0, mlock2(p, len, MLOCK_ONFAULT));
	EXPECT_EQ(0, ioc_populate(self->fd, p, len, MEMPREPOP_F_REQUIRE_MLOCKED, &req));
	EXPECT_EQ(len, req.populated);
	munmap(p, len);
}

/* F_REQUIRE_MLOCKED stops exactly where the mlocked part of the range ends */
TEST_F(dev, lock_stops_at_unlocked_part)
{
	size_t len = 32 * MiB;
	struct memprepop_populate req;
	char *p = map_anon(len);

	ASSERT_NE(NULL, p);
	ASSERT_EQ(0, mlock2(p, len / 2, MLOCK_ONFAULT));
	EXPECT_EQ(-EINVAL, ioc_populate(self->fd, p, len, MEMPREPOP_F_REQUIRE_MLOCKED,
					&req));
	EXPECT_EQ(len / 2, req.populated);
	EXPECT_EQ(len / 2 / KiB, smaps_field_kb(p, "Locked"));
	EXPECT_EQ(len / 2 / page_size(), present_pages(p, len));
	munmap(p, len);
}

TEST_HARNESS_MAIN
