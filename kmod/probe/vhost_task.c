// SPDX-License-Identifier: GPL-2.0
/*
 * vhost_task, built in and with the callback that tells it was killed
 * (6.11): the workers are the caller's own threads (vtask.c); without it
 * the module does not build.
 * vhost_task_create() is exported whenever it is built (CONFIG_VHOST_TASK,
 * selected by CONFIG_VHOST).
 */
#include <linux/types.h>
#include <linux/kconfig.h>
#include <linux/sched/vhost_task.h>

#if !IS_ENABLED(CONFIG_VHOST_TASK)
#error "CONFIG_VHOST_TASK is not set"
#endif

struct vhost_task *(*mpp_probe)(bool (*fn)(void *),
				void (*handle_kill)(void *), void *arg,
				const char *name) = vhost_task_create;
