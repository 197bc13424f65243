// SPDX-License-Identifier: GPL-2.0
/*
 * memprepop file: pre-fault hugetlbfs or tmpfs files, so that a VMM that
 * maps them later finds them populated, placed and ready. Several files,
 * each with its own size and placement, go in one call (one set of
 * workers, one progress bar), as a VM's memory backends would.
 *
 * Options before the first PATH apply to every file; --size and the
 * placement options after a PATH apply to that file alone.
 *
 * Every file is checked before any is created or grown; a refusal, a
 * failure or a cancel (SIGINT, SIGTERM, SIGHUP) removes the files this run
 * created and gives those it grew their size back.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <libgen.h>
#include <linux/magic.h>
#include <numa.h>
#include <numaif.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "tool.h"

static const struct option file_opts[] = {
	{ "size", required_argument, NULL, 's' },
	{ "lock", no_argument, NULL, 'l' },
	{ "threads", required_argument, NULL, 't' },
	{ "fallback", no_argument, NULL, 'f' },
	{ "borrow-cpus", no_argument, NULL, OPT_BORROW_CPUS },
	{ "membind", required_argument, NULL, OPT_MEMBIND },
	{ "node", required_argument, NULL, OPT_MEMBIND },
	{ "interleave", required_argument, NULL, OPT_INTERLEAVE },
	{ "preferred", required_argument, NULL, OPT_PREFERRED },
	{ "json", no_argument, NULL, OPT_JSON },
	{ "overcommit", no_argument, NULL, OPT_OVERCOMMIT },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

static void usage_file(FILE *f)
{
	fprintf(f,
		"usage: %s file [options] PATH [file options] [PATH [file "
		"options]]...\n"
		"\n"
		"Pre-faults each file PATH on hugetlbfs or tmpfs (created, "
		"or grown to SIZE),\nall in one call, so that a VMM that "
		"maps them later finds every page there,\nplaced as asked. "
		"Options before the first PATH apply to every file; --size\n"
		"and the placement options after a PATH apply to that file.\n"
		"\n"
		"  -s, --size SIZE       the file's size (default: as it is)\n"
		"  -l, --lock            lock it while populating (mlock2 "
		"MLOCK_ONFAULT)\n"
		"      --node N          same as --membind N\n"
		"%s", prog, placement_help);
}

/* A file to populate, as the command line has it, then as mapped */
struct file {
	struct run run;
	struct placement placement;
	int fd;
	void *mem;
	bool exists;		/* before this run */
	off_t old_size;		/* then, its size */
	uint64_t allocated;	/* and the bytes of it in memory */
	bool created, grown;	/* by this run: undone if it fails */
	char *real;		/* its path without links, ., .. */
	dev_t dev;		/* and, when it exists, its inode: */
	ino_t ino;		/* a hard link has another path */
	char *name;		/* its path as printed */
	fsid_t fsid;		/* its file system, */
	uint64_t fs_free;	/* and the bytes it can still take */
};

struct file_args {
	struct file defaults;	/* before the first PATH */
	struct file *files;
	unsigned int n;
	struct memprepop_opts opts;
	struct run all;		/* the call: totals, shared options */
};

/* A new file, PATH, taking the defaults; NULL without memory */
static struct file *add_file(struct file_args *a, const char *path)
{
	struct file *files = realloc(a->files, (a->n + 1) * sizeof(*files));
	struct file *f;

	if (!files)
		return NULL;
	a->files = files;
	f = &files[a->n++];
	*f = a->defaults;
	f->placement.given = false;
	f->run.what = path;
	f->run.name = f->name = printable(path);
	f->run.file = true;
	f->fd = -1;
	if (!f->name)
		return NULL;
	return f;
}

/* 0 to go on, 1 for --help, 2 for bad arguments */
static int parse_file_args(int argc, char **argv, struct file_args *a)
{
	struct file *cur = &a->defaults;
	const char *bad = NULL;
	int c;

	memset(a, 0, sizeof(*a));
	a->opts = (struct memprepop_opts)MEMPREPOP_OPTS_INIT;
	a->all.res = (struct memprepop_result)MEMPREPOP_RESULT_INIT;
	a->all.placement = &a->defaults.placement;
	a->opts.progress = progress_bar;
	a->opts.progress_arg = &a->all;

	/* "-": a PATH comes back as option 1, in its place */
	while ((c = getopt_long(argc, argv, "-:s:lt:fh", file_opts,
				NULL)) != -1) {
		bool ours = true;
		int ret;

		switch (c) {
		case 1:
			cur = add_file(a, optarg);
			if (!cur) {
				fprintf(stderr, "%s: out of memory\n", prog);
				return 2;
			}
			break;
		case 's':
			bad = size_option(optarg, &cur->run.size);
			break;
		case OPT_MEMBIND:
		case OPT_INTERLEAVE:
		case OPT_PREFERRED:
			/* The defaults' node mask is not this file's to free */
			if (cur != &a->defaults &&
			    cur->placement.nodes == a->defaults.placement.nodes)
				cur->placement.nodes = NULL;
			bad = placement_option(&cur->placement, c, optarg);
			break;
		default:
			ours = false;
			break;
		}
		ret = option_done(c, ours, bad, &a->opts, &a->all,
				  usage_file);
		if (ret)
			return ret;
	}
	if (!a->n) {
		fprintf(stderr, "%s file: no PATH given ('%s file --help' "
			"describes the command)\n", prog, prog);
		return 2;
	}
	a->all.progress = !a->all.json && isatty(STDERR_FILENO);
	return 0;
}

/* @path without links, ., ..; for a file not there yet, its directory's */
static char *real_path(const char *path, bool exists)
{
	char *dir, *base, *real, *joined = NULL;

	if (exists)
		return realpath(path, NULL);
	dir = strdup(path);
	base = strdup(path);
	real = dir ? realpath(dirname(dir), NULL) : NULL;
	if (real && base && asprintf(&joined, "%s/%s", real,
				     basename(base)) < 0)
		joined = NULL;
	free(dir);
	free(base);
	free(real);
	return joined;
}

/*
 * Checks the file without changing anything: its file system (of the
 * directory it would be created in, when it is not there), its size and
 * page size; 0, or the exit status after one line saying why (2: each is
 * the command line's fault)
 */
static int check_file(struct file *f)
{
	const char *path = f->run.what, *name = f->name;
	bool given = f->run.size;
	struct statfs sfs;
	struct stat st;
	int ret;

	/* Its place is final now that every PATH is in */
	f->run.placement = &f->placement;
	f->run.page_size = sysconf(_SC_PAGESIZE);
	if (!stat(path, &st)) {
		f->exists = true;
		f->dev = st.st_dev;
		f->ino = st.st_ino;
		f->old_size = st.st_size;
		f->allocated = (uint64_t)st.st_blocks * 512;
		ret = statfs(path, &sfs);
	} else if (errno == ENOENT) {
		char *dir = strdup(path);

		ret = dir ? statfs(dirname(dir), &sfs) : -1;
		free(dir);
	} else {
		ret = -1;
	}
	if (!ret) {
		f->real = real_path(path, f->exists);
		if (!f->real)
			ret = -1;
	}
	if (ret) {
		fprintf(stderr, "%s: cannot use %s: %s\n", prog, name,
			strerror(errno));
		return 2;
	}
	if (f->exists && !S_ISREG(st.st_mode)) {
		fprintf(stderr, "%s: %s is not a regular file\n", prog, name);
		return 2;
	}
	if (sfs.f_type != HUGETLBFS_MAGIC && sfs.f_type != TMPFS_MAGIC) {
		fprintf(stderr, "%s: %s is not on hugetlbfs or tmpfs: "
			"populating it would write it to disk\n", prog, name);
		return 2;
	}
	if (sfs.f_type == HUGETLBFS_MAGIC)
		f->run.page_size = sfs.f_bsize;
	/* No size= limit: tmpfs and hugetlbfs say 0 blocks */
	f->fsid = sfs.f_fsid;
	f->fs_free = sfs.f_blocks ? (uint64_t)sfs.f_bavail * sfs.f_bsize :
		     UINT64_MAX;
	if (!f->run.size)
		f->run.size = f->old_size;
	f->run.size = (f->run.size + f->run.page_size - 1) &
		      ~(f->run.page_size - 1);
	if (!f->run.size) {
		fprintf(stderr, "%s: %s is %s: give --size\n", prog, name,
			f->exists ? "empty" : "not there");
		return 2;
	}
	if (given && (uint64_t)f->old_size > f->run.size) {
		char have[32], want[32];

		size_text(have, sizeof(have), f->old_size);
		size_text(want, sizeof(want), f->run.size);
		fprintf(stderr, "%s: %s is %s, larger than --size %s: a file "
			"is never shrunk; without --size all of it is "
			"populated\n", prog, name, have, want);
		return 2;
	}
	return 0;
}

/* Opens (creates), grows and maps the checked file, and sets its policy */
static int map_file(struct file *f)
{
	const char *path = f->run.what, *name = f->name;
	int ret;

	f->fd = open(path, O_RDWR | O_CLOEXEC | (f->exists ? 0 : O_CREAT |
						  O_EXCL), 0600);
	if (f->fd < 0) {
		fprintf(stderr, "%s: cannot open %s: %s\n", prog, name,
			strerror(errno));
		return 1;
	}
	f->created = !f->exists;
	if ((uint64_t)f->old_size < f->run.size) {
		/* First: a second signal may undo it while it grows */
		f->grown = true;
		if (ftruncate(f->fd, f->run.size)) {
			fprintf(stderr, "%s: cannot grow %s to %llu bytes: "
				"%s\n", prog, name,
				(unsigned long long)f->run.size,
				strerror(errno));
			return 1;
		}
	}
	f->mem = mmap(NULL, f->run.size, PROT_READ | PROT_WRITE, MAP_SHARED,
		      f->fd, 0);
	if (f->mem == MAP_FAILED) {
		f->mem = NULL;
		fprintf(stderr, "%s: cannot map %s: %s\n", prog, name,
			strerror(errno));
		return 1;
	}
	ret = apply_placement(&f->placement, f->mem, f->run.size);
	if (ret) {
		fprintf(stderr, "%s: cannot set the memory policy of %s: %s\n",
			prog, name, strerror(-ret));
		return 1;
	}
	return 0;
}

/*
 * What this run did to the file, undone: created, removed; grown, shrunk.
 * What was done, for the message ("removed", "back to its size of before"),
 * or NULL.
 */
static const char *undo_file(const struct file *f)
{
	if (f->created && !unlink(f->run.what))
		return "removed";
	if (f->grown && !truncate(f->run.what, f->old_size))
		return "back to its size of before";
	return NULL;
}

/* The files of this run, for a second signal to undo at once */
static struct file_args *undo_args;

static void undo_files_now(void)
{
	unsigned int i;

	for (i = 0; undo_args && i < undo_args->n; i++)
		undo_file(&undo_args->files[i]);
}

/* What a file does not have in memory yet */
static uint64_t file_need(const struct file *f)
{
	return f->run.size > f->allocated ? f->run.size - f->allocated : 0;
}

/* Are @f and @g one file: one path without links, or one inode? */
static bool same_file(const struct file *f, const struct file *g)
{
	if (f->exists && g->exists)
		return f->dev == g->dev && f->ino == g->ino;
	return !strcmp(f->real, g->real);
}

/*
 * No file twice, under any name (a symbolic or hard link, ., ..): it would
 * be populated and reported twice, and the second would undo the first
 */
static int check_paths(const struct file_args *a)
{
	unsigned int i, j;

	for (i = 0; i < a->n; i++)
		for (j = i + 1; j < a->n; j++)
			if (same_file(&a->files[i], &a->files[j])) {
				fprintf(stderr, "%s: %s and %s are the same "
					"file, given twice\n", prog,
					a->files[i].name, a->files[j].name);
				return 2;
			}
	return 0;
}

/*
 * What the files of each file system do not have yet must fit in what it
 * has free (its size= limit): a fault beyond it raises SIGBUS, which
 * MADV_POPULATE_WRITE turns into EFAULT after populating all it could
 */
static int check_file_systems(const struct file_args *a)
{
	unsigned int i, j;
	char want[32], have[32];

	for (i = 0; i < a->n; i++) {
		const struct file *f = &a->files[i];
		uint64_t need = 0;

		for (j = 0; j < a->n; j++)
			if (!memcmp(&a->files[j].fsid, &f->fsid,
				    sizeof(f->fsid))) {
				/* Counted with an earlier one? */
				if (j < i)
					break;
				need += file_need(&a->files[j]);
			}
		if (j < a->n || need <= f->fs_free || a->all.overcommit)
			continue;
		size_text(want, sizeof(want), need);
		size_text(have, sizeof(have), f->fs_free);
		fprintf(stderr, "%s: the file system of %s has %s free (its "
			"size= limit), its files here need %s more: "
			"--overcommit to try anyway\n", prog, f->name, have,
			want);
		return 2;
	}
	return 0;
}

/*
 * What the files do not have in memory yet must fit in what their nodes
 * can give (tmpfs and hugetlbfs count a file's pages in its blocks)
 */
static int check_files_room(struct file_args *a)
{
	unsigned int i;
	int ret;

	ret = check_paths(a);
	if (!ret)
		ret = check_file_systems(a);
	for (i = 0; i < a->n && !ret; i++) {
		struct file *f = &a->files[i];

		f->run.overcommit = a->all.overcommit;
		f->run.lock = a->all.lock;
		ret = check_room(&f->run, file_need(f));
	}
	return ret;
}

/* Where each file's pages are, and the totals; 0, or the exit status */
static int count_pages(struct file_args *a)
{
	unsigned int nr = numa_num_possible_nodes() > 0 ?
			  numa_num_possible_nodes() : 1, i, node;

	a->all.nr_nodes = nr;
	a->all.node_pages = calloc(nr, sizeof(uint64_t));
	if (!a->all.node_pages)
		return 1;
	for (i = 0; i < a->n; i++) {
		struct run *run = &a->files[i].run;

		if (count_present(run, a->files[i].mem, run->error ?
				  run->populated : run->size)) {
			fprintf(stderr, "%s: out of memory\n", prog);
			return 1;
		}
		/* Per node only where every file's placement could be read */
		if (!run->nr_nodes)
			a->all.nr_nodes = 0;
		for (node = 0; node < run->nr_nodes && node < nr; node++)
			a->all.node_pages[node] += run->node_pages[node];
		a->all.present += run->present;
		a->all.counted += run->counted;
	}
	return 0;
}

/* One call for all files; the report; the exit status */
static int populate_files(struct file_args *a)
{
	struct memprepop_range *ranges = calloc(a->n, sizeof(*ranges));
	const struct run **runs = calloc(a->n, sizeof(*runs));
	long psz = sysconf(_SC_PAGESIZE);
	unsigned int i;
	int status = 0;

	if (!ranges || !runs) {
		free(ranges);
		free(runs);
		return 1;
	}
	for (i = 0; i < a->n; i++) {
		ranges[i].addr = (uintptr_t)a->files[i].mem;
		ranges[i].len = a->files[i].run.size;
		a->all.size += a->files[i].run.size;
	}
	progress_bar_start();
	memprepop_populate_ranges(ranges, a->n, &a->opts, &a->all.res);
	progress_bar_end();
	/* Locked: only if every file is */
	a->all.locked = a->all.lock;
	for (i = 0; i < a->n; i++) {
		struct run *run = &a->files[i].run;

		runs[i] = run;
		run->lock = a->all.lock;
		run->res = a->all.res;
		run->res.populated = run->populated = ranges[i].populated;
		run->error = ranges[i].error;
		mapping_state(run, a->files[i].mem);
		a->all.locked &= run->locked;
		if (run->error && !cancelled())
			explain_failure(run, run->error);
		if (run->error)
			status = 1;
	}
	free(ranges);
	if (count_pages(a)) {
		free(runs);
		return 1;
	}
	report_files(runs, a->n, &a->all);
	free(runs);
	for (i = 0; i < a->n; i++) {
		const struct run *run = &a->files[i].run;

		if (!run->error && run->present != run->size / psz) {
			fprintf(stderr, "%s: %s: only %llu of %llu pages are "
				"present\n", prog, run->name,
				(unsigned long long)run->present,
				(unsigned long long)(run->size / psz));
			status = 1;
		}
	}
	return status;
}

int cmd_file(int argc, char **argv)
{
	struct file_args a;
	uint64_t size = 0;
	unsigned int i;
	int ret;

	/* Before any file is made: a signal from here on undoes them */
	undo_args = &a;
	catch_signals(undo_files_now);
	ret = parse_file_args(argc, argv, &a);
	if (!ret) {
		for (i = 0; i < a.n && !ret; i++)
			ret = check_file(&a.files[i]);
		if (!ret)
			ret = check_files_room(&a);
		for (i = 0; i < a.n && !ret && !cancelled(); i++)
			ret = map_file(&a.files[i]);
		if (!ret && !cancelled())
			ret = populate_files(&a);
	} else if (ret == 1) {
		ret = 0;
	}
	/* Cancelled, at any point: one line, with what was undone */
	if (cancelled()) {
		for (i = 0; i < a.n; i++)
			size += a.files[i].run.size;
		cancelled_line(a.all.res.populated, size);
		ret = cancelled_status();
	}
	for (i = 0; i < a.n; i++) {
		const char *undone = NULL;

		if (a.files[i].mem)
			munmap(a.files[i].mem, a.files[i].run.size);
		if (ret)
			undone = undo_file(&a.files[i]);
		if (undone && cancelled())
			fprintf(stderr, "; %s %s", a.files[i].name, undone);
		else if (undone)
			fprintf(stderr, "%s: %s %s (undone: this run %s it)\n",
				prog, a.files[i].name, undone,
				a.files[i].created ? "created" : "grew");
		if (a.files[i].fd >= 0)
			close(a.files[i].fd);
		free(a.files[i].run.node_pages);
		free(a.files[i].real);
		free(a.files[i].name);
	}
	if (cancelled())
		fprintf(stderr, "\n");
	undo_args = NULL;
	free(a.files);
	free(a.all.node_pages);
	return ret;
}
