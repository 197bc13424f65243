/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The module's worker threads seen from outside, as /proc/PID/stat and
 * sched_getattr(2) show them: how many there are, and whose they look like.
 */
#ifndef MEMPREPOP_WORKER_HELPERS_H
#define MEMPREPOP_WORKER_HELPERS_H

#include <ctype.h>
#include <dirent.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>

#include "memprepop_test.h"

struct worker_stat {
	int policy;
	int nice;
	long uclamp_min;	/* -1: not shown (no CONFIG_UCLAMP_TASK) */
	long uclamp_max;
	int ioprio;		/* as ioprio_get(2) reports it */
	int tid;
	char state;		/* 'I' while it waits idle between calls */
	int cpu;		/* the CPU it last ran on */
	unsigned long ticks;	/* utime + stime, in clock ticks */
};

/* What sched_setattr(2) and sched_getattr(2) take, up to the clamps */
struct sched_attr_clamps {
	uint32_t size;
	uint32_t sched_policy;
	uint64_t sched_flags;
	int32_t sched_nice;
	uint32_t sched_priority;
	uint64_t sched_runtime, sched_deadline, sched_period;
	uint32_t sched_util_min, sched_util_max;
};

/* Utilization clamps of a task, as sched_getattr(2) reports them */
static inline void read_uclamp(const char *pid, struct worker_stat *ws)
{
	struct sched_attr_clamps attr = { 0 };

	ws->uclamp_min = ws->uclamp_max = -1;
	if (syscall(SYS_sched_getattr, atoi(pid), &attr, sizeof(attr), 0))
		return;
	ws->uclamp_min = attr.sched_util_min;
	ws->uclamp_max = attr.sched_util_max;
}

/* A thread's I/O priority, as ioprio_get(IOPRIO_WHO_PROCESS) reports it */
static inline int task_ioprio(pid_t tid)
{
	return syscall(SYS_ioprio_get, 1, tid);
}

/*
 * Reads /proc/@path/stat into @ws if it is a memprepop worker's: field 3 is
 * the state, 14 and 15 user and system time, 19 nice, 39 the CPU last run
 * on, 41 the policy. Returns 1 for a worker, else 0.
 */
static inline int read_worker(const char *path, int tid, struct worker_stat *ws)
{
	char file[700], buf[1024], id[16], *s;
	int field = 2, fd;
	ssize_t len;

	snprintf(file, sizeof(file), "/proc/%s/stat", path);
	fd = open(file, O_RDONLY);
	if (fd < 0)
		return 0;
	len = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (len <= 0)
		return 0;
	buf[len] = 0;
	if (!strstr(buf, "(memprepop/"))
		return 0;
	if (!ws)
		return 1;
	s = strrchr(buf, ')');
	ws->ticks = 0;
	for (s = strtok(s + 1, " "); s; s = strtok(NULL, " ")) {
		field++;
		if (field == 3)
			ws->state = s[0];
		if (field == 14 || field == 15)
			ws->ticks += strtoul(s, NULL, 10);
		if (field == 39)
			ws->cpu = atoi(s);
		if (field == 19)
			ws->nice = atoi(s);
		if (field == 41)
			ws->policy = atoi(s);
	}
	snprintf(id, sizeof(id), "%d", tid);
	ws->tid = tid;
	read_uclamp(id, ws);
	ws->ioprio = task_ioprio(tid);
	return 1;
}

/*
 * Calls @fn(@arg, "PID/task/TID", TID) for every thread in /proc; returns
 * the sum of what it returned, or -1 without /proc
 */
static inline int walk_threads(int (*fn)(void *arg, const char *path, int tid),
			       void *arg)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d))) {
		char path[600];
		struct dirent *te;
		DIR *td;

		if (!isdigit((unsigned char)e->d_name[0]))
			continue;
		snprintf(path, sizeof(path), "/proc/%s/task", e->d_name);
		td = opendir(path);
		if (!td)
			continue;
		while ((te = readdir(td))) {
			if (!isdigit((unsigned char)te->d_name[0]))
				continue;
			snprintf(path, sizeof(path), "%s/task/%s", e->d_name,
				 te->d_name);
			n += fn(arg, path, atoi(te->d_name));
		}
		closedir(td);
	}
	closedir(d);
	return n;
}

/* Where scan_workers() is at */
struct worker_scan {
	struct worker_stat *ws;
	int max, n;
};

static inline int scan_one_worker(void *arg, const char *path, int tid)
{
	struct worker_scan *sc = arg;
	int found = read_worker(path, tid, sc->n < sc->max ? &sc->ws[sc->n] :
				NULL);

	sc->n += found;
	return found;
}

/*
 * The memprepop workers alive now, as /proc/PID/task/TID/stat shows them:
 * threads of the processes they work for. Fills up to
 * @max of @ws, returns how many there are.
 */
static inline int scan_workers(struct worker_stat *ws, int max)
{
	struct worker_scan sc = { .ws = ws, .max = max };

	return walk_threads(scan_one_worker, &sc);
}

/* How many workers are threads of this process (vhost_task) */
static inline int own_workers(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d))) {
		char path[300];

		if (!isdigit((unsigned char)e->d_name[0]))
			continue;
		snprintf(path, sizeof(path), "self/task/%s", e->d_name);
		n += read_worker(path, atoi(e->d_name), NULL);
	}
	closedir(d);
	return n;
}

/*
 * The cgroup v2 path of thread @tid, as /proc/TID/cgroup shows it ("/" for
 * the root), into @buf; "" when it is gone.
 */
static inline void task_cgroup(int tid, char *buf, size_t size)
{
	char path[64], line[512];
	FILE *f;

	buf[0] = 0;
	snprintf(path, sizeof(path), "/proc/%d/cgroup", tid);
	f = fopen(path, "r");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "0::", 3)) {
			line[strcspn(line, "\n")] = 0;
			snprintf(buf, size, "%s", line + 3);
		}
	fclose(f);
}

/* Waits up to @secs for every worker to be gone: true when they are */
static inline bool workers_gone(double secs)
{
	double t0 = now();

	while (scan_workers(NULL, 0) > 0) {
		if (now() - t0 > secs)
			return false;
		usleep(10 * 1000);
	}
	return true;
}

/* The calling process becomes SCHED_BATCH at nice 5: 0, or -1 */
static inline int become_batch_nice5(void)
{
	struct sched_param sp = { 0 };

	if (sched_setscheduler(0, SCHED_BATCH, &sp))
		return -1;
	return setpriority(PRIO_PROCESS, 0, 5);
}

/*
 * The workers alive now, from /proc: adds them to @seen and those not
 * SCHED_BATCH at nice 5 to @bad.
 */
/*
 * Waiting idle between calls (vhost's loop sleeps interruptibly): such a
 * worker shows the last caller's attributes until a call takes it
 */
static inline bool worker_idle(const struct worker_stat *ws)
{
	return ws->state == 'S';
}

static inline void sample_batch_nice5(int *seen, int *bad)
{
	struct worker_stat ws[64];
	int n = scan_workers(ws, 64);

	for (int i = 0; i < n && i < 64; i++) {
		if (worker_idle(&ws[i]))
			continue;
		(*seen)++;
		if (ws[i].policy != SCHED_BATCH || ws[i].nice != 5)
			(*bad)++;
	}
}

#endif /* MEMPREPOP_WORKER_HELPERS_H */
