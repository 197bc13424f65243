// SPDX-License-Identifier: GPL-2.0
/*
 * memprepop: the populate engine. Faults a range of an mm in, writable, the
 * way madvise(MADV_POPULATE_WRITE) does, and reports the same errors for the
 * same ranges.
 */
#include <linux/magic.h>
#include <linux/mm.h>
#include <linux/mmu_context.h>
#include <linux/nodemask.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/timekeeping.h>

#include "memprepop.h"

/* Pages looked up per get_user_pages_remote() call when counting nodes. */
#define MPP_PAGE_BATCH	(PAGE_SIZE / sizeof(struct page *))

static bool mpp_vma_is_secretmem(struct vm_area_struct *vma)
{
	/* vma_is_secretmem() is not exported; its files live on SECRETMEM_MAGIC */
	return vma->vm_file &&
	       file_inode(vma->vm_file)->i_sb->s_magic == SECRETMEM_MAGIC;
}

/*
 * Mirror check_vma_flags() for a FOLL_WRITE fault, which madvise_populate()
 * turns into EINVAL: mappings that cannot be populated writable.
 */
static int mpp_check_vma(struct vm_area_struct *vma, u64 flags)
{
	if (vma->vm_flags & (VM_IO | VM_PFNMAP))
		return -EINVAL;
	if (mpp_vma_is_secretmem(vma))
		return -EINVAL;
	if (!(vma->vm_flags & VM_WRITE))
		return -EINVAL;
	if (!arch_vma_access_permitted(vma, true, false, false))
		return -EINVAL;
	if ((flags & MEMPREPOP_F_LOCK) && !(vma->vm_flags & VM_LOCKED))
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

/*
 * Populate [start, end) of @mm. On return *done is the number of bytes from
 * @start that were populated before the first failure.
 */
static int mpp_populate_range(struct mm_struct *mm, unsigned long start,
			      unsigned long end, u64 flags, u64 *node_pages,
			      unsigned long *done)
{
	unsigned int gup_flags = FOLL_WRITE | FOLL_HWPOISON;
	struct vm_area_struct *vma = NULL;
	struct page **pages = NULL;
	unsigned long addr = start;
	int locked = 1;
	int ret = 0;

	if (flags & MEMPREPOP_F_NODE_STATS) {
		pages = kmalloc_array(MPP_PAGE_BATCH, sizeof(*pages),
				      GFP_KERNEL);
		if (!pages)
			return -ENOMEM;
	}

	if (mmap_read_lock_killable(mm)) {
		ret = -EINTR;
		goto out_free_pages;
	}

	while (addr < end) {
		unsigned long nr;
		long got;

		/* The lock may have been dropped: look the VMA up again. */
		if (!vma || addr >= vma->vm_end) {
			vma = vma_lookup(mm, addr);
			if (!vma) {
				ret = -ENOMEM;
				break;
			}
			ret = mpp_check_vma(vma, flags);
			if (ret)
				break;
		}

		nr = (min(end, vma->vm_end) - addr) >> PAGE_SHIFT;
		if (pages)
			nr = min(nr, MPP_PAGE_BATCH);

		got = get_user_pages_remote(mm, addr, nr, gup_flags, pages,
					    NULL, &locked);
		if (got > 0) {
			if (pages)
				mpp_count_nodes(pages, got, node_pages);
			addr += got << PAGE_SHIFT;
		}
		if (!locked) {
			vma = NULL;
			if (mmap_read_lock_killable(mm)) {
				ret = -EINTR;
				goto out_free_pages;
			}
			locked = 1;
		}
		if (got <= 0) {
			ret = got ? mpp_gup_errno(got) : -EFAULT;
			break;
		}

		if (fatal_signal_pending(current)) {
			ret = -EINTR;
			break;
		}
	}
	mmap_read_unlock(mm);

out_free_pages:
	kfree(pages);
	*done = addr - start;
	return ret;
}

/**
 * memprepop_populate() - carry out a populate request on @mm
 * @mm: the caller's mm
 * @req: the request, validated by the caller except for its range
 *
 * Fills the output fields of @req.
 *
 * Return: 0 or the negative errno documented for %MEMPREPOP_IOC_POPULATE.
 */
int memprepop_populate(struct mm_struct *mm, struct memprepop_populate *req)
{
	unsigned long start, end, done = 0;
	u64 t0 = ktime_get_ns();
	u64 len;
	int ret;

	req->populated = 0;
	req->workers = 0;
	req->nsecs = 0;
	memset(req->node_pages, 0, sizeof(req->node_pages));

	/* The same range checks as do_madvise(), and the end within TASK_SIZE */
	if (!PAGE_ALIGNED(req->addr))
		return -EINVAL;
	len = PAGE_ALIGN(req->len);
	if (req->len && !len)
		return -EINVAL;
	if (req->addr > TASK_SIZE || len > TASK_SIZE - req->addr)
		return -EINVAL;
	if (!len)
		return 0;

	start = req->addr;
	end = start + len;
	req->workers = 1;
	ret = mpp_populate_range(mm, start, end, req->flags, req->node_pages,
				 &done);
	req->populated = done;
	req->nsecs = ktime_get_ns() - t0;
	return ret;
}
