// SPDX-License-Identifier: GPL-2.0
/*
 * memprepop: the /dev/memprepop misc device and its ioctls.
 */
#include <linux/cpumask.h>
#include <linux/fs.h>
#include <linux/miscdevice.h>
#include <linux/module.h>
#include <linux/sched.h>
#include <linux/uaccess.h>

#include "internal.h"

#define CREATE_TRACE_POINTS
#include "trace.h"

static bool memprepop_cmd_is(unsigned int cmd, unsigned int want)
{
	return _IOC_TYPE(cmd) == _IOC_TYPE(want) &&
	       _IOC_NR(cmd) == _IOC_NR(want) &&
	       _IOC_DIR(cmd) == _IOC_DIR(want);
}

static long memprepop_ioctl_info(void __user *uarg, size_t usize)
{
	struct memprepop_info info = {
		.flags = MEMPREPOP_F_SUPPORTED,
		.populate_size = sizeof(struct memprepop_populate),
		.info_size = sizeof(struct memprepop_info),
		.max_workers = num_online_cpus(),
	};

	if (usize < MEMPREPOP_INFO_SIZE_VER0)
		return -EINVAL;

	if (copy_to_user(uarg, &info, min(usize, sizeof(info))))
		return -EFAULT;
	/* A newer caller's fields that this module does not know read as 0 */
	if (usize > sizeof(info) &&
	    clear_user(uarg + sizeof(info), usize - sizeof(info)))
		return -EFAULT;
	return 0;
}

static long memprepop_ioctl_populate(void __user *uarg, size_t usize)
{
	struct memprepop_populate req;
	int ret, copy_ret;

	if (usize < MEMPREPOP_POPULATE_SIZE_VER0)
		return -EINVAL;
	ret = copy_struct_from_user(&req, sizeof(req), uarg, usize);
	if (ret)
		return ret;
	if (req.flags & ~MEMPREPOP_F_SUPPORTED)
		return -EINVAL;
	/* A thread without an mm (a kernel thread) has nothing to populate */
	if (!current->mm)
		return -EINVAL;
	/* As madvise() takes it: a tagged pointer names the same memory */
	req.addr = untagged_addr(req.addr);

	ret = memprepop_populate(current->mm, &req);

	copy_ret = copy_to_user(uarg, &req, min(usize, sizeof(req)));
	if (copy_ret && !ret)
		ret = -EFAULT;
	return ret;
}

static long memprepop_ioctl(struct file *file, unsigned int cmd,
			    unsigned long arg)
{
	void __user *uarg = (void __user *)arg;
	size_t usize = _IOC_SIZE(cmd);

	if (memprepop_cmd_is(cmd, MEMPREPOP_IOC_INFO))
		return memprepop_ioctl_info(uarg, usize);
	if (memprepop_cmd_is(cmd, MEMPREPOP_IOC_POPULATE))
		return memprepop_ioctl_populate(uarg, usize);
	return -ENOTTY;
}

static const struct file_operations memprepop_fops = {
	.owner		= THIS_MODULE,
	.unlocked_ioctl	= memprepop_ioctl,
	.compat_ioctl	= compat_ptr_ioctl,
	.llseek		= noop_llseek,
};

static struct miscdevice memprepop_misc = {
	.minor	= MISC_DYNAMIC_MINOR,
	.name	= "memprepop",
	.fops	= &memprepop_fops,
	.mode	= 0660,
	.groups	= memprepop_stats_groups,
};

static int __init memprepop_init(void)
{
	return misc_register(&memprepop_misc);
}

static void __exit memprepop_exit(void)
{
	misc_deregister(&memprepop_misc);
}

module_init(memprepop_init);
module_exit(memprepop_exit);

MODULE_DESCRIPTION("Fast populate and lock of a process's own memory");
MODULE_LICENSE("GPL");
