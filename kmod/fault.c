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
#include <linux/userfaultfd_k.h>

#include "compat.h"
#include "internal.h"
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
 * @req: the request
 * @vma: the mapping
 *
 * Mirrors check_vma_flags() for a FOLL_WRITE fault by the caller, which
 * madvise_populate() reports as EINVAL, protection keys included: they are
 * checked against the rights the caller had when it called, whoever faults.
 *
 * Return: 0, or -EINVAL.
 */
int mpp_check_vma(struct mpp_request *req, struct vm_area_struct *vma)
{
	if (vma->vm_flags & (VM_IO | VM_PFNMAP))
		return -EINVAL;
	if (mpp_vma_is_secretmem(vma))
		return -EINVAL;
	if (!(vma->vm_flags & VM_WRITE))
		return -EINVAL;
	if (!mpp_identity_may_write(&req->id, vma))
		return -EINVAL;
	if ((req->flags & MEMPREPOP_F_REQUIRE_MLOCKED) && !mpp_vma_locked(vma))
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

/*
 * Count the nodes of the pages of [start, end), just populated, with
 * mmap_lock held. A lookup of its own, apart from the populate, that never
 * faults (FOLL_NOFAULT), so that counting never changes what is populated
 * or the errno, even when the range was remapped while the fault path had
 * dropped the lock: a page that is not there, or that get_user_pages()
 * cannot return (a special mapping's), is not counted. FOLL_FORCE reads
 * through a NUMA-balancing PROT_NONE entry on 6.1 without a hinting fault,
 * as 6.12 does by default.
 */
static noinline void mpp_count_nodes(struct mpp_request *req,
				     unsigned long start, unsigned long end,
				     u64 *node_pages)
{
	struct page *pages[16];

	while (start < end) {
		unsigned long nr = min_t(unsigned long,
					 (end - start) >> PAGE_SHIFT,
					 ARRAY_SIZE(pages));
		long got, i;

		got = mpp_get_user_pages_remote(req->mm, start, nr,
						FOLL_FORCE | FOLL_NOFAULT,
						pages, NULL);
		if (got <= 0) {
			start += PAGE_SIZE;
			continue;
		}
		for (i = 0; i < got; i++) {
			int nid = page_to_nid(pages[i]);

			if (nid < req->nr_stat_nodes)
				node_pages[nid]++;
			put_page(pages[i]);
		}
		start += got << PAGE_SHIFT;
	}
}

/*
 * Should a thread working on @chunk stop at @addr? A worker's fatal signal
 * is mpp_kill()'s, the caller's its own.
 */
static bool mpp_should_stop(struct mpp_request *req, struct mpp_chunk *chunk,
			    unsigned long addr)
{
	if (READ_ONCE(req->killed) || fatal_signal_pending(current))
		return true;
	return addr >= READ_ONCE(chunk->seg->range->stop_at);
}

/*
 * Fault in [addr, addr + nr pages) of @mm, writable, as madvise() does:
 * the fault path may drop mmap_lock to wait (for I/O, a page lock, a
 * userfaultfd handler), killable, and then says so through @locked; the
 * thread may move to another CPU meanwhile, which CPU hotplug needs. Then
 * the LRU batch of the CPU it is on is drained, as madvise() drains it, so
 * that the pages are on the LRU (and, in an mlocked range, unevictable).
 */
static long mpp_fault_pages(struct mm_struct *mm, unsigned long addr,
			    unsigned long nr, int *locked)
{
	long got;

	got = mpp_get_user_pages_remote(mm, addr, nr,
					FOLL_WRITE | FOLL_HWPOISON, NULL,
					locked);
	mpp_lru_add_drain();
	return got;
}

/**
 * mpp_fault_chunk() - populate one chunk of a request
 * @req: the request
 * @chunk: the chunk
 * @caller: true in the calling thread, false in a worker
 * @node_pages: per-node page counts to add to, or NULL for none
 * @reached: set to the end of what was populated from @chunk->start
 *
 * Faults in batches of %MPP_GUP_BATCH pages, looking up the VMA again after
 * every time mmap_lock was dropped, and stops early when the request is
 * stopped below the chunk's end or killed. Every wait, for mmap_lock or in
 * the fault path, ends at a fatal signal, the caller's or, for a worker,
 * mpp_kill()'s. The caller faults a userfaultfd-armed mapping a page at a
 * time and every %MPP_SYNC_MS tells @control how far the call got, so that
 * a cancel is seen however slowly the handler answers; a worker leaves
 * such a mapping to the caller.
 *
 * Return: 0 when the whole chunk was populated, -ECANCELED when it was
 * stopped, -EINTR at a fatal signal, %MPP_HANDOFF when a worker met a
 * userfaultfd-armed mapping at @reached, or the errno
 * madvise(MADV_POPULATE_WRITE) would give.
 */
int mpp_fault_chunk(struct mpp_request *req, struct mpp_chunk *chunk,
		    bool caller, u64 *node_pages, unsigned long *reached)
{
	struct mm_struct *mm = req->mm;
	struct vm_area_struct *vma = NULL;
	unsigned long addr = chunk->start;
	bool retried = false;
	int locked = 1;
	int ret = 0;

	if (mmap_read_lock_killable(mm)) {
		ret = -EINTR;
		goto out;
	}

	while (addr < chunk->end) {
		bool dropped = false;
		unsigned long nr;
		long got;

		if (mpp_should_stop(req, chunk, addr)) {
			ret = fatal_signal_pending(current) ? -EINTR :
			      -ECANCELED;
			break;
		}
		/* The lock may have been dropped: look the VMA up again. */
		if (!vma || addr >= vma->vm_end) {
			vma = vma_lookup(mm, addr);
			if (!vma) {
				ret = -ENOMEM;
				break;
			}
			ret = mpp_check_vma(req, vma);
			if (ret)
				break;
			if (!caller && userfaultfd_armed(vma)) {
				ret = MPP_HANDOFF;
				break;
			}
		}

		nr = (min(chunk->end, vma->vm_end) - addr) >> PAGE_SHIFT;
		nr = min(nr, userfaultfd_armed(vma) ? 1UL : MPP_GUP_BATCH);
		got = mpp_fault_pages(mm, addr, nr, &locked);
		if (!locked) {
			vma = NULL;
			dropped = true;
			if (mmap_read_lock_killable(mm)) {
				ret = -EINTR;
				goto out;
			}
			locked = 1;
		}
		if (got > 0) {
			if (node_pages)
				mpp_count_nodes(req, addr, addr + got * PAGE_SIZE,
						node_pages);
			atomic64_add(got * PAGE_SIZE, &req->bytes_done);
			addr += got << PAGE_SHIFT;
			retried = false;
		} else if (dropped && !retried) {
			/*
			 * The fault path dropped the lock and then failed on
			 * the mapping it found again: look it up once more, as
			 * madvise() does, for its errno (a mapping gone is
			 * ENOMEM, one changed may be EINVAL).
			 */
			retried = true;
			continue;
		} else {
			ret = got ? mpp_gup_errno(got) : -EFAULT;
			break;
		}
		if (caller && time_after_eq(jiffies, req->next_sync)) {
			/* @control is user memory: never touched under the lock */
			mmap_read_unlock(mm);
			mpp_control_sync(req, true);
			vma = NULL;
			if (mmap_read_lock_killable(mm)) {
				ret = -EINTR;
				goto out;
			}
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
