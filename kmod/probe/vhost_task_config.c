// SPDX-License-Identifier: GPL-2.0
/*
 * The kernel builds vhost_task (CONFIG_VHOST_TASK, 6.4 and later), whatever
 * the signature of vhost_task_create(): where vhost_task.c, the probe of
 * the one signature vtask.c knows, fails beside this one, the build says
 * that the signature is the problem.
 */
#include <linux/kconfig.h>

#if !IS_ENABLED(CONFIG_VHOST_TASK)
#error "CONFIG_VHOST_TASK is not set"
#endif
