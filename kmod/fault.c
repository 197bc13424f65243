// SPDX-License-Identifier: GPL-2.0
/*
 * memprepop: faulting a chunk in, writable, the way madvise_populate() does,
 * with the same errno for the same mapping.
 */
#include <linux/fs.h>
#include <linux/hugetlb.h>
#include <linux/magic.h>
#include <linux/mm.h>
#include <linux/mmu_context.h>
#include <linux/sched/signal.h>

#include "compat.h"
#include "memprepop.h"
#include "trace.h"

static bool mpp_vma_is_secretmem(struct vm_area_struct *vma)
{
	/* vma_is_secretmem() is not exported; its files live on SECRETMEM_MAGIC */
	return vma->vm_file &&
	       file_inode(vma->vm_file)->i_sb->s_magic == SECRETMEM_MAGIC;
}

/*
 * Is @vma locked as mlock() leaves it? mlock_fixup() succeeds on hugetlb,
 * DAX and VM_SPECIAL mappings without setting VM_LOCKED: their pages are
 * never reclaimed anyway.
 */
static bool mpp_vma_locked(struct vm_area_struct *vma)
{
	return (vma->vm_flags & (VM_LOCKED | VM_SPECIAL)) ||
	       is_vm_hugetlb_page(vma) || vma_is_dax(vma);
}

/**
 * mpp_check_vma() - can @vma be populated writable, as requested?
 * @vma: the mapping
 * @flags: %MEMPREPOP_F_* of the request
 *
 * Mirrors check_vma_flags() for a FOLL_WRITE fault, which madvise_populate()
 * reports as EINVAL. Protection keys are checked against the current task:
 * in the caller that is what madvise does; a kernel thread has no keys.
 *
 * Return: 0, or -EINVAL.
 */
int mpp_check_vma(struct vm_area_struct *vma, u64 flags)
{
	if (vma->vm_flags & (VM_IO | VM_PFNMAP))
		return -EINVAL;
	if (mpp_vma_is_secretmem(vma))
		return -EINVAL;
	if (!(vma->vm_flags & VM_WRITE))
		return -EINVAL;
	if (!arch_vma_access_permitted(vma, true, false, false))
		return -EINVAL;
	if ((flags & MEMPREPOP_F_LOCK) && !mpp_vma_locked(vma))
		return -EINVAL;
	return 0;
}

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

static void mpp_count_nodes(struct page **pages, long nr, u64 *node_pages)
{
	long i;

	for (i = 0; i < nr; i++) {
		int nid = page_to_nid(pages[i]);

		if (nid < MEMPREPOP_STAT_NODES)
			node_pages[nid]++;
		put_page(pages[i]);
	}
}

/* Only the caller can be killed; a worker is stopped through the request. */
static int mpp_mmap_read_lock(struct mm_struct *mm, bool caller)
{
	if (caller)
		return mmap_read_lock_killable(mm);
	mmap_read_lock(mm);
	return 0;
}

/* Should a thread working on @req stop at @addr? */
static bool mpp_should_stop(struct mpp_request *req, unsigned long addr,
			    bool caller)
{
	if (READ_ONCE(req->killed))
		return true;
	if (caller && fatal_signal_pending(current))
		return true;
	return addr >= READ_ONCE(req->stop_at);
}

/**
 * mpp_fault_chunk() - populate one chunk of a request
 * @req: the request
 * @chunk: the chunk
 * @caller: true in the calling thread, false in a worker
 * @node_pages: per-node page counts to add to (%MEMPREPOP_F_NODE_STATS)
 * @reached: set to the end of what was populated from @chunk->start
 *
 * Faults in batches of %MPP_GUP_BATCH pages, looking up the VMA again after
 * every time the fault path dropped mmap_lock, and stops early when the
 * request is stopped below the chunk's end or killed.
 *
 * Return: 0 when the whole chunk was populated, -ECANCELED when it was
 * stopped, or the errno madvise(MADV_POPULATE_WRITE) would give.
 */
int mpp_fault_chunk(struct mpp_request *req, struct mpp_chunk *chunk,
		    bool caller, u64 *node_pages, unsigned long *reached)
{
	/* With node statistics, a smaller batch whose pages are counted */
	struct page *batch[64];
	struct page **pages = NULL;
	struct mm_struct *mm = req->mm;
	struct vm_area_struct *vma = NULL;
	unsigned long addr = chunk->start;
	unsigned long max_nr = MPP_GUP_BATCH;
	int locked = 1;
	int ret = 0;

	if (req->flags & MEMPREPOP_F_NODE_STATS) {
		pages = batch;
		max_nr = ARRAY_SIZE(batch);
	}

	if (mpp_mmap_read_lock(mm, caller)) {
		ret = -EINTR;
		goto out;
	}

	while (addr < chunk->end) {
		unsigned long nr;
		long got;

		if (mpp_should_stop(req, addr, caller)) {
			ret = caller && fatal_signal_pending(current) ?
			      -EINTR : -ECANCELED;
			break;
		}
		/* The lock may have been dropped: look the VMA up again. */
		if (!vma || addr >= vma->vm_end) {
			vma = vma_lookup(mm, addr);
			if (!vma) {
				ret = -ENOMEM;
				break;
			}
			ret = mpp_check_vma(vma, req->flags);
			if (ret)
				break;
		}

		nr = (min(chunk->end, vma->vm_end) - addr) >> PAGE_SHIFT;
		nr = min(nr, max_nr);
		got = mpp_get_user_pages_remote(mm, addr, nr,
						FOLL_WRITE | FOLL_HWPOISON,
						pages, &locked);
		if (got > 0) {
			if (pages)
				mpp_count_nodes(pages, got, node_pages);
			addr += got << PAGE_SHIFT;
		}
		if (!locked) {
			vma = NULL;
			if (mpp_mmap_read_lock(mm, caller)) {
				ret = -EINTR;
				goto out;
			}
			locked = 1;
		}
		if (got <= 0) {
			ret = got ? mpp_gup_errno(got) : -EFAULT;
			break;
		}
		cond_resched();
	}
	mmap_read_unlock(mm);
out:
	*reached = addr;
	trace_memprepop_chunk(chunk->start, chunk->end, addr, numa_node_id(),
			      caller, ret);
	return ret;
}
