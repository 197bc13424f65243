// SPDX-License-Identifier: GPL-2.0
/*
 * memprepop: placement. Works out, for a run of a mapping, the nodes its
 * pages will be placed on by the memory policy the caller's own fault would
 * use, and makes the workers fault with the caller's task policy rather
 * than their own.
 *
 * A page fault takes the VMA's policy (for shmem, the file's shared policy
 * at that offset), else the faulting task's policy, else the faulting CPU's
 * node. For ranges without a VMA policy, a kernel-thread worker faults with
 * a copy of the caller's task policy installed as its own (kthread.c); when
 * the caller has none, with a preferred-node policy for the caller's node,
 * which is what the caller's default policy amounts to. A user worker
 * thread has its own copy of its creator's policy, made by the kernel
 * (vtask.c): where the caller has none, it places pages on the node of its
 * CPU, so only workers on the caller's node's CPUs fault such ranges
 * (mpp_plan_serve()).
 */
#include <linux/cpuset.h>
#include <linux/mempolicy.h>
#include <linux/mm.h>
#include <linux/rbtree.h>
#include <linux/sched/task.h>
#include <linux/shmem_fs.h>

#include "compat.h"
#include "internal.h"

/**
 * mpp_policy_init() - record the caller's placement context
 * @place: the request's, in the caller's context
 */
void mpp_policy_init(struct mpp_placement *place)
{
	struct mempolicy *pol = &place->task_pol;

	place->caller_node = numa_node_id();
	/* Under task_lock: a cpuset change rebinds the policy in place */
	task_lock(current);
	place->by_cpu = !current->mempolicy ||
			current->mempolicy->mode == MPOL_LOCAL;
	if (!place->by_cpu) {
		*pol = *current->mempolicy;
	} else {
		pol->mode = MPOL_PREFERRED;
		/*
		 * The kernel's default policy (preferred_node_policy[]) moves
		 * a page towards the CPU whose NUMA hinting fault finds it
		 * elsewhere, noting the faulting task in it: a worker's
		 * hinting faults do so as the caller's own would. An
		 * MPOL_LOCAL caller's policy has no such flags.
		 */
		pol->flags = current->mempolicy ? current->mempolicy->flags :
			     MPOL_F_MOF | MPOL_F_MORON;
		pol->home_node = NUMA_NO_NODE;
		nodes_clear(pol->nodes);
		node_set(numa_mem_id(), pol->nodes);
		/* As mpol_new() sets it, for a rebind while it is installed */
		pol->w.cpuset_mems_allowed = cpuset_current_mems_allowed;
	}
	task_unlock(current);
	atomic_set(&pol->refcnt, 1);
}

/*
 * The nodes @pol places pages on when the caller faults them. Returns true
 * when that is the node of whichever CPU faults them (a local policy).
 */
static bool mpp_policy_nodes(const struct mpp_placement *place,
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
	if (!nodes_empty(*nodes))
		return false;
	node_set(place->caller_node, *nodes);
	return true;
}

/*
 * The caller's task policy: a worker of a kind with a policy of its own
 * places by its CPU where the caller has none
 */
static bool mpp_task_nodes(const struct mpp_placement *place,
			   nodemask_t *nodes)
{
	mpp_policy_nodes(place, &place->task_pol, nodes);
	return place->by_cpu && mpp_kind.own_policy;
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
static bool mpp_shmem_nodes(const struct mpp_placement *place,
			    struct vm_area_struct *vma, unsigned long addr,
			    unsigned long *end, nodemask_t *nodes)
{
	struct shared_policy *sp = &SHMEM_I(file_inode(vma->vm_file))->policy;
	pgoff_t pgoff = vma->vm_pgoff + ((addr - vma->vm_start) >> PAGE_SHIFT);
	struct sp_node *hit = NULL, *above = NULL;
	pgoff_t run_end = ULONG_MAX;
	struct rb_node *n;
	bool by_cpu;

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
		by_cpu = mpp_policy_nodes(place, hit->policy, nodes);
		run_end = hit->end;
	} else {
		by_cpu = mpp_task_nodes(place, nodes);
		if (above)
			run_end = above->start;
	}
	read_unlock(&sp->lock);

	if (run_end - pgoff < (*end - addr) >> PAGE_SHIFT)
		*end = addr + ((run_end - pgoff) << PAGE_SHIFT);
	return by_cpu;
}

/**
 * mpp_policy_nodes_at() - the nodes the caller's faults at @addr go to
 * @place: the caller's placement context
 * @vma: the mapping at @addr, under mmap_lock
 * @addr: where the run starts
 * @end: where it ends at most; lowered to where that placement ends
 * @nodes: set to the nodes
 *
 * The VMA's policy, a shmem file's policy at that offset, else the caller's
 * task policy, else the caller's node.
 *
 * Return: true when only a thread on a CPU of the caller's node places them
 * there (a local policy, or a worker's own where the caller has none).
 */
bool mpp_policy_nodes_at(const struct mpp_placement *place,
			 struct vm_area_struct *vma, unsigned long addr,
			 unsigned long *end, nodemask_t *nodes)
{
	if (mpp_vma_is_shmem(vma))
		return mpp_shmem_nodes(place, vma, addr, end, nodes);
	if (vma->vm_policy)
		return mpp_policy_nodes(place, vma->vm_policy, nodes);
	return mpp_task_nodes(place, nodes);
}
