/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A tiny FUSE server for the tests, a thread of the test process: a
 * mounted directory of regular files, "file" and "file1" to "file63"
 * (FUSE_FILE_SIZE bytes each, every byte zero, each with a page cache of
 * its own), whose READ requests it holds, so that a fault on a mapping of
 * them waits for as long as a test wants:
 *
 * - until fuse_release_reads() (the default, fuse_hold(s, 0)): held READs
 *   are answered then, and later ones at once;
 * - with fuse_hold(s, ms), "delay" mode: the first READ held starts a
 *   timer, and @ms after it the server releases them all by itself, as a
 *   file system that stalls for @ms once would.
 *
 * Every READ is counted and logged (offset, fsuid of the faulting task).
 */
#ifndef MEMPREPOP_FUSE_HELPERS_H
#define MEMPREPOP_FUSE_HELPERS_H

#include <linux/fuse.h>
#include <poll.h>
#include <pthread.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/uio.h>

#include "memprepop_test.h"

#define FUSE_FILE_SIZE	(64 * MiB)
#define FUSE_FILES	64		/* "file", then "file1" to "file63" */
#define FUSE_MAX_HELD	64		/* more READs are answered at once */

struct fuse_server {
	int fd;
	pthread_t tid;
	pthread_mutex_t lock;
	char dir[64];		/* the mount point */
	bool mounted;
	volatile bool release;	/* answer the held READs, and later ones */
	unsigned int hold_ms;	/* delay mode: release this long after... */
	double hold_until;	/* ...the first READ held (0: none yet) */
	volatile unsigned int reads;
	struct {
		uint64_t unique;
		uint32_t size;
	} held[FUSE_MAX_HELD];
	unsigned int nr_held;
	struct {
		uint64_t offset;
		uint32_t uid;
	} log[1024];		/* every READ: where, and whose fsuid */
	unsigned int nr_log;
};

static inline void fuse_reply(struct fuse_server *s, uint64_t unique,
			      int error, const void *data, size_t len)
{
	struct fuse_out_header out = {
		.len = sizeof(out) + len, .error = error, .unique = unique,
	};
	struct iovec iov[2] = {
		{ &out, sizeof(out) }, { (void *)data, len },
	};

	(void)!writev(s->fd, iov, data ? 2 : 1);
}

static inline void fuse_reply_zeros(struct fuse_server *s, uint64_t unique,
				    uint32_t size)
{
	static char zeros[128 * 1024];

	fuse_reply(s, unique, 0, zeros,
		   size < sizeof(zeros) ? size : sizeof(zeros));
}

static inline void fuse_fill_attr(struct fuse_attr *a, uint64_t nodeid)
{
	memset(a, 0, sizeof(*a));
	a->ino = nodeid;
	a->nlink = 1;
	a->blksize = 4096;
	if (nodeid == FUSE_ROOT_ID) {
		a->mode = S_IFDIR | 0755;
	} else {
		a->mode = S_IFREG | 0600;
		a->size = FUSE_FILE_SIZE;
		a->blocks = FUSE_FILE_SIZE / 512;
	}
}

/* The node of "file" (2) or "fileN" (2 + N), or 0 for no such file */
static inline uint64_t fuse_lookup_node(const char *name)
{
	unsigned long n;
	char *end;

	if (strncmp(name, "file", 4))
		return 0;
	if (!name[4])
		return 2;
	if (name[4] < '1' || name[4] > '9')
		return 0;
	n = strtoul(name + 4, &end, 10);
	return *end || n >= FUSE_FILES ? 0 : 2 + n;
}

/* The path of file @n (0: "file") on the mount, into @buf */
static inline char *fuse_path(struct fuse_server *s, int n, char *buf,
			      size_t size)
{
	if (n)
		snprintf(buf, size, "%s/file%d", s->dir, n);
	else
		snprintf(buf, size, "%s/file", s->dir);
	return buf;
}

/* Answers the held READs with zeros, and from now on every READ at once */
static inline void fuse_release_reads(struct fuse_server *s)
{
	pthread_mutex_lock(&s->lock);
	s->release = true;
	for (unsigned int i = 0; i < s->nr_held; i++)
		fuse_reply_zeros(s, s->held[i].unique, s->held[i].size);
	s->nr_held = 0;
	pthread_mutex_unlock(&s->lock);
}

/*
 * Holds READs again from now on: until fuse_release_reads() with @ms 0,
 * else until @ms after the first one held.
 */
static inline void fuse_hold(struct fuse_server *s, unsigned int ms)
{
	pthread_mutex_lock(&s->lock);
	s->hold_ms = ms;
	s->hold_until = 0;
	s->release = false;
	pthread_mutex_unlock(&s->lock);
}

/* Delay mode: ms until the held READs are due (-1: none), 0 if they are */
static inline int fuse_due_in(struct fuse_server *s)
{
	int ms = -1;

	pthread_mutex_lock(&s->lock);
	if (s->hold_ms && s->nr_held && s->hold_until) {
		double left = s->hold_until - now();

		ms = left <= 0 ? 0 : (int)(left * 1000) + 1;
	}
	pthread_mutex_unlock(&s->lock);
	return ms;
}

static inline void *fuse_serve(void *arg)
{
	static char buf[256 * 1024];
	struct fuse_server *s = arg;

	for (;;) {
		struct fuse_in_header *in = (void *)buf;
		void *body = buf + sizeof(*in);
		ssize_t n;

		if (s->hold_ms) {
			struct pollfd pfd = { .fd = s->fd, .events = POLLIN };
			int due = fuse_due_in(s);

			if (!due || (due > 0 && !poll(&pfd, 1, due))) {
				fuse_release_reads(s);
				continue;
			}
		}
		n = read(s->fd, buf, sizeof(buf));
		if (n < 0 && (errno == EINTR || errno == ENOENT))
			continue;
		if (n < (ssize_t)sizeof(*in))
			return NULL;	/* unmounted */
		switch (in->opcode) {
		case FUSE_INIT: {
			struct fuse_init_in *ii = body;
			struct fuse_init_out io = {
				.major = FUSE_KERNEL_VERSION,
				.minor = ii->minor < 31 ? ii->minor : 31,
				.max_readahead = ii->max_readahead,
				.max_background = 16,
				.congestion_threshold = 12,
				.max_write = 64 * 1024,
				.time_gran = 1,
				/*
				 * Reads as readahead does them: the fault
				 * waits, killable, on the page lock. A
				 * synchronous READ the server has taken is
				 * waited for unkillably, madvise or not.
				 */
				.flags = ii->flags & FUSE_ASYNC_READ,
			};

			fuse_reply(s, in->unique, 0, &io, sizeof(io));
			break;
		}
		case FUSE_LOOKUP: {
			struct fuse_entry_out e = {
				.nodeid = fuse_lookup_node(body),
				.entry_valid = 3600, .attr_valid = 3600,
			};

			if (!e.nodeid) {
				fuse_reply(s, in->unique, -ENOENT, NULL, 0);
				break;
			}
			fuse_fill_attr(&e.attr, e.nodeid);
			fuse_reply(s, in->unique, 0, &e, sizeof(e));
			break;
		}
		case FUSE_GETATTR: {
			struct fuse_attr_out a = { .attr_valid = 3600 };

			fuse_fill_attr(&a.attr, in->nodeid);
			fuse_reply(s, in->unique, 0, &a, sizeof(a));
			break;
		}
		case FUSE_OPEN: {
			struct fuse_open_out o = { .fh = 1 };

			fuse_reply(s, in->unique, 0, &o, sizeof(o));
			break;
		}
		case FUSE_READ: {
			struct fuse_read_in *r = body;

			pthread_mutex_lock(&s->lock);
			s->reads++;
			if (s->nr_log < 1024) {
				s->log[s->nr_log].offset = r->offset;
				s->log[s->nr_log].uid = in->uid;
				s->nr_log++;
			}
			if (s->release || s->nr_held == FUSE_MAX_HELD) {
				fuse_reply_zeros(s, in->unique, r->size);
			} else {
				if (s->hold_ms && !s->hold_until)
					s->hold_until = now() +
							s->hold_ms / 1000.0;
				s->held[s->nr_held].unique = in->unique;
				s->held[s->nr_held].size = r->size;
				s->nr_held++;
			}
			pthread_mutex_unlock(&s->lock);
			break;
		}
		case FUSE_FLUSH:
		case FUSE_RELEASE:
			fuse_reply(s, in->unique, 0, NULL, 0);
			break;
		case FUSE_FORGET:
		case FUSE_BATCH_FORGET:
		case FUSE_INTERRUPT:
			break;		/* no answer wanted */
		default:
			fuse_reply(s, in->unique, -ENOSYS, NULL, 0);
			break;
		}
	}
}

/*
 * Mounts a fresh server at /tmp/mpp-@name-PID and starts its thread,
 * holding READs until released: 0, -ENODEV when there is no /dev/fuse (the
 * caller skips), or another -errno. s->fd is -1 when /dev/fuse could not
 * be opened, and fuse_server_stop() then does nothing.
 */
static inline int fuse_server_start(struct fuse_server *s, const char *name)
{
	char opts[128];
	int ret;

	pthread_mutex_init(&s->lock, NULL);
	if (access("/dev/fuse", F_OK))
		(void)!system("modprobe -q fuse 2>/dev/null");
	s->fd = open("/dev/fuse", O_RDWR | O_CLOEXEC);
	if (s->fd < 0)
		return -ENODEV;
	snprintf(s->dir, sizeof(s->dir), "/tmp/mpp-%s-%d", name, getpid());
	if (mkdir(s->dir, 0700))
		return -errno;
	snprintf(opts, sizeof(opts),
		 "fd=%d,rootmode=40000,user_id=0,group_id=0", s->fd);
	if (mount("memprepop-test", s->dir, "fuse", MS_NOSUID | MS_NODEV,
		  opts))
		return -errno;
	s->mounted = true;
	ret = pthread_create(&s->tid, NULL, fuse_serve, s);
	return -ret;
}

/*
 * Unmounts (lazily: a child may still have a file mapped) and closes. The
 * thread is not waited for: it ends when the connection does.
 */
static inline void fuse_server_stop(struct fuse_server *s)
{
	if (s->fd < 0)
		return;
	if (s->mounted)
		umount2(s->dir, MNT_DETACH);
	close(s->fd);
	rmdir(s->dir);
}

#endif /* MEMPREPOP_FUSE_HELPERS_H */
