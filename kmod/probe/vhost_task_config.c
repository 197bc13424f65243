// SPDX-License-Identifier: GPL-2.0
/*
 * The kernel builds vhost_task (CONFIG_VHOST_TASK, 6.4 and later), whatever
 * the signature of vhost_task_create(): where vhost_task.c, the probe of
 * the one signature vtask.c knows, fails beside this one, the build says
 * so rather than fall back to kernel threads unseen.
 */
#include <linux/kconfig.h>

#if !IS_ENABLED(CONFIG_VHOST_TASK)
#error "CONFIG_VHOST_TASK is not set"
#endif
