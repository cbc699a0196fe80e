// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* kiwi: which CRC path payload copies take (proto/crc.c), in debugfs. */
#include <linux/debugfs.h>
#include <linux/fs.h>
#include <linux/module.h>
#include <linux/string.h>
#include <linux/uaccess.h>

#include "core.h"

/*
 * debugfs kiwi/crc_copy: "onepass" (crc32 in the copy's pass) where the CPU has
 * crc32, or "split", copy then crc32c() (module.md).
 */
static const char * const kiwi_crc_modes[] = { "onepass", "split" };

static ssize_t kiwi_crc_copy_read(struct file *file, char __user *ubuf,
				  size_t count, loff_t *ppos)
{
	char buf[16];
	int n = scnprintf(buf, sizeof(buf), "%s\n",
			  kiwi_crc_modes[READ_ONCE(kiwi_crc_soft)]);

	return simple_read_from_buffer(ubuf, count, ppos, buf, n);
}

static ssize_t kiwi_crc_copy_write(struct file *file, const char __user *ubuf,
				   size_t count, loff_t *ppos)
{
	char buf[16];
	int i;

	if (count >= sizeof(buf))
		return -EINVAL;
	if (copy_from_user(buf, ubuf, count))
		return -EFAULT;
	buf[count] = '\0';
	i = sysfs_match_string(kiwi_crc_modes, buf);
	if (i < 0)
		return -EINVAL;
	if (i == 0 && !kiwi_cpu_has_crc32())
		return -EOPNOTSUPP;
	WRITE_ONCE(kiwi_crc_soft, i == 1);
	return count;
}

static const struct file_operations kiwi_crc_copy_fops = {
	.owner = THIS_MODULE,
	.read = kiwi_crc_copy_read,
	.write = kiwi_crc_copy_write,
	.llseek = default_llseek,
};

/*
 * debugfs kiwi/crc_avx512: copies of 1 KiB and more fold their CRC in
 * zmm registers (proto/crc.c) where the CPU has AVX-512 with VPCLMULQDQ
 * and the kernel saves zmm state; N keeps them on the crc32 instruction.
 * Read as debugfs bools are.
 */
static ssize_t kiwi_crc_v512_write(struct file *file, const char __user *ubuf,
				   size_t count, loff_t *ppos)
{
	bool on;
	int rv = kstrtobool_from_user(ubuf, count, &on);

	if (rv)
		return rv;
	if (on && !kiwi_cpu_v512_ok())
		return -EOPNOTSUPP;
	WRITE_ONCE(kiwi_crc_v512, on);
	return count;
}

static const struct file_operations kiwi_crc_v512_fops = {
	.owner = THIS_MODULE,
	.open = simple_open,
	.read = debugfs_read_file_bool,
	.write = kiwi_crc_v512_write,
	.llseek = default_llseek,
};

static int kiwi_crc_runs_get(void *data, u64 *val)
{
	*val = kiwi_crc_runs();
	return 0;
}
DEFINE_DEBUGFS_ATTRIBUTE(kiwi_crc_runs_fops, kiwi_crc_runs_get, NULL,
			 "%llu\n");

/* the path of payload copies at load; then its debugfs files */
void __init kiwi_crc_pick(struct dentry *dir)
{
	kiwi_crc_init();
	kiwi_crc_v512 = kiwi_cpu_v512_ok();
	kiwi_crc_soft = !kiwi_cpu_has_crc32();
	pr_info("kiwi: CRC of copies: %s%s\n", kiwi_crc_modes[kiwi_crc_soft],
		kiwi_crc_v512 ? ", AVX-512 folding from 1 KiB" : "");
	debugfs_create_file("crc_copy", 0644, dir, NULL, &kiwi_crc_copy_fops);
	debugfs_create_file("crc_avx512", 0644, dir, &kiwi_crc_v512,
			    &kiwi_crc_v512_fops);
	/* for the tests: runs hold the vector registers without AVX-512 */
	debugfs_create_bool("crc_run_hold", 0644, dir, &kiwi_crc_run_hold);
	debugfs_create_file_unsafe("crc_runs", 0444, dir, NULL,
				   &kiwi_crc_runs_fops);
}
