/* SPDX-License-Identifier: GPL-2.0 */
/*
 * memprepop tracepoints: a populate call's start and end, and every chunk.
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM memprepop

#if !defined(_MEMPREPOP_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define _MEMPREPOP_TRACE_H

#include <linux/tracepoint.h>

TRACE_EVENT(memprepop_populate_start,
	TP_PROTO(unsigned long start, unsigned long len, u64 flags,
		 unsigned int workers, unsigned int segments),
	TP_ARGS(start, len, flags, workers, segments),
	TP_STRUCT__entry(
		__field(unsigned long, start)
		__field(unsigned long, len)
		__field(u64, flags)
		__field(unsigned int, workers)
		__field(unsigned int, segments)
	),
	TP_fast_assign(
		__entry->start = start;
		__entry->len = len;
		__entry->flags = flags;
		__entry->workers = workers;
		__entry->segments = segments;
	),
	TP_printk("start=0x%lx len=%lu flags=0x%llx workers=%u segments=%u",
		  __entry->start, __entry->len, __entry->flags,
		  __entry->workers, __entry->segments)
);

TRACE_EVENT(memprepop_populate_end,
	TP_PROTO(unsigned long start, u64 populated, u64 nsecs, int ret),
	TP_ARGS(start, populated, nsecs, ret),
	TP_STRUCT__entry(
		__field(unsigned long, start)
		__field(u64, populated)
		__field(u64, nsecs)
		__field(int, ret)
	),
	TP_fast_assign(
		__entry->start = start;
		__entry->populated = populated;
		__entry->nsecs = nsecs;
		__entry->ret = ret;
	),
	TP_printk("start=0x%lx populated=%llu nsecs=%llu ret=%d",
		  __entry->start, __entry->populated, __entry->nsecs,
		  __entry->ret)
);

TRACE_EVENT(memprepop_chunk,
	TP_PROTO(unsigned long start, unsigned long end, unsigned long reached,
		 int node, bool caller, int ret),
	TP_ARGS(start, end, reached, node, caller, ret),
	TP_STRUCT__entry(
		__field(unsigned long, start)
		__field(unsigned long, end)
		__field(unsigned long, reached)
		__field(int, node)
		__field(bool, caller)
		__field(int, ret)
	),
	TP_fast_assign(
		__entry->start = start;
		__entry->end = end;
		__entry->reached = reached;
		__entry->node = node;
		__entry->caller = caller;
		__entry->ret = ret;
	),
	TP_printk("start=0x%lx end=0x%lx reached=0x%lx node=%d %s ret=%d",
		  __entry->start, __entry->end, __entry->reached,
		  __entry->node, __entry->caller ? "caller" : "worker",
		  __entry->ret)
);

#endif /* _MEMPREPOP_TRACE_H */

/* This part must be outside the include guard */
#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH .
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE trace
#include <trace/define_trace.h>
