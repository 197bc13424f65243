// SPDX-License-Identifier: GPL-2.0
/*
 * memprepop: module-wide counters, in /sys/class/misc/memprepop/stats/,
 * and what the workers are, in /sys/class/misc/memprepop/workers.
 */
#include <linux/atomic.h>
#include <linux/device.h>
#include <linux/sysfs.h>

#include "internal.h"

static atomic64_t mpp_calls, mpp_failed, mpp_interrupted, mpp_bytes,
		  mpp_nsecs, mpp_workers_started, mpp_workers_reused,
		  mpp_calls_alone;

/* A call is over, with or without a request: @populated bytes in @nsecs */
void mpp_stats_account(u64 populated, u64 nsecs, int ret)
{
	atomic64_inc(&mpp_calls);
	if (ret == -EINTR)
		atomic64_inc(&mpp_interrupted);
	else if (ret)
		atomic64_inc(&mpp_failed);
	atomic64_add(populated, &mpp_bytes);
	atomic64_add(nsecs, &mpp_nsecs);
}

/* A call its caller did alone (alone.c) is over */
void mpp_stats_alone(void)
{
	atomic64_inc(&mpp_calls_alone);
}

void mpp_stats_workers(unsigned int created, unsigned int reused)
{
	atomic64_add(created, &mpp_workers_started);
	atomic64_add(reused, &mpp_workers_reused);
}

#define MPP_STAT_ATTR(name, counter)					\
static ssize_t name##_show(struct device *dev,				\
			   struct device_attribute *attr, char *buf)	\
{									\
	return sysfs_emit(buf, "%lld\n", atomic64_read(&(counter)));	\
}									\
static DEVICE_ATTR_RO(name)

MPP_STAT_ATTR(calls, mpp_calls);
MPP_STAT_ATTR(failed, mpp_failed);
MPP_STAT_ATTR(interrupted, mpp_interrupted);
MPP_STAT_ATTR(bytes_populated, mpp_bytes);
MPP_STAT_ATTR(nsecs, mpp_nsecs);
MPP_STAT_ATTR(workers_started, mpp_workers_started);
MPP_STAT_ATTR(workers_reused, mpp_workers_reused);
MPP_STAT_ATTR(calls_alone, mpp_calls_alone);

static struct attribute *mpp_stats_attrs[] = {
	&dev_attr_calls.attr,
	&dev_attr_failed.attr,
	&dev_attr_interrupted.attr,
	&dev_attr_bytes_populated.attr,
	&dev_attr_nsecs.attr,
	&dev_attr_workers_started.attr,
	&dev_attr_workers_reused.attr,
	&dev_attr_calls_alone.attr,
	NULL,
};

static const struct attribute_group mpp_stats_group = {
	.name = "stats",
	.attrs = mpp_stats_attrs,
};

/* "vhost_task": the workers are the caller's own threads (vtask.c) */
static ssize_t workers_show(struct device *dev, struct device_attribute *attr,
			    char *buf)
{
	return sysfs_emit(buf, "vhost_task\n");
}
static DEVICE_ATTR_RO(workers);

static struct attribute *mpp_device_attrs[] = {
	&dev_attr_workers.attr,
	NULL,
};

static const struct attribute_group mpp_device_group = {
	.attrs = mpp_device_attrs,
};

const struct attribute_group *memprepop_stats_groups[] = {
	&mpp_stats_group,
	&mpp_device_group,
	NULL,
};
