// SPDX-License-Identifier: GPL-2.0
/*
 * memprepop populate --pid: populate another process's memory, such as a
 * stock VMM's guest RAM before its vCPUs run, through a context of the
 * library on that process (memprepop_ctx_new_pid()). Which ranges:
 *
 *   --range START+LEN  as given;
 *   --qmp SOCKET       QEMU's memory backends: their ids from query-memdev,
 *                      their host addresses and sizes from the RAM blocks
 *                      of x-query-ramblock with those names;
 *   neither            the process's writable mappings that have a memory
 *                      policy of their own in /proc/PID/numa_maps (what
 *                      QEMU's host-nodes and policy set), or that map a
 *                      QEMU memfd backend; none found is an error, never a
 *                      guess.
 *
 * A kernel that cannot populate another process is found before anything
 * is asked of the process or touched: exit 2, one line.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "tool.h"

#ifndef __NR_pidfd_open
#define __NR_pidfd_open	434
#endif

/* Most ranges found or given */
#define REMOTE_MAX_RANGES	256
/* Seconds QEMU's monitor may take to answer */
#define QMP_TIMEOUT_S		30

struct remote {
	pid_t pid;
	const char *qmp;
	struct memprepop_range ranges[REMOTE_MAX_RANGES];
	char *names[REMOTE_MAX_RANGES];	/* where each was found */
	unsigned int nr;
	const char *found;		/* how the ranges were found */
	struct memprepop_opts opts;
	struct run run;
};

enum { OPT_PID = 300, OPT_RANGE, OPT_QMP };

static const struct option remote_opts[] = {
	{ "pid", required_argument, NULL, OPT_PID },
	{ "range", required_argument, NULL, OPT_RANGE },
	{ "qmp", required_argument, NULL, OPT_QMP },
	{ "threads", required_argument, NULL, 't' },
	{ "borrow-cpus", no_argument, NULL, OPT_BORROW_CPUS },
	{ "json", no_argument, NULL, OPT_JSON },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

static void usage_remote(FILE *f)
{
	fprintf(f,
		"usage: %s populate --pid PID [--range START+LEN]... "
		"[--qmp SOCKET] [options]\n"
		"\n"
		"Populates memory of process PID (writable, as its own\n"
		"madvise(MADV_POPULATE_WRITE) would), from threads of this "
		"process per\nNUMA node, and prints what was found, size, "
		"seconds, GB/s and pages per\nnode. Needs the right to "
		"attach to PID (ptrace) and a kernel whose\n"
		"process_madvise() populates another process "
		"(contrib/linux).\n"
		"\n"
		"      --pid PID         the process\n"
		"      --range START+LEN its addresses: START in hex (0x...) or "
		"decimal, LEN\n"
		"                        in bytes or with K, M, G, T; again "
		"for more\n"
		"      --qmp SOCKET      QEMU's memory backends, asked on its "
		"QMP socket\n"
		"                        (query-memdev, x-query-ramblock)\n"
		"                        without either: its mappings with a "
		"memory policy of\n"
		"                        their own, or of a QEMU memfd "
		"backend\n"
		"  -t, --threads N       at most N threads\n"
		"      --borrow-cpus     reach N with idle CPUs of other nodes "
		"too\n"
		"      --json            one JSON object on stdout\n"
		"  -h, --help            this text\n", prog);
}

static int add_range(struct remote *r, uint64_t start, uint64_t len,
		     const char *name)
{
	if (r->nr == REMOTE_MAX_RANGES) {
		fprintf(stderr, "%s: more than %d ranges\n", prog,
			REMOTE_MAX_RANGES);
		return 2;
	}
	r->names[r->nr] = strdup(name);
	if (!r->names[r->nr]) {
		fprintf(stderr, "%s: out of memory\n", prog);
		return 1;
	}
	r->ranges[r->nr++] = (struct memprepop_range){ .addr = start,
						       .len = len };
	return 0;
}

/* A pid: 1 to INT_MAX (pid_max may be up to 2^22), false otherwise */
static bool parse_pid(const char *s, pid_t *pid)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < 1 || v > INT_MAX)
		return false;
	*pid = v;
	return true;
}

/* START+LEN: false when it is not one */
static bool parse_range(const char *s, uint64_t *start, uint64_t *len)
{
	const char *plus = strchr(s, '+');
	char *end;

	if (!plus || plus == s)
		return false;
	errno = 0;
	/* Hex with 0x, else decimal (never octal) */
	*start = strtoull(s, &end,
			  !strncmp(s, "0x", 2) || !strncmp(s, "0X", 2) ? 16 : 10);
	if (errno || end != plus || *s == '-')
		return false;
	*len = parse_size(plus + 1);
	return *len != 0;
}

/* 0 to go on, 1 for --help, 2 for bad arguments */
static int parse_remote(int argc, char **argv, struct remote *r)
{
	pid_t pid = 0;
	const char *bad = NULL;
	uint64_t start, len;
	int c, ret;

	while ((c = getopt_long(argc, argv, ":t:h", remote_opts, NULL)) != -1) {
		bool ours = true;

		switch (c) {
		case OPT_PID:
			if (!parse_pid(optarg, &pid))
				bad = "pid";
			break;
		case OPT_RANGE:
			if (!parse_range(optarg, &start, &len))
				bad = "range (START+LEN)";
			else if (add_range(r, start, len, "--range"))
				return 2;
			break;
		case OPT_QMP:
			r->qmp = optarg;
			break;
		default:
			ours = false;
			break;
		}
		ret = option_done(c, ours, bad, &r->opts, &r->run,
				  usage_remote);
		if (ret)
			return ret;
	}
	if (no_operand(argc, argv))
		return 2;
	if (!pid) {
		fprintf(stderr, "%s: populate --pid needs a PID\n", prog);
		return 2;
	}
	if (r->nr && r->qmp) {
		fprintf(stderr, "%s: --range and --qmp exclude each other\n",
			prog);
		return 2;
	}
	r->pid = pid;
	r->found = r->nr ? "given" : r->qmp ? "qmp" : "numa_maps";
	return 0;
}

/*
 * One QMP command's "return", or NULL; json_object_put() it. Written on
 * the socket @fd, read from @f, a stream of its own over it: events come
 * between, a line each.
 */
static struct json_object *qmp_call(FILE *f, int fd, const char *cmd)
{
	char *line = NULL;
	size_t cap = 0;

	if (dprintf(fd, "{\"execute\": \"%s\"}\n", cmd) < 0)
		return NULL;
	while (getline(&line, &cap, f) > 0) {
		struct json_object *o = json_tokener_parse(line), *ret;

		if (!o)
			continue;
		/* Events come between */
		if (json_object_object_get_ex(o, "return", &ret)) {
			json_object_get(ret);
			json_object_put(o);
			free(line);
			return ret;
		}
		if (json_object_object_get_ex(o, "error", NULL)) {
			fprintf(stderr, "%s: QEMU refused %s: %s\n", prog, cmd,
				json_object_to_json_string(o));
			json_object_put(o);
			break;
		}
		json_object_put(o);
	}
	free(line);
	return NULL;
}

/* The RAM block named @id in x-query-ramblock's text: 0, or 2 */
static int qmp_block(struct remote *r, const char *text, const char *id)
{
	size_t idlen = strlen(id);
	const char *line;

	for (line = text; line && *line;
	     line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
		uint64_t offset, used, total, hva;
		const char *name = line, *hex;
		size_t n;

		while (*name == ' ')
			name++;
		n = strcspn(name, " \n");
		/* The backend's id, or its canonical path (/objects/id) */
		if (!(n == idlen && !strncmp(name, id, idlen)) &&
		    !(n > idlen && name[n - idlen - 1] == '/' &&
		      !strncmp(name + n - idlen, id, idlen)))
			continue;
		hex = strstr(name, " 0x");
		if (!hex || sscanf(hex, " %" SCNx64 " %" SCNx64 " %" SCNx64
				   " %" SCNx64, &offset, &used, &total,
				   &hva) != 4)
			break;
		return add_range(r, hva, used, id);
	}
	/* A backend that no NUMA node or device uses has an unnamed block */
	fprintf(stderr, "%s: QEMU's RAM blocks have none named for backend "
		"%s (one that no NUMA node or device uses has no name)\n",
		prog, id);
	return 2;
}

/* The greeting, {"QMP": ...}, as the first line: true */
static bool qmp_greeted(FILE *f)
{
	struct json_object *o = NULL;
	char *line = NULL;
	size_t cap = 0;
	bool ok;

	if (getline(&line, &cap, f) > 0)
		o = json_tokener_parse(line);
	ok = o && json_object_object_get_ex(o, "QMP", NULL);
	json_object_put(o);
	free(line);
	return ok;
}

/* QEMU's memory backends, asked on its QMP socket: 0, 1 or 2 */
static int find_qmp(struct remote *r)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct json_object *caps = NULL, *memdevs = NULL, *blocks = NULL;
	struct timeval tv = { .tv_sec = QMP_TIMEOUT_S };
	struct json_object *text;
	struct ucred peer;
	socklen_t len = sizeof(peer);
	int fd, ret = 1;
	size_t i;
	FILE *f;

	if (strlen(r->qmp) >= sizeof(sa.sun_path)) {
		fprintf(stderr, "%s: QMP socket path too long\n", prog);
		return 2;
	}
	strcpy(sa.sun_path, r->qmp);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		fprintf(stderr, "%s: cannot connect to %s: %s\n", prog, r->qmp,
			strerror(errno));
		if (fd >= 0)
			close(fd);
		return 1;
	}
	/* The QEMU of --pid, and not one of another process's */
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &len) ||
	    peer.pid != r->pid) {
		fprintf(stderr, "%s: %s is not process %d's\n", prog, r->qmp,
			r->pid);
		close(fd);
		return 2;
	}
	/* A socket that never answers (held by another client) ends */
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	f = fdopen(fd, "r");
	if (!f) {
		close(fd);
		return 1;
	}
	if (!qmp_greeted(f)) {
		fprintf(stderr, "%s: %s is not a QMP socket, or did not answer "
			"within %d s\n", prog, r->qmp, QMP_TIMEOUT_S);
		fclose(f);
		return 2;
	}
	caps = qmp_call(f, fd, "qmp_capabilities");
	if (caps)
		memdevs = qmp_call(f, fd, "query-memdev");
	if (memdevs)
		blocks = qmp_call(f, fd, "x-query-ramblock");
	if (!blocks || !json_object_object_get_ex(blocks,
						  "human-readable-text",
						  &text)) {
		fprintf(stderr, "%s: no memory backends from %s\n", prog,
			r->qmp);
		goto out;
	}
	ret = 0;
	for (i = 0; !ret && i < json_object_array_length(memdevs); i++) {
		struct json_object *id;

		if (json_object_object_get_ex(json_object_array_get_idx(memdevs,
									i),
					      "id", &id))
			ret = qmp_block(r, json_object_get_string(text),
					json_object_get_string(id));
	}
	if (!ret && !r->nr) {
		fprintf(stderr, "%s: QEMU at %s has no memory backend\n", prog,
			r->qmp);
		ret = 2;
	}
out:
	json_object_put(caps);
	json_object_put(memdevs);
	json_object_put(blocks);
	fclose(f);
	return ret;
}

static FILE *proc_file(pid_t pid, const char *name)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/%s", pid, name);
	return fopen(path, "re");
}

/*
 * The policy of a numa_maps line, after the address: one word with its
 * flags and nodes ("bind:0-1", "interleave=static:0,2"), but for the modes
 * whose name has a space ("weighted interleave", "prefer (many)")
 */
static void policy_text(const char *line, char *buf, size_t len)
{
	static const char *const spaced[] = {
		"weighted interleave", "prefer (many)",
	};
	const char *p = strchr(line, ' ');
	size_t skip = 0, i;

	p = p ? p + 1 : line;
	for (i = 0; i < sizeof(spaced) / sizeof(spaced[0]); i++)
		if (!strncmp(p, spaced[i], strlen(spaced[i])))
			skip = strlen(spaced[i]);
	snprintf(buf, len, "%.*s", (int)(skip + strcspn(p + skip, " \n")), p);
}

/* A mapping that is guest memory without doubt: its policy, its file */
static bool guest_memory(const char *maps_line, const char *policy,
			 const char *task_policy)
{
	char perms[5] = "";

	if (sscanf(maps_line, "%*x-%*x %4s", perms) != 1 || perms[1] != 'w')
		return false;
	if (strstr(maps_line, "/memfd:memory-backend-memfd"))
		return true;
	return strcmp(policy, "default") && strcmp(policy, task_policy);
}

/* numa_maps: each mapping's start and policy, in address order */
struct numa_line {
	unsigned long long start;
	char policy[128];
};

static int read_numa_maps(pid_t pid, struct numa_line **lines, size_t *n)
{
	FILE *numa = proc_file(pid, "numa_maps");
	struct numa_line *l = NULL;
	size_t cap = 0, lcap = 0;
	char *nl = NULL;
	int ret = 0;

	*n = 0;
	if (!numa)
		return -errno;
	while (getline(&nl, &cap, numa) > 0) {
		if (*n == lcap) {
			struct numa_line *more;

			lcap = lcap ? 2 * lcap : 64;
			more = realloc(l, lcap * sizeof(*l));
			if (!more) {
				ret = -ENOMEM;
				break;
			}
			l = more;
		}
		if (sscanf(nl, "%llx ", &l[*n].start) != 1)
			continue;
		policy_text(nl, l[*n].policy, sizeof(l[*n].policy));
		(*n)++;
	}
	free(nl);
	fclose(numa);
	*lines = l;
	return ret;
}

/*
 * The mappings that are guest memory without doubt: 0, 1 or 2. maps gives
 * where each ends and what it maps, numa_maps its policy: they are matched
 * by start address, so that a mapping that came or went between the two
 * reads shifts nothing (it is taken without a policy).
 */
static int find_maps(struct remote *r)
{
	FILE *maps = proc_file(r->pid, "maps");
	struct numa_line *numa = NULL;
	char *ml = NULL, task[128] = "default";
	size_t mcap = 0, nr_numa = 0, at = 0;
	int ret = 1;

	if (!maps || read_numa_maps(r->pid, &numa, &nr_numa)) {
		fprintf(stderr, "%s: cannot read /proc/%d/maps and numa_maps: "
			"%s\n", prog, r->pid, strerror(errno));
		goto out;
	}
	/* The task's own policy, which numa_maps shows for [vdso] */
	while (getline(&ml, &mcap, maps) > 0) {
		unsigned long long start;
		size_t i;

		if (!strstr(ml, " [vdso]") || sscanf(ml, "%llx-", &start) != 1)
			continue;
		for (i = 0; i < nr_numa; i++)
			if (numa[i].start == start)
				snprintf(task, sizeof(task), "%s",
					 numa[i].policy);
	}
	rewind(maps);
	ret = 0;
	while (!ret && getline(&ml, &mcap, maps) > 0) {
		unsigned long long start, end;
		const char *policy = "default";

		if (sscanf(ml, "%llx-%llx", &start, &end) != 2)
			continue;
		while (at < nr_numa && numa[at].start < start)
			at++;
		if (at < nr_numa && numa[at].start == start)
			policy = numa[at].policy;
		if (guest_memory(ml, policy, task))
			ret = add_range(r, start, end - start, policy);
	}
	if (!ret && !r->nr) {
		fprintf(stderr, "%s: cannot tell which mappings of %d to "
			"populate: none has a memory policy of its own; give "
			"--range or --qmp\n", prog, r->pid);
		ret = 2;
	}
out:
	free(numa);
	free(ml);
	if (maps)
		fclose(maps);
	return ret;
}

static void report_remote(const struct remote *r, int err)
{
	const struct memprepop_result *res = &r->run.res;
	double secs = res->nsecs / 1e9;
	unsigned int i;

	if (r->run.json) {
		printf("{\"pid\": %d, \"found\": \"%s\", \"ranges\": [", r->pid,
		       r->found);
		for (i = 0; i < r->nr; i++) {
			printf("%s{\"addr\": %" PRIu64 ", \"len\": %" PRIu64
			       ", \"populated\": %" PRIu64 ", \"error\": %d, "
			       "\"from\": ", i ? ", " : "",
			       (uint64_t)r->ranges[i].addr,
			       (uint64_t)r->ranges[i].len,
			       (uint64_t)r->ranges[i].populated,
			       r->ranges[i].error);
			json_string(r->names[i]);
			printf("}");
		}
		printf("], \"populated\": %" PRIu64 ", \"seconds\": %.6f, "
		       "\"backend\": \"%s\", \"workers\": %u, \"error\": %d, "
		       "\"node_pages\": [", (uint64_t)res->populated, secs,
		       memprepop_backend_name(res->backend), res->workers,
		       err);
		for (i = 0; i < r->run.nr_nodes; i++)
			printf("%s%" PRIu64, i ? ", " : "",
			       r->run.node_pages[i]);
		printf("]}\n");
		return;
	}
	for (i = 0; i < r->nr; i++)
		printf("range %u: 0x%" PRIx64 "+%" PRIu64 " (%s, %s): %s%s\n",
		       i, (uint64_t)r->ranges[i].addr,
		       (uint64_t)r->ranges[i].len, r->found, r->names[i],
		       r->ranges[i].error ? "failed, " : "populated",
		       r->ranges[i].error ? strerror(-r->ranges[i].error) :
		       "");
	printf("pid %d: %" PRIu64 " bytes in %.3f s, %.2f GB/s, backend %s, "
	       "%u workers\npages per node:", r->pid,
	       (uint64_t)res->populated, secs,
	       secs > 0 ? res->populated / secs / 1e9 : 0.0,
	       memprepop_backend_name(res->backend), res->workers);
	for (i = 0; i < r->run.nr_nodes; i++)
		if (r->run.node_pages[i])
			printf(" N%u=%" PRIu64, i, r->run.node_pages[i]);
	printf("\n");
}

/* What memprepop_ctx_new_pid() refused, in one line; the exit status */
static int cannot_open(pid_t pid, int err)
{
	if (err == -EOPNOTSUPP) {
		fprintf(stderr, "%s: this kernel cannot populate another "
			"process: its process_madvise() refuses "
			"MADV_POPULATE_WRITE for one (contrib/linux has the "
			"series); nothing was touched\n", prog);
		return 2;
	}
	fprintf(stderr, "%s: cannot populate process %d: %s\n", prog, pid,
		err == -EPERM ? "not allowed to attach to it (ptrace)" :
		strerror(-err));
	return err == -ESRCH || err == -EPERM ? 2 : 1;
}

int cmd_populate_pid(int argc, char **argv)
{
	struct remote *r = calloc(1, sizeof(*r));
	struct memprepop_ctx *ctx = NULL;
	int pidfd = -1, ret, err;
	unsigned int i;

	if (!r)
		return 1;
	r->opts = (struct memprepop_opts)MEMPREPOP_OPTS_INIT;
	r->run.res = (struct memprepop_result)MEMPREPOP_RESULT_INIT;
	ret = parse_remote(argc, argv, r);
	if (ret) {
		ret = ret == 1 ? 0 : ret;
		goto out;
	}
	pidfd = syscall(__NR_pidfd_open, r->pid, 0);
	if (pidfd < 0) {
		ret = cannot_open(r->pid, -errno);
		goto out;
	}
	/* The kernel first: nothing asked of the process before */
	err = memprepop_ctx_new_pid(&ctx, pidfd, 0);
	if (err) {
		ret = cannot_open(r->pid, err);
		goto out;
	}
	ret = r->nr ? 0 : r->qmp ? find_qmp(r) : find_maps(r);
	if (ret)
		goto out;
	r->run.nr_nodes = highest_node() + 1;
	r->run.node_pages = calloc(r->run.nr_nodes, sizeof(uint64_t));
	if (!r->run.node_pages) {
		ret = 1;
		goto out;
	}
	r->opts.node_pages = r->run.node_pages;
	r->opts.nr_nodes = r->run.nr_nodes;
	/* The bar, and a cancel at SIGINT, SIGTERM or SIGHUP */
	r->opts.progress = progress_bar;
	r->opts.progress_arg = &r->run;
	r->run.progress = !r->run.json && isatty(STDERR_FILENO);
	catch_signals(NULL);
	progress_bar_start();
	err = memprepop_ctx_populate(ctx, r->ranges, r->nr, &r->opts,
				     &r->run.res);
	progress_bar_end();
	report_remote(r, err);
	if (cancelled())
		ret = cancelled_status();
	else if (err)
		ret = 1;
	if (err && !cancelled() && !r->run.json)
		fprintf(stderr, "%s: populating process %d failed: %s\n", prog,
			r->pid, strerror(-err));
out:
	memprepop_ctx_free(ctx);
	if (pidfd >= 0)
		close(pidfd);
	for (i = 0; i < r->nr; i++)
		free(r->names[i]);
	free(r->run.node_pages);
	free(r);
	return ret;
}
