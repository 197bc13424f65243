// SPDX-License-Identifier: GPL-2.0
/*
 * memprepop: faulting a chunk in, writable, the way madvise_populate() does,
 * with the same errno for the same mapping.
 */
#include <linux/mm.h>
#include <linux/mmu_context.h>
#include <linux/hugetlb.h>
#include <linux/sched/signal.h>
#include <linux/userfaultfd_k.h>

#include "internal.h"
#include "trace.h"

/* The errno madvise_populate() reports for a get_user_pages() failure. */
static int mpp_gup_errno(long err)
{
	switch (err) {
	case -EINTR:
	case -EINVAL:
	case -EHWPOISON:
	case -EFAULT:
		return err;
	default:
		return -ENOMEM;
	}
}

/*
 * Count the nodes of the pages of [start, end), just populated, with
 * mmap_lock held. A lookup of its own, apart from the populate, that never
 * faults (FOLL_NOFAULT), so that counting never changes what is populated
 * or the errno, even when the range was remapped while the fault path had
 * dropped the lock: a page that is not there, or that get_user_pages()
 * cannot return (a special mapping's), is not counted. A NUMA-balancing
 * PROT_NONE entry is read through without a hinting fault (gup does so
 * unless asked to honour them, since 6.5).
 */
static noinline void mpp_count_nodes(const struct mpp_fault_ctx *ctx,
				     unsigned long start, unsigned long end,
				     u64 *node_pages)
{
	struct page *pages[16];

	while (start < end) {
		unsigned long nr = min_t(unsigned long,
					 (end - start) >> PAGE_SHIFT,
					 ARRAY_SIZE(pages));
		long got, i;

		got = get_user_pages_remote(ctx->mm, start, nr, FOLL_NOFAULT,
					    pages, NULL);
		if (got <= 0) {
			start += PAGE_SIZE;
			continue;
		}
		for (i = 0; i < got; i++) {
			int nid = page_to_nid(pages[i]);

			if (nid < ctx->nr_nodes)
				node_pages[nid]++;
			put_page(pages[i]);
		}
		start += got << PAGE_SHIFT;
	}
}

/*
 * Should a thread working on @chunk stop at @addr? The call is killed or
 * cancelled, the thread's process is dying, or a failure below @addr ended
 * the range.
 */
static bool mpp_should_stop(const struct mpp_fault_ctx *ctx,
			    const struct mpp_chunk *chunk, unsigned long addr)
{
	if (READ_ONCE(*ctx->killed) || fatal_signal_pending(current))
		return true;
	return addr >= READ_ONCE(chunk->range->stop_at);
}

/*
 * Fault in [addr, addr + nr pages) of @mm, writable, as madvise() does:
 * the fault path may drop mmap_lock to wait (for I/O, a page lock, a
 * userfaultfd handler), killable, and then says so through @locked; the
 * thread may move to another CPU meanwhile, which CPU hotplug needs.
 * madvise() then drains its CPU's LRU batches; lru_add_drain() is not
 * exported, so the last pages of a batch reach the LRU at that CPU's next
 * drain (Documentation/security.rst).
 */
static long mpp_fault_pages(struct mm_struct *mm, unsigned long addr,
			    unsigned long nr, int *locked)
{
	return get_user_pages_remote(mm, addr, nr, FOLL_WRITE | FOLL_HWPOISON,
				     NULL, locked);
}

/**
 * struct mpp_walk - a thread's way through one chunk, mmap_lock held
 * @ctx: what it faults with
 * @chunk: the chunk
 * @vma: the mapping at @addr, or NULL to look it up again (the lock was
 *	dropped, or the walk left it)
 * @addr: where it is: everything below is populated
 * @node_pages: per-node page counts to add to, or NULL for none
 * @unlocked: mmap_lock could not be taken again (a fatal signal)
 * @retried: the mapping was looked up again once after a failure
 */
struct mpp_walk {
	const struct mpp_fault_ctx *ctx;
	const struct mpp_chunk *chunk;
	struct vm_area_struct *vma;
	unsigned long addr;
	u64 *node_pages;
	bool unlocked;
	bool retried;
};

/* The walk starts at @from, mmap_lock taken: 0 or -EINTR */
static int mpp_walk_begin(struct mpp_walk *w, const struct mpp_fault_ctx *ctx,
			  const struct mpp_chunk *chunk, unsigned long from,
			  u64 *node_pages)
{
	*w = (struct mpp_walk) {
		.ctx = ctx, .chunk = chunk, .addr = from,
		.node_pages = node_pages,
	};
	if (mmap_read_lock_killable(ctx->mm)) {
		w->unlocked = true;
		return -EINTR;
	}
	return 0;
}

/* mmap_lock is given back; returns where the walk got */
static unsigned long mpp_walk_end(struct mpp_walk *w)
{
	if (!w->unlocked)
		mmap_read_unlock(w->ctx->mm);
	return w->addr;
}

/* mmap_lock taken again after it was dropped: 0, or -EINTR without it */
static int mpp_walk_relock(struct mpp_walk *w)
{
	w->vma = NULL;
	if (mmap_read_lock_killable(w->ctx->mm)) {
		w->unlocked = true;
		return -EINTR;
	}
	return 0;
}

/* The mapping at @addr in *@vma: 0, or the errno madvise() gives for it */
static int mpp_vma_at(const struct mpp_fault_ctx *ctx, unsigned long addr,
		      struct vm_area_struct **vma)
{
	mmap_assert_locked(ctx->mm);
	*vma = vma_lookup(ctx->mm, addr);
	if (!*vma)
		return -ENOMEM;
	return mpp_check_vma(ctx->id, ctx->flags, *vma);
}

/*
 * Before a batch: what is mapped at @w->addr, and is the walk to stop?
 * Returns 0 with @w->vma the mapping there, or the errno the walk stops
 * with: madvise's for the mapping, which a stop does not hide (the range
 * reached its own failure), else -EINTR or -ECANCELED.
 */
static int mpp_walk_vma(struct mpp_walk *w)
{
	int err;

	mmap_assert_locked(w->ctx->mm);
	if (!w->vma || w->addr >= w->vma->vm_end) {
		err = mpp_vma_at(w->ctx, w->addr, &w->vma);
		if (err)
			return err;
	}
	if (mpp_should_stop(w->ctx, w->chunk, w->addr))
		return fatal_signal_pending(current) ? -EINTR : -ECANCELED;
	return 0;
}

/*
 * One batch at @w->addr of @w->vma: %MPP_GUP_BATCH pages, or one in a
 * userfaultfd-armed mapping, whose handler answers a page at a time. The
 * fault path may drop mmap_lock; it is taken again. Returns 0 to go on
 * (the walk moved on, or is to look the mapping up again once), or the
 * errno madvise() would give.
 */
static int mpp_walk_batch(struct mpp_walk *w)
{
	unsigned long nr;
	int locked = 1;
	long got;

	nr = (min(w->chunk->end, w->vma->vm_end) - w->addr) >> PAGE_SHIFT;
	nr = min(nr, userfaultfd_armed(w->vma) ? 1UL : MPP_GUP_BATCH);
	got = mpp_fault_pages(w->ctx->mm, w->addr, nr, &locked);
	if (!locked && mpp_walk_relock(w))
		return -EINTR;
	if (got > 0) {
		if (w->node_pages)
			mpp_count_nodes(w->ctx, w->addr,
					w->addr + got * PAGE_SIZE,
					w->node_pages);
		atomic64_add(got * PAGE_SIZE, w->ctx->bytes_done);
		w->addr += got << PAGE_SHIFT;
		w->retried = false;
		return 0;
	}
	/*
	 * The fault path dropped the lock and then failed on the mapping it
	 * found again: look it up once more, as madvise() does, for its errno
	 * (a mapping gone is ENOMEM, one changed may be EINVAL).
	 */
	if (!locked && !w->retried) {
		w->retried = true;
		return 0;
	}
	return got ? mpp_gup_errno(got) : -EFAULT;
}

/*
 * Where a walk stops inside its chunk (a cancel, a hand-back), its last
 * fault may have mapped more than it asked for: a transparent huge page
 * that its batch ended inside, which a single-page batch in a
 * userfaultfd-armed mapping does once the handler is gone, or a hugetlb
 * page, of which a batch walks 2 MiB. The walk moves past the pages that
 * are populated writable up to the end of the huge page it is in (the
 * next PMD boundary, or the mapping's page size), in a mapping it may
 * populate, looked up without faulting (FOLL_NOFAULT), so that it stops
 * exactly at the first page not populated; they count as found. Returns
 * true when that is the chunk's end: the chunk is complete.
 */
static bool mpp_walk_settle(struct mpp_walk *w)
{
	unsigned long end, huge, from = w->addr;
	long got;

	if (w->unlocked)
		return false;
	mmap_assert_locked(w->ctx->mm);
	if ((!w->vma || from < w->vma->vm_start || from >= w->vma->vm_end) &&
	    mpp_vma_at(w->ctx, from, &w->vma))
		return false;
	huge = max_t(unsigned long, PMD_SIZE, vma_kernel_pagesize(w->vma));
	end = min3(ALIGN(from, huge), w->chunk->end, w->vma->vm_end);
	if (end <= from)
		return false;
	got = get_user_pages_remote(w->ctx->mm, from, (end - from) >> PAGE_SHIFT,
				    FOLL_WRITE | FOLL_NOFAULT, NULL, NULL);
	if (got <= 0)
		return false;
	w->addr += got << PAGE_SHIFT;
	if (w->node_pages)
		mpp_count_nodes(w->ctx, from, w->addr, w->node_pages);
	atomic64_add(got * PAGE_SIZE, w->ctx->bytes_done);
	return w->addr >= w->chunk->end;
}

/**
 * mpp_fault_check() - what a walk would meet first at @addr
 * @ctx: what it faults with
 * @addr: where a range not begun starts
 *
 * For a range that a stopped call does not begin: its mapping's failure
 * is its own, as the plan of a request finds it.
 *
 * Return: 0 where a walk could begin, madvise's errno for the mapping at
 * @addr, or -EINTR at a fatal signal.
 */
int mpp_fault_check(const struct mpp_fault_ctx *ctx, unsigned long addr)
{
	struct vm_area_struct *vma;
	int ret;

	if (mmap_read_lock_killable(ctx->mm))
		return -EINTR;
	ret = mpp_vma_at(ctx, addr, &vma);
	mmap_read_unlock(ctx->mm);
	return ret;
}

/**
 * mpp_fault_caller() - populate a chunk, or part of it, in the calling thread
 * @ctx: what it faults with
 * @chunk: the chunk
 * @node_pages: per-node page counts to add to, or NULL for none
 * @pause_at: jiffies at which to give mmap_lock back and return
 * @reached: where to start within @chunk, and then set to where it got:
 *	everything from there down to it is populated
 *
 * In batches (mpp_walk_batch()), looking the mapping up again whenever
 * mmap_lock was dropped, and stopping early when the call is stopped below
 * the chunk's end or the caller is killed. It pauses at @pause_at, so that
 * the caller can tell @control how far it got and read a cancel, however
 * slowly a userfaultfd handler answers: @control is user memory, never
 * touched under the lock.
 *
 * Return: 0 when the chunk was populated to its end, -EAGAIN when it
 * paused below, -ECANCELED when it was stopped, -EINTR at a fatal signal,
 * or the errno madvise(MADV_POPULATE_WRITE) would give.
 */
int mpp_fault_caller(const struct mpp_fault_ctx *ctx,
		     const struct mpp_chunk *chunk, u64 *node_pages,
		     unsigned long pause_at, unsigned long *reached)
{
	unsigned long from = *reached;
	struct mpp_walk w;
	int ret;

	ret = mpp_walk_begin(&w, ctx, chunk, from, node_pages);
	while (!ret && w.addr < chunk->end) {
		ret = mpp_walk_vma(&w);
		if (!ret)
			ret = mpp_walk_batch(&w);
		if (!ret && w.addr < chunk->end &&
		    time_after_eq(jiffies, pause_at))
			ret = -EAGAIN;
		cond_resched();
	}
	if (ret == -ECANCELED && mpp_walk_settle(&w))
		ret = 0;
	*reached = mpp_walk_end(&w);
	trace_memprepop_chunk(from, chunk->end, *reached, numa_node_id(),
			      true, ret);
	return ret;
}

/**
 * mpp_fault_worker() - populate one chunk in a worker
 * @ctx: what it faults with
 * @chunk: the chunk
 * @node_pages: per-node page counts to add to, or NULL for none
 * @reached: set to the end of what was populated from @chunk->start
 * @handoff: set when it stopped at @reached before a userfaultfd-armed
 *	mapping, whose faults wait for a handler: only the caller, which is
 *	killable where the handler expects it, faults those (mpp_plan_handoff())
 *
 * As mpp_fault_caller(), without pausing: @control is the caller's to tell.
 *
 * Return: as mpp_fault_caller(), but never -EAGAIN; 0 with *@handoff.
 */
int mpp_fault_worker(const struct mpp_fault_ctx *ctx,
		     const struct mpp_chunk *chunk, u64 *node_pages,
		     unsigned long *reached, bool *handoff)
{
	struct mpp_walk w;
	int ret;

	*handoff = false;
	ret = mpp_walk_begin(&w, ctx, chunk, chunk->start, node_pages);
	while (!ret && w.addr < chunk->end) {
		ret = mpp_walk_vma(&w);
		if (ret)
			break;
		if (userfaultfd_armed(w.vma)) {
			*handoff = true;
			break;
		}
		ret = mpp_walk_batch(&w);
		cond_resched();
	}
	if ((ret == -ECANCELED || *handoff) && mpp_walk_settle(&w)) {
		*handoff = false;
		ret = 0;
	}
	*reached = mpp_walk_end(&w);
	trace_memprepop_chunk(chunk->start, chunk->end, *reached,
			      numa_node_id(), false, ret);
	return ret;
}
