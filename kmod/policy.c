// SPDX-License-Identifier: GPL-2.0
/*
 * memprepop: placement. Works out, per run of the range, the nodes its pages
 * will be placed on by the memory policy the caller's own fault would use,
 * and makes the workers fault with the caller's task policy rather than
 * their own.
 *
 * A page fault takes the VMA's policy (for shmem, the file's shared policy
 * at that offset), else the faulting task's policy, else the faulting CPU's
 * node. Workers are kernel threads on other CPUs, so for ranges without a VMA
 * policy they fault with a copy of the caller's task policy installed as
 * their own; when the caller has none, with a preferred-node policy for the
 * caller's node, which is what the caller's default policy amounts to.
 */
#include <linux/cpuset.h>
#include <linux/hugetlb.h>
#include <linux/mempolicy.h>
#include <linux/mm.h>
#include <linux/rbtree.h>
#include <linux/sched/signal.h>
#include <linux/sched/task.h>
#include <linux/shmem_fs.h>
#include <linux/userfaultfd_k.h>

#include "compat.h"
#include "internal.h"

/**
 * mpp_policy_init() - record the caller's placement context
 * @req: the request, in the caller's context
 */
void mpp_policy_init(struct mpp_request *req)
{
	struct mempolicy *pol = &req->task_pol;

	req->caller_node = numa_node_id();
	/* Under task_lock: a cpuset change rebinds the policy in place */
	task_lock(current);
	if (current->mempolicy && current->mempolicy->mode != MPOL_LOCAL) {
		*pol = *current->mempolicy;
	} else {
		pol->mode = MPOL_PREFERRED;
		pol->flags = 0;
		pol->home_node = NUMA_NO_NODE;
		nodes_clear(pol->nodes);
		node_set(numa_mem_id(), pol->nodes);
		/* As mpol_new() sets it, for a rebind while it is installed */
		pol->w.cpuset_mems_allowed = cpuset_current_mems_allowed;
	}
	task_unlock(current);
	atomic_set(&pol->refcnt, 1);
}

/**
 * mpp_policy_enter() - fault with the caller's task policy from now on
 * @pol: the worker's own copy of it
 *
 * Called by a worker before it faults anything, after it was attached to the
 * caller's cgroups. Each worker has its own copy, so that a cpuset change
 * rebinds each copy once, under its own task's lock; the kernel never puts
 * a task's policy but at exit or set_mempolicy(), which a worker does not
 * reach with it installed.
 *
 * Return: the thread's own policy, for mpp_policy_leave(): none for a
 * kernel thread, the one a user worker thread was created with.
 */
struct mempolicy *mpp_policy_enter(struct mempolicy *pol)
{
	struct mempolicy *own;

	task_lock(current);
	own = current->mempolicy;
	current->mempolicy = pol;
	task_unlock(current);
	return own;
}

/**
 * mpp_policy_leave() - the thread's own policy again
 * @own: what mpp_policy_enter() returned
 *
 * The copy is its caller's to free: a worker never exits with it installed.
 */
void mpp_policy_leave(struct mempolicy *own)
{
	task_lock(current);
	current->mempolicy = own;
	task_unlock(current);
}

/* The nodes @pol places pages on when the caller faults them. */
static void mpp_policy_nodes(const struct mpp_request *req,
			     const struct mempolicy *pol, nodemask_t *nodes)
{
	nodes_clear(*nodes);
	if (pol && (pol->mode == MPOL_PREFERRED ||
		    mpp_mode_is_interleave(pol->mode))) {
		*nodes = pol->nodes;
	} else if (pol && (pol->mode == MPOL_BIND ||
			   pol->mode == MPOL_PREFERRED_MANY)) {
		if (pol->home_node != NUMA_NO_NODE)
			node_set(pol->home_node, *nodes);
		else
			*nodes = pol->nodes;
	}
	/* Default and local: the node of the CPU the caller faults on */
	if (nodes_empty(*nodes))
		node_set(req->caller_node, *nodes);
}

static bool mpp_vma_is_shmem(struct vm_area_struct *vma)
{
	/* vma_is_shmem() is not exported; shmem_mapping() is, or inline */
	return vma->vm_file && shmem_mapping(vma->vm_file->f_mapping);
}

/*
 * A shmem file's policy is per offset, in a tree of ranges. Look up the one
 * at @addr without a reference (mpol_put() is not exported): under the
 * tree's lock the policy is alive, and only its nodes are read. Lowers *end
 * to where that policy, or the lack of one, ends.
 */
static void mpp_shmem_nodes(const struct mpp_request *req,
			    struct vm_area_struct *vma, unsigned long addr,
			    unsigned long *end, nodemask_t *nodes)
{
	struct shared_policy *sp = &SHMEM_I(file_inode(vma->vm_file))->policy;
	pgoff_t pgoff = vma->vm_pgoff + ((addr - vma->vm_start) >> PAGE_SHIFT);
	struct sp_node *hit = NULL, *above = NULL;
	pgoff_t run_end = ULONG_MAX;
	struct rb_node *n;

	read_lock(&sp->lock);
	for (n = sp->root.rb_node; n;) {
		struct sp_node *p = rb_entry(n, struct sp_node, nd);

		if (pgoff >= p->end) {
			n = n->rb_right;
		} else if (pgoff < p->start) {
			above = p;
			n = n->rb_left;
		} else {
			hit = p;
			break;
		}
	}
	if (hit) {
		mpp_policy_nodes(req, hit->policy, nodes);
		run_end = hit->end;
	} else {
		mpp_policy_nodes(req, &req->task_pol, nodes);
		if (above)
			run_end = above->start;
	}
	read_unlock(&sp->lock);

	if (run_end - pgoff < (*end - addr) >> PAGE_SHIFT)
		*end = addr + ((run_end - pgoff) << PAGE_SHIFT);
}

/**
 * struct mpp_planner - what planning has used up so far
 * @cap: segments allocated in &mpp_request.segs
 * @len: bytes planned over all ranges, overlaps counted again
 * @steps: mappings looked at, for rescheduling and fatal signals
 */
struct mpp_planner {
	unsigned int cap;
	u64 len;
	unsigned long steps;
};

/*
 * Append [start, end) to the plan, merged with the run before if alike.
 * Returns 0, -E2BIG past the documented limits, or -ENOMEM.
 */
static int mpp_add_segment(struct mpp_request *req, struct mpp_planner *pl,
			   struct mpp_range *range,
			   unsigned long start, unsigned long end,
			   const nodemask_t *nodes, unsigned long page_size,
			   bool caller_only)
{
	unsigned long chunk_size = max(MPP_CHUNK_SIZE, page_size);
	struct mpp_segment *seg;

	/* Overlapping ranges are planned again: bound them all together */
	pl->len += end - start;
	if (pl->len > MEMPREPOP_PLAN_LEN_MAX)
		return -E2BIG;
	if (req->nr_segs) {
		seg = &req->segs[req->nr_segs - 1];
		if (seg->range == range && seg->end == start &&
		    seg->chunk_size == chunk_size &&
		    seg->caller_only == caller_only &&
		    nodes_equal(seg->nodes, *nodes)) {
			seg->end = end;
			return 0;
		}
	}
	if (req->nr_segs == pl->cap) {
		unsigned int new_cap = min(pl->cap ? 2 * pl->cap : 8,
					   MEMPREPOP_PLAN_RUNS_MAX);
		struct mpp_segment *segs;

		if (req->nr_segs == new_cap)
			return -E2BIG;
		segs = kvmalloc_array(new_cap, sizeof(*segs),
				      GFP_KERNEL_ACCOUNT);
		if (!segs)
			return -ENOMEM;
		if (req->nr_segs)
			memcpy(segs, req->segs, req->nr_segs * sizeof(*segs));
		kvfree(req->segs);
		req->segs = segs;
		pl->cap = new_cap;
	}
	seg = &req->segs[req->nr_segs++];
	memset(seg, 0, sizeof(*seg));
	seg->range = range;
	seg->start = start;
	seg->end = end;
	seg->chunk_size = chunk_size;
	seg->nodes = *nodes;
	seg->caller_only = caller_only;
	return 0;
}

/*
 * Plan one range: walk its VMAs once. A mapping that cannot be populated
 * ends the range's plan there, and the range is stopped at that address
 * with madvise's errno for it: everything below is still populated. A hole
 * does the same where the running kernel's madvise() stops at holes; before
 * 6.9 it is stepped over and remembered, as madvise() remembers ENOMEM and
 * goes on (compat.h). Returns 0, -EINTR, -E2BIG or -ENOMEM.
 */
static int mpp_plan_range(struct mpp_request *req, struct mpp_range *range,
			  struct mpp_planner *pl)
{
	struct mm_struct *mm = req->mm;
	unsigned long addr = range->start;

	range->first_seg = req->nr_segs;
	while (addr < range->end) {
		struct vm_area_struct *vma = vma_lookup(mm, addr);
		unsigned long end;
		nodemask_t nodes;
		int err;

		/* The mappings of one range may be many; the ranges too */
		if (++pl->steps % 64 == 0) {
			if (fatal_signal_pending(current))
				return -EINTR;
			cond_resched();
		}
		if (!vma && !MPP_HOLES_STOP) {
			range->hole_at = min(range->hole_at, addr);
			vma = find_vma(mm, addr);
			if (!vma || vma->vm_start >= range->end)
				break;
			addr = vma->vm_start;
		}
		if (!vma) {
			mpp_stop(req, range, addr, -ENOMEM);
			break;
		}
		err = mpp_check_vma(req, vma);
		if (err) {
			mpp_stop(req, range, addr, err);
			break;
		}
		end = min(range->end, vma->vm_end);
		if (mpp_vma_is_shmem(vma))
			mpp_shmem_nodes(req, vma, addr, &end, &nodes);
		else
			mpp_policy_nodes(req, vma->vm_policy ?: &req->task_pol,
					 &nodes);
		err = mpp_add_segment(req, pl, range, addr, end, &nodes,
				      vma_kernel_pagesize(vma),
				      userfaultfd_armed(vma));
		if (err)
			return err;
		addr = end;
	}
	range->nr_segs = req->nr_segs - range->first_seg;
	return 0;
}

/**
 * mpp_plan() - cut every range into segments, each with its placement
 * @req: the request, in the caller's context
 *
 * Everything it allocates is bounded by %MEMPREPOP_PLAN_LEN_MAX and
 * %MEMPREPOP_PLAN_RUNS_MAX, whether or not the ranges overlap: at most a
 * bit per chunk and a segment per run.
 *
 * Return: 0, -EINTR (a fatal signal), -E2BIG (past those limits) or
 * -ENOMEM.
 */
int mpp_plan(struct mpp_request *req)
{
	struct mpp_planner pl = { };
	unsigned int i;
	int ret = 0;

	if (mmap_read_lock_killable(req->mm))
		return -EINTR;
	for (i = 0; i < req->nr_ranges && !ret; i++) {
		struct mpp_range *range = &req->ranges[i];

		if (!range->bad)
			ret = mpp_plan_range(req, range, &pl);
		if (!ret && ++pl.steps % 64 == 0) {
			if (fatal_signal_pending(current))
				ret = -EINTR;
			cond_resched();
		}
	}
	mmap_read_unlock(req->mm);
	if (ret)
		return ret;

	for (i = 0; i < req->nr_segs; i++) {
		struct mpp_segment *seg = &req->segs[i];

		if (seg == &req->segs[seg->range->first_seg])
			seg->range->first_chunk = req->nr_chunks;
		seg->first_chunk = req->nr_chunks;
		seg->nr_chunks = (ALIGN(seg->end, seg->chunk_size) -
				  ALIGN_DOWN(seg->start, seg->chunk_size)) /
				 seg->chunk_size;
		seg->range->nr_chunks += seg->nr_chunks;
		req->nr_chunks += seg->nr_chunks;
		if (seg->caller_only)
			req->caller_segs = true;
	}
	return 0;
}
