// SPDX-License-Identifier: GPL-2.0
/*
 * sandbox: run a command under a seccomp filter that refuses what real
 * sandboxes refuse, with the errno they give, so that the tool and the
 * library are tested as they run there:
 *
 *   numa      the NUMA system calls, as Docker's and Podman's default
 *             profiles do without CAP_SYS_NICE (EPERM)
 *   affinity  sched_setaffinity() and sched_setscheduler(), as QEMU's
 *             -sandbox resourcecontrol=deny does under libvirt (EPERM)
 *
 * usage: sandbox [--refuse numa|affinity]... [--] CMD [ARG]...
 * Exit: CMD's, or 125 when the filter cannot be set up, 127 when CMD
 * cannot be run.
 */
#include <errno.h>
#include <seccomp.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static const int numa_calls[] = {
	SCMP_SYS(mbind), SCMP_SYS(set_mempolicy), SCMP_SYS(get_mempolicy),
	SCMP_SYS(move_pages), SCMP_SYS(migrate_pages),
};

static const int affinity_calls[] = {
	SCMP_SYS(sched_setaffinity), SCMP_SYS(sched_setscheduler),
	SCMP_SYS(sched_setattr),
};

static int refuse(scmp_filter_ctx ctx, const int *calls, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++)
		if (seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), calls[i], 0))
			return -1;
	return 0;
}

int main(int argc, char **argv)
{
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	int i = 1, ret = 0;

	if (!ctx)
		return 125;
	for (; i < argc && !ret; i++) {
		if (!strcmp(argv[i], "--")) {
			i++;
			break;
		}
		if (strcmp(argv[i], "--refuse") || i + 1 == argc)
			break;
		i++;
		if (!strcmp(argv[i], "numa"))
			ret = refuse(ctx, numa_calls,
				     sizeof(numa_calls) / sizeof(numa_calls[0]));
		else if (!strcmp(argv[i], "affinity"))
			ret = refuse(ctx, affinity_calls,
				     sizeof(affinity_calls) /
				     sizeof(affinity_calls[0]));
		else
			ret = -1;
	}
	if (ret || i >= argc) {
		fprintf(stderr, "usage: sandbox [--refuse numa|affinity]... "
			"[--] CMD [ARG]...\n");
		seccomp_release(ctx);
		return 125;
	}
	if (seccomp_load(ctx)) {
		seccomp_release(ctx);
		return 125;
	}
	seccomp_release(ctx);
	execvp(argv[i], argv + i);
	perror(argv[i]);
	return 127;
}
