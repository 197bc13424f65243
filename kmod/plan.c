// SPDX-License-Identifier: GPL-2.0
/*
 * memprepop: the plan of a request. Its ranges are cut into segments, runs
 * of one mapping whose pages one placement rule puts on the same nodes
 * (policy.c), and the segments into chunks, the unit a thread claims. Which
 * nodes' workers serve each segment is worked out here from the crew's
 * counts (../common/crew.h); threads claim chunks of the segments they
 * serve, dynamically, and a worker that finds a mapping only the caller may
 * fault hands the rest of its chunk back.
 *
 * A mapping that cannot be populated is found here, before anything is
 * faulted, with the errno madvise(MADV_POPULATE_WRITE) gives for it.
 */
#include <linux/fs.h>
#include <linux/hugetlb.h>
#include <linux/magic.h>
#include <linux/mm.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/userfaultfd_k.h>

#include "internal.h"

/**
 * struct mpp_handoff - the rest of a chunk a worker leaves to the caller
 * @node: in &mpp_plan.handoffs
 * @chunk: what is left of the chunk
 */
struct mpp_handoff {
	struct list_head node;
	struct mpp_chunk chunk;
};

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
 * @id: the caller's identity
 * @flags: the call's %MEMPREPOP_F_* flags
 * @vma: the mapping
 *
 * Mirrors check_vma_flags() for a FOLL_WRITE fault by the caller, which
 * madvise_populate() reports as EINVAL, protection keys included: they are
 * checked against the rights the caller had when it called, whoever faults.
 * When planning, and again whenever a thread looks the mapping up.
 *
 * Return: 0, or -EINVAL.
 */
int mpp_check_vma(const struct mpp_identity *id, u32 flags,
		  struct vm_area_struct *vma)
{
	mmap_assert_locked(vma->vm_mm);
	if (vma->vm_flags & (VM_IO | VM_PFNMAP))
		return -EINVAL;
	if (mpp_vma_is_secretmem(vma))
		return -EINVAL;
	/* A shadow stack is writable, but not by a write fault */
	if (!(vma->vm_flags & VM_WRITE) || (vma->vm_flags & VM_SHADOW_STACK))
		return -EINVAL;
	if (!mpp_identity_may_write(id, vma))
		return -EINVAL;
	if ((flags & MEMPREPOP_F_REQUIRE_MLOCKED) &&
	    !mpp_vma_locked(vma))
		return -EINVAL;
	return 0;
}

/**
 * struct mpp_planner - what planning has used up so far
 * @cap: segments allocated in &mpp_plan.segs
 * @len: bytes planned over all ranges, overlaps counted again
 * @steps: mappings looked at, for letting go of mmap_lock
 */
struct mpp_planner {
	unsigned int cap;
	u64 len;
	unsigned long steps;
};

/* Mappings looked up under one hold of mmap_lock */
#define MPP_PLAN_STEPS		64

/*
 * Every %MPP_PLAN_STEPS mappings looked up (overlapping ranges look at
 * theirs again, without bound but %MEMPREPOP_PLAN_LEN_MAX), the walk lets
 * go of mmap_lock, so that the process's own munmap(), and those who read
 * its /proc files after it, wait no longer than that: the mappings may
 * change meanwhile, as they may once the plan is made, and each fault
 * looks at its mapping again. Returns 0 with the lock held, or -EINTR
 * without it: a fatal signal.
 */
static int mpp_plan_step(struct mm_struct *mm, struct mpp_planner *pl)
{
	mmap_assert_locked(mm);
	if (++pl->steps % MPP_PLAN_STEPS)
		return 0;
	mmap_read_unlock(mm);
	cond_resched();
	if (fatal_signal_pending(current) || mmap_read_lock_killable(mm))
		return -EINTR;
	return 0;
}

/*
 * Nothing of @range at or above @addr is planned. Before any thread works,
 * so without &mpp_outcome.lock.
 */
static void mpp_plan_stop(struct mpp_range *range, unsigned long addr,
			  int err)
{
	range->stop_at = addr;
	range->err = err;
}

/*
 * Append [start, end) to the plan, merged with the run before if alike.
 * Returns 0, -E2BIG past the documented limits, or -ENOMEM.
 */
static int mpp_add_segment(struct mpp_plan *plan, struct mpp_planner *pl,
			   struct mpp_range *range,
			   unsigned long start, unsigned long end,
			   const nodemask_t *nodes, bool by_cpu,
			   unsigned long page_size, bool caller_only)
{
	struct mpp_segment *seg;

	/* Overlapping ranges are planned again: bound them all together */
	pl->len += end - start;
	if (pl->len > MEMPREPOP_PLAN_LEN_MAX)
		return -E2BIG;
	if (plan->nr_segs) {
		seg = &plan->segs[plan->nr_segs - 1];
		if (seg->range == range && seg->end == start &&
		    max(seg->chunk_size, MPP_CREW_CHUNK) ==
		    max(page_size, MPP_CREW_CHUNK) &&
		    seg->caller_only == caller_only &&
		    seg->by_cpu == by_cpu && nodes_equal(seg->nodes, *nodes)) {
			seg->end = end;
			seg->chunk_size = max(seg->chunk_size, page_size);
			return 0;
		}
	}
	if (plan->nr_segs == pl->cap) {
		unsigned int new_cap = min(pl->cap ? 2 * pl->cap : 8,
					   MEMPREPOP_PLAN_RUNS_MAX);
		struct mpp_segment *segs;

		if (plan->nr_segs == new_cap)
			return -E2BIG;
		segs = kvmalloc_array(new_cap, sizeof(*segs),
				      GFP_KERNEL_ACCOUNT);
		if (!segs)
			return -ENOMEM;
		if (plan->nr_segs)
			memcpy(segs, plan->segs,
			       plan->nr_segs * sizeof(*segs));
		kvfree(plan->segs);
		plan->segs = segs;
		pl->cap = new_cap;
	}
	seg = &plan->segs[plan->nr_segs++];
	memset(seg, 0, sizeof(*seg));
	seg->range = range;
	seg->start = start;
	seg->end = end;
	/* The page size until the plan is whole: mpp_plan_chunks() */
	seg->chunk_size = page_size;
	seg->nodes = *nodes;
	seg->caller_only = caller_only;
	seg->by_cpu = by_cpu;
	return 0;
}

/*
 * Plan one range: walk its VMAs once. A mapping that cannot be populated
 * ends the range's plan there, and the range is stopped at that address
 * with madvise's errno for it: everything below is still populated. A hole
 * does the same, with ENOMEM, as madvise's populate (since 6.9) stops at
 * the first. Returns 0, -E2BIG or -ENOMEM with mmap_lock held, or -EINTR
 * without it (mpp_plan_step()).
 */
static int mpp_plan_range(struct mpp_request *req, struct mpp_range *range,
			  struct mpp_planner *pl)
{
	struct mpp_plan *plan = &req->plan;
	struct mm_struct *mm = req->mm;
	unsigned long addr = range->start;

	mmap_assert_locked(mm);
	range->first_seg = plan->nr_segs;
	while (addr < range->end) {
		struct vm_area_struct *vma;
		unsigned long end;
		nodemask_t nodes;
		bool by_cpu;
		int err;

		/* The mappings of one range may be many; the ranges too */
		err = mpp_plan_step(mm, pl);
		if (err)
			return err;
		vma = vma_lookup(mm, addr);
		/* A hole ends it, as madvise's populate ends at one */
		if (!vma) {
			mpp_plan_stop(range, addr, -ENOMEM);
			break;
		}
		err = mpp_check_vma(&req->id, req->call.flags, vma);
		if (err) {
			mpp_plan_stop(range, addr, err);
			break;
		}
		end = min(range->end, vma->vm_end);
		by_cpu = mpp_policy_vma_nodes(&req->place, vma, &nodes);
		err = mpp_add_segment(plan, pl, range, addr, end, &nodes,
				      by_cpu, vma_kernel_pagesize(vma),
				      userfaultfd_armed(vma));
		if (err)
			return err;
		addr = end;
	}
	range->nr_segs = plan->nr_segs - range->first_seg;
	return 0;
}

/*
 * The chunk of a call of @len bytes: %MPP_CREW_CHUNK, or for a call of less
 * than %MPP_PLAN_CHUNKS of those, less, so that its workers share it
 * rather than one faulting it all while the others wait; but never less
 * than a PMD, which keeps a transparent huge page within one chunk.
 */
static unsigned long mpp_plan_chunk_size(u64 len)
{
	unsigned long least = min_t(unsigned long, PMD_SIZE, MPP_CREW_CHUNK);
	u64 size = div_u64(len, MPP_PLAN_CHUNKS);

	if (size >= MPP_CREW_CHUNK)
		return MPP_CREW_CHUNK;
	if (size <= least)
		return least;
	return rounddown_pow_of_two(size);
}

/*
 * Number the chunks of every segment, range by range: chunks of @len's
 * size (mpp_plan_chunk_size()), or of a page where a mapping's pages are
 * larger.
 */
static void mpp_plan_chunks(struct mpp_plan *plan, u64 len)
{
	unsigned long chunk_size = mpp_plan_chunk_size(len);
	unsigned int i;

	for (i = 0; i < plan->nr_segs; i++) {
		struct mpp_segment *seg = &plan->segs[i];

		seg->chunk_size = max(seg->chunk_size, chunk_size);

		if (seg == &plan->segs[seg->range->first_seg])
			seg->range->first_chunk = plan->nr_chunks;
		seg->first_chunk = plan->nr_chunks;
		seg->nr_chunks = (ALIGN(seg->end, seg->chunk_size) -
				  ALIGN_DOWN(seg->start, seg->chunk_size)) /
				 seg->chunk_size;
		seg->range->nr_chunks += seg->nr_chunks;
		plan->nr_chunks += seg->nr_chunks;
		if (seg->caller_only)
			plan->caller_segs = true;
	}
}

/**
 * mpp_plan_make() - cut every range into segments and chunks
 * @req: the request, in the caller's context, its ranges and placement
 *	filled in
 *
 * Everything it allocates is bounded by %MEMPREPOP_PLAN_LEN_MAX and
 * %MEMPREPOP_PLAN_RUNS_MAX, whether or not the ranges overlap: at most a
 * bit per chunk and a segment per run.
 *
 * Return: 0, -EINTR (a fatal signal), -E2BIG (past those limits) or
 * -ENOMEM.
 */
int mpp_plan_make(struct mpp_request *req)
{
	struct mpp_planner pl = { };
	unsigned int i;
	int ret = 0;

	spin_lock_init(&req->plan.lock);
	INIT_LIST_HEAD(&req->plan.handoffs);
	if (mmap_read_lock_killable(req->mm))
		return -EINTR;
	for (i = 0; i < req->call.nr_ranges && !ret; i++) {
		struct mpp_range *range = &req->call.ranges[i];

		if (!range->bad)
			ret = mpp_plan_range(req, range, &pl);
		if (!ret)
			ret = mpp_plan_step(req->mm, &pl);
	}
	/* A fatal signal stopped the walk, mmap_lock already let go of */
	if (ret == -EINTR)
		return ret;
	mmap_read_unlock(req->mm);
	if (!ret)
		mpp_plan_chunks(&req->plan, pl.len);
	return ret;
}

/* What mpp_plan_make() and the handoffs allocated */
void mpp_plan_destroy(struct mpp_plan *plan)
{
	struct mpp_handoff *h, *tmp;

	if (plan->handoffs.next)
		list_for_each_entry_safe(h, tmp, &plan->handoffs, node)
			kfree(h);
	kvfree(plan->segs);
}

/**
 * mpp_plan_serve() - which nodes' threads fault each segment
 * @plan: the plan
 * @topo: the machine
 * @count: threads (or, to size the crew, CPUs) per node
 * @demand: if not NULL, each segment's bytes are added to it, shared out
 *	between the nodes that serve it
 *
 * The nodes its pages go to, each replaced by the nearest node with a
 * non-zero @count where it has none.
 */
void mpp_plan_serve(struct mpp_plan *plan, const struct mpp_crew_topo *topo,
		    const unsigned int *count, unsigned long long *demand)
{
	unsigned int i;

	for (i = 0; i < plan->nr_segs; i++) {
		struct mpp_segment *seg = &plan->segs[i];
		int nid;

		nodes_clear(seg->served_by);
		if (seg->caller_only)
			continue;
		for_each_node_mask(nid, seg->nodes) {
			int by = mpp_crew_server(topo, nid, count);

			if (by >= 0)
				node_set(by, seg->served_by);
		}
		if (!demand)
			continue;
		for_each_node_mask(nid, seg->served_by)
			demand[nid] += (seg->end - seg->start) /
				       nodes_weight(seg->served_by);
	}
}

/**
 * mpp_plan_by_cpu() - who faults the segments placed by the faulting CPU
 * @plan: the plan, served (mpp_plan_serve())
 * @node: the caller's node, where their pages go
 * @served: whether a worker runs on @node's CPUs for @node's pages
 *
 * Those workers, or the caller when there is none.
 */
void mpp_plan_by_cpu(struct mpp_plan *plan, int node, bool served)
{
	unsigned int i;

	for (i = 0; i < plan->nr_segs; i++) {
		struct mpp_segment *seg = &plan->segs[i];

		if (!seg->by_cpu || seg->caller_only)
			continue;
		nodes_clear(seg->served_by);
		if (served) {
			node_set(node, seg->served_by);
		} else {
			seg->caller_only = true;
			plan->caller_segs = true;
		}
	}
}

/* No worker: all of it in the caller's own context */
void mpp_plan_caller_only(struct mpp_plan *plan)
{
	unsigned int i;

	for (i = 0; i < plan->nr_segs; i++)
		plan->segs[i].caller_only = true;
	plan->caller_segs = plan->nr_segs > 0;
}

/**
 * mpp_plan_leave_unclaimed() - what no worker took is the caller's
 * @plan: the plan, its workers all done
 *
 * A worker that could not begin (its CPUs gone offline since the call was
 * sized, or its scheduling attributes refused) took nothing; the caller
 * faults what it left, as madvise() would have.
 *
 * Return: true when a segment had chunks nobody claimed.
 */
bool mpp_plan_leave_unclaimed(struct mpp_plan *plan)
{
	bool left = false;
	unsigned int i;

	for (i = 0; i < plan->nr_segs; i++) {
		struct mpp_segment *seg = &plan->segs[i];

		if (seg->caller_only ||
		    atomic_long_read(&seg->next_chunk) >= seg->nr_chunks)
			continue;
		seg->caller_only = true;
		left = true;
	}
	if (left)
		WRITE_ONCE(plan->caller_segs, true);
	return left;
}

/* The start of chunk @index of @seg */
static unsigned long mpp_chunk_start(const struct mpp_segment *seg,
				     unsigned long index)
{
	unsigned long base = ALIGN_DOWN(seg->start, seg->chunk_size);

	return max(seg->start, base + index * seg->chunk_size);
}

/* Chunk @index of @seg */
static void mpp_chunk_init(struct mpp_chunk *chunk, struct mpp_segment *seg,
			   unsigned long index)
{
	chunk->range = seg->range;
	chunk->index = seg->first_chunk + index;
	chunk->start = mpp_chunk_start(seg, index);
	chunk->end = min(seg->end, mpp_chunk_start(seg, index + 1));
}

/**
 * mpp_plan_claim() - hand out the next chunk for a thread
 * @req: the request
 * @node: the worker's node, or %NUMA_NO_NODE for the calling thread
 * @away: the worker runs on another node's CPUs: it takes no segment
 *	placed by the faulting CPU
 * @next_seg: the thread's cursor: segments before it have nothing for it
 * @chunk: filled with the claimed chunk
 *
 * Workers take chunks of the segments their node serves, the caller takes
 * the segments only it may fault, in address order, dynamically.
 *
 * Return: true when @chunk was claimed, false when there is nothing left.
 */
bool mpp_plan_claim(struct mpp_request *req, int node, bool away,
		    unsigned int *next_seg, struct mpp_chunk *chunk)
{
	struct mpp_plan *plan = &req->plan;

	for (; *next_seg < plan->nr_segs; (*next_seg)++) {
		struct mpp_segment *seg = &plan->segs[*next_seg];
		unsigned long index;

		if (READ_ONCE(req->killed))
			return false;
		if (node == NUMA_NO_NODE ? !seg->caller_only :
		    seg->caller_only || !node_isset(node, seg->served_by) ||
		    (away && seg->by_cpu))
			continue;
		index = atomic_long_fetch_inc(&seg->next_chunk);
		if (index >= seg->nr_chunks)
			continue;
		mpp_chunk_init(chunk, seg, index);
		/*
		 * A range's segments are in address order: the rest of the
		 * range is stopped too, go on with the next range.
		 */
		if (chunk->start >= READ_ONCE(seg->range->stop_at)) {
			*next_seg = seg->range->first_seg +
				    seg->range->nr_segs - 1;
			continue;
		}
		return true;
	}
	return false;
}

/**
 * mpp_plan_undone() - the first chunk of a range that was not done
 * @plan: the plan
 * @range: the range
 * @done: a bit per chunk of the plan, set for those done completely
 * @chunk: filled with that chunk
 *
 * Return: true when there is one.
 */
bool mpp_plan_undone(const struct mpp_plan *plan, const struct mpp_range *range,
		     const unsigned long *done, struct mpp_chunk *chunk)
{
	unsigned long last = range->first_chunk + range->nr_chunks;
	unsigned long first = find_next_zero_bit(done, last,
						 range->first_chunk);
	unsigned int i;

	for (i = range->first_seg;
	     first < last && i < range->first_seg + range->nr_segs; i++) {
		struct mpp_segment *seg = &plan->segs[i];

		if (first >= seg->first_chunk + seg->nr_chunks)
			continue;
		mpp_chunk_init(chunk, seg, first - seg->first_chunk);
		return true;
	}
	return false;
}

/**
 * mpp_plan_handoff() - leave the rest of a chunk to the calling thread
 * @plan: the plan
 * @chunk: the chunk, populated from its start up to @reached
 * @reached: where a worker found a userfaultfd-armed mapping
 *
 * Faults in a userfaultfd-armed mapping wait for its handler, and only the
 * caller can be killed out of that wait: such a mapping, found by a worker
 * at any lookup, is the caller's to fault.
 *
 * Return: 0, or -ENOMEM: the chunk then fails there.
 */
int mpp_plan_handoff(struct mpp_plan *plan, const struct mpp_chunk *chunk,
		     unsigned long reached)
{
	struct mpp_handoff *h;

	h = kmalloc(sizeof(*h), GFP_KERNEL_ACCOUNT);
	if (!h)
		return -ENOMEM;
	h->chunk = *chunk;
	h->chunk.start = reached;
	spin_lock(&plan->lock);
	list_add_tail(&h->node, &plan->handoffs);
	spin_unlock(&plan->lock);
	return 0;
}

/* The calling thread takes a chunk a worker handed back, if there is one */
bool mpp_plan_take_handoff(struct mpp_plan *plan, struct mpp_chunk *chunk)
{
	struct mpp_handoff *h;

	spin_lock(&plan->lock);
	h = list_first_entry_or_null(&plan->handoffs, struct mpp_handoff,
				     node);
	if (h)
		list_del(&h->node);
	spin_unlock(&plan->lock);
	if (!h)
		return false;
	*chunk = h->chunk;
	kfree(h);
	return true;
}

/**
 * mpp_plan_handed_back() - where the chunks left handed back got to
 * @plan: the plan, its threads done, each range's first chunk not done
 *	worked out
 *
 * A chunk handed back that the caller did not take before the request was
 * cancelled stays in the list: its worker populated it up to where it
 * stopped, which counts in its range's outcome (mpp_outcome_raise()). Each
 * is then freed: a request's outcome is worked out once. The list is taken
 * off the plan whole, and walked rescheduling: it has a chunk per entry.
 */
void mpp_plan_handed_back(struct mpp_plan *plan)
{
	struct mpp_handoff *h, *next;
	LIST_HEAD(left);

	spin_lock(&plan->lock);
	list_splice_init(&plan->handoffs, &left);
	spin_unlock(&plan->lock);
	list_for_each_entry_safe(h, next, &left, node) {
		mpp_outcome_raise(h->chunk.range, h->chunk.index,
				  h->chunk.start);
		list_del(&h->node);
		kfree(h);
		cond_resched();
	}
}

bool mpp_plan_has_handoff(struct mpp_plan *plan)
{
	bool has;

	spin_lock(&plan->lock);
	has = !list_empty(&plan->handoffs);
	spin_unlock(&plan->lock);
	return has;
}
