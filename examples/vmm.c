// SPDX-License-Identifier: GPL-2.0
/*
 * A VMM's guest RAM, prepared the way a VMM would: one region per guest
 * NUMA node, each a memfd (hugetlb 2 MiB pages when the pool has them),
 * bound with mbind() to a host node before anything is touched; then all
 * regions populated and locked in ONE background request of a libmemprepop
 * context, while the VMM's epoll loop goes on with the rest of its setup
 * (here a timerfd standing for device setup), showing the progress; the
 * request reaped when its descriptor says so; the placement of every page
 * checked.
 *
 * usage: memprepop-example-vmm [SIZE_MIB [GUEST_NODES [fallback]]]
 *
 * It calls libnuma itself (mbind(), the node numbers), so it links it too:
 *   cc vmm.c $(pkg-config --cflags --libs memprepop) -lnuma
 */
#define _GNU_SOURCE
#include <errno.h>
#include <memprepop.h>
#include <numa.h>
#include <numaif.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/timerfd.h>
#include <unistd.h>

#define HUGE_2M		(2UL << 20)
/* The other setup: this many steps, one per tick */
#define SETUP_STEPS	10
#define TICK_NS		50000000L

struct region {
	int host_node;
	size_t len;
	bool huge;
	char *mem;
};

/* A shared mapping of a new memfd of @len, or NULL */
static char *map_memfd(size_t len, unsigned int flags)
{
	int fd = memfd_create("guest-ram", MFD_CLOEXEC | flags);
	char *mem = MAP_FAILED;

	if (fd < 0)
		return NULL;
	/* A hugetlb mmap fails here when the pool cannot cover it */
	if (!ftruncate(fd, len))
		mem = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
			   0);
	close(fd);
	return mem == MAP_FAILED ? NULL : mem;
}

/* Guest RAM, bound to its host node before anything touches it */
static int map_region(struct region *r)
{
	unsigned long mask = 1UL << r->host_node;

	r->mem = map_memfd(r->len, MFD_HUGETLB);
	r->huge = r->mem != NULL;
	if (!r->mem)
		r->mem = map_memfd(r->len, 0);
	if (!r->mem)
		return -errno;
	/* The policy first: every page is placed once, and never moved */
	if (mbind(r->mem, r->len, MPOL_BIND, &mask, sizeof(mask) * 8, 0))
		return -errno;
	return 0;
}

/* A timerfd ticking every TICK_NS */
static int ticker(void)
{
	struct itimerspec its = {
		.it_interval = { 0, TICK_NS },
		.it_value = { 0, TICK_NS },
	};
	int fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);

	if (fd >= 0 && timerfd_settime(fd, 0, &its, NULL)) {
		close(fd);
		return -1;
	}
	return fd;
}

/*
 * The VMM's loop: device setup on the timer's ticks, the progress shown on
 * each, until both the setup and the request are done. The request's
 * outcome, or a negative errno of the loop itself in *loop_err.
 */
static int event_loop(struct memprepop_ctx *ctx, struct memprepop_result *res,
		      unsigned int *setup_done, int *loop_err)
{
	int ep = epoll_create1(EPOLL_CLOEXEC), tfd = ticker();
	struct epoll_event ev = { .events = EPOLLIN };
	bool populated = false;
	int outcome = 0;

	*loop_err = 0;
	if (ep < 0 || tfd < 0) {
		*loop_err = -errno;
		goto out;
	}
	ev.data.fd = memprepop_ctx_fd(ctx);
	if (epoll_ctl(ep, EPOLL_CTL_ADD, ev.data.fd, &ev)) {
		*loop_err = -errno;
		goto out;
	}
	ev.data.fd = tfd;
	if (epoll_ctl(ep, EPOLL_CTL_ADD, tfd, &ev)) {
		*loop_err = -errno;
		goto out;
	}
	while (!populated || *setup_done < SETUP_STEPS) {
		struct epoll_event got[2];
		int n = epoll_wait(ep, got, 2, -1), i;

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			*loop_err = -errno;
			break;
		}
		for (i = 0; i < n; i++) {
			uint64_t ticks, done, total;

			if (got[i].data.fd != tfd) {
				/* The request wants reaping: it may start
				 * another batch (-EAGAIN) */
				outcome = memprepop_ctx_wait(ctx,
						MEMPREPOP_WAIT_NOHANG, res);
				populated = outcome != -EAGAIN;
				if (populated)
					epoll_ctl(ep, EPOLL_CTL_DEL,
						  got[i].data.fd, NULL);
				continue;
			}
			if (read(tfd, &ticks, sizeof(ticks)) < 0)
				continue;
			if (*setup_done < SETUP_STEPS)
				(*setup_done)++;	/* a device set up */
			if (!populated &&
			    !memprepop_ctx_progress(ctx, &done, &total))
				fprintf(stderr, "\r  guest RAM %3d%%, devices "
					"%u/%u", total ? (int)(100 * done /
							       total) : 100,
					*setup_done, SETUP_STEPS);
		}
	}
	fprintf(stderr, "\r%40s\r", "");
out:
	if (tfd >= 0)
		close(tfd);
	if (ep >= 0)
		close(ep);
	return outcome;
}

/* Is the mapping at @mem locked (VmFlags "lo" in /proc/self/smaps)? */
static bool locked(const void *mem)
{
	unsigned long start, end;
	bool ours = false, lo = false;
	char line[512];
	FILE *f = fopen("/proc/self/smaps", "r");

	if (!f)
		return false;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%lx-%lx ", &start, &end) == 2 &&
		    strchr(line, '-') < strchr(line, ' '))
			ours = start == (unsigned long)mem;
		else if (ours && !strncmp(line, "VmFlags:", 8))
			lo = strstr(line, " lo") != NULL;
	}
	fclose(f);
	return lo;
}

/* Where the region's pages are: every one on its host node, locked? */
static int check_region(const struct region *r, unsigned int guest_node)
{
	unsigned int nr_nodes = numa_num_possible_nodes();
	uint64_t *counts = calloc(nr_nodes, sizeof(*counts)), on_node;
	uint64_t pages = r->len / sysconf(_SC_PAGESIZE);
	bool lo = locked(r->mem);
	int err;

	if (!counts)
		return -ENOMEM;
	err = memprepop_node_pages(r->mem, r->len, counts, nr_nodes);
	on_node = counts[r->host_node];
	free(counts);
	if (err)
		return err;
	/* mlock() leaves hugetlb mappings alone: their pages never swap */
	printf("guest node %u: %zu MiB %s, host node %d, %.1f%% of pages on "
	       "node %d, %s\n", guest_node, r->len >> 20,
	       r->huge ? "hugetlb" : "shmem", r->host_node,
	       100.0 * on_node / pages, r->host_node,
	       lo ? "locked" : r->huge ? "never swapped" : "NOT locked");
	return on_node == pages && (lo || r->huge) ? 0 : -EIO;
}

int main(int argc, char **argv)
{
	size_t size = (argc > 1 ? strtoull(argv[1], NULL, 10) : 256) << 20;
	int host_nodes = numa_available() < 0 ? 1 : numa_max_node() + 1;
	unsigned int guest_nodes = argc > 2 ? atoi(argv[2]) : host_nodes;
	bool fallback = argc > 3 && !strcmp(argv[3], "fallback");
	struct memprepop_opts opts = MEMPREPOP_OPTS_INIT;
	struct memprepop_result res = MEMPREPOP_RESULT_INIT;
	struct memprepop_range *ranges;
	struct memprepop_ctx *ctx;
	struct region *regions;
	unsigned int i, setup_done = 0;
	int err, loop_err, ret = 0;

	if (!size || !guest_nodes) {
		fprintf(stderr, "usage: %s [SIZE_MIB [GUEST_NODES "
			"[fallback]]]\n", argv[0]);
		return 2;
	}
	regions = calloc(guest_nodes, sizeof(*regions));
	ranges = calloc(guest_nodes, sizeof(*ranges));
	if (!regions || !ranges)
		return 1;
	err = memprepop_ctx_new(&ctx, fallback ? MEMPREPOP_OPT_FALLBACK : 0);
	if (err) {
		fprintf(stderr, "context: %s\n", strerror(-err));
		return 1;
	}
	for (i = 0; i < guest_nodes; i++) {
		regions[i].host_node = i % host_nodes;
		regions[i].len = (size / guest_nodes + HUGE_2M - 1) &
				 ~(HUGE_2M - 1);
		err = map_region(&regions[i]);
		if (err) {
			fprintf(stderr, "guest node %u: %s\n", i,
				strerror(-err));
			return 1;
		}
		ranges[i].addr = (uintptr_t)regions[i].mem;
		ranges[i].len = regions[i].len;
	}

	/* All regions, one request, in the background */
	opts.flags = MEMPREPOP_OPT_LOCK;
	err = memprepop_ctx_start(ctx, ranges, guest_nodes, &opts);
	if (err) {
		fprintf(stderr, "start: %s\n", strerror(-err));
		return 1;
	}
	err = event_loop(ctx, &res, &setup_done, &loop_err);
	if (loop_err) {
		fprintf(stderr, "event loop: %s\n", strerror(-loop_err));
		return 1;
	}
	printf("guest RAM: %zu MiB over %u guest node%s in one background "
	       "request, %.3f s, %s with %u workers; %u of %u devices set up "
	       "meanwhile\n", size >> 20, guest_nodes,
	       guest_nodes == 1 ? "" : "s", res.nsecs / 1e9,
	       memprepop_backend_name(res.backend), res.workers, setup_done,
	       SETUP_STEPS);
	for (i = 0; i < guest_nodes; i++) {
		if (ranges[i].error) {
			fprintf(stderr, "guest node %u: %s after %llu bytes\n",
				i, strerror(-ranges[i].error),
				(unsigned long long)ranges[i].populated);
			if (ranges[i].error == -EFAULT && regions[i].huge)
				fprintf(stderr, "(hugetlb pool too small: "
					"reserve more in "
					"/proc/sys/vm/nr_hugepages)\n");
			ret = 1;
			continue;
		}
		if (check_region(&regions[i], i))
			ret = 1;
	}
	memprepop_ctx_free(ctx);
	return err || ret ? 1 : 0;
}
