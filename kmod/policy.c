// SPDX-License-Identifier: GPL-2.0
/*
 * memprepop: placement. Works out, for a run of a mapping, the nodes its
 * pages will be placed on by the memory policy the caller's own fault would
 * use, so that workers on those nodes' CPUs fault it.
 *
 * A page fault takes the VMA's policy (for shmem, the file's shared policy
 * at that offset), else the faulting task's policy, else the faulting CPU's
 * node. A worker has its own copy of its creator's task policy, made by the
 * kernel (vtask.c), and is used only where that is the calling thread's
 * (mpp_pool_take()); where the caller has none, it places pages on the node
 * of its CPU, so only workers on the caller's node's CPUs fault such ranges
 * (mpp_plan_serve()).
 *
 * A shmem file's shared policy is not looked up (the lookup and the put of
 * what it returns are not exported): a shmem mapping is planned by its
 * VMA's policy, which mbind() on it sets along with the file's, else by
 * the caller's task policy. The kernel's fault still places each page by
 * the file's policy; where another mapping set a different one, workers of
 * other nodes than the pages' may fault them (Documentation/design.rst).
 */
#include <linux/mempolicy.h>
#include <linux/mm.h>
#include <linux/sched/task.h>
#include <linux/topology.h>

#include "internal.h"

/**
 * mpp_policy_init() - record the caller's placement context
 * @place: the request's, in the caller's context
 */
void mpp_policy_init(struct mpp_placement *place)
{
	struct mempolicy *pol;

	place->caller_node = numa_node_id();
	place->mode = MPOL_DEFAULT;
	place->flags = 0;
	place->home_node = NUMA_NO_NODE;
	nodes_clear(place->nodes);
	/* Under task_lock: a cpuset change rebinds the policy in place */
	task_lock(current);
	pol = current->mempolicy;
	place->by_cpu = !pol || pol->mode == MPOL_LOCAL;
	if (!place->by_cpu) {
		place->mode = pol->mode;
		place->flags = pol->flags;
		place->home_node = pol->home_node;
		place->nodes = pol->nodes;
	}
	task_unlock(current);
}

/*
 * The nodes a policy of @mode over @pnodes places pages on when the caller
 * faults them. Returns true when that is the node of whichever CPU faults
 * them (a default or local policy).
 */
static bool mpp_policy_nodes(const struct mpp_placement *place,
			     unsigned short mode, int home_node,
			     const nodemask_t *pnodes, nodemask_t *nodes)
{
	nodes_clear(*nodes);
	if (mode == MPOL_PREFERRED || mode == MPOL_INTERLEAVE ||
	    mode == MPOL_WEIGHTED_INTERLEAVE) {
		*nodes = *pnodes;
	} else if (mode == MPOL_BIND || mode == MPOL_PREFERRED_MANY) {
		if (home_node != NUMA_NO_NODE)
			node_set(home_node, *nodes);
		else
			*nodes = *pnodes;
	}
	/* Default and local: the node of the CPU the caller faults on */
	if (!nodes_empty(*nodes))
		return false;
	node_set(place->caller_node, *nodes);
	return true;
}

/**
 * mpp_policy_vma_nodes() - the nodes the caller's faults in @vma go to
 * @place: the caller's placement context
 * @vma: a mapping of the caller's, under mmap_lock
 * @nodes: set to the nodes
 *
 * The VMA's policy, else the caller's task policy, else the caller's node.
 *
 * Return: true when only a thread on a CPU of the caller's node places them
 * there (a local policy, or a worker's own where the caller has none).
 */
bool mpp_policy_vma_nodes(const struct mpp_placement *place,
			  struct vm_area_struct *vma, nodemask_t *nodes)
{
	const struct mempolicy *pol = vma->vm_policy;

	mmap_assert_locked(vma->vm_mm);
	if (pol)
		return mpp_policy_nodes(place, pol->mode, pol->home_node,
					&pol->nodes, nodes);
	mpp_policy_nodes(place, place->mode, place->home_node, &place->nodes,
			 nodes);
	return place->by_cpu;
}
