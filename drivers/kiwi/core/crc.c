// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * kiwi: which CRC path payload copies take (proto/crc.c), chosen at load
 * from the CPU's features and a short measurement, or by parameter.
 */
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/timekeeping.h>

#include "core.h"

/*
 * How payload copies compute their CRC (proto/crc.c): "onepass", the
 * crc32 instruction in the same pass as the copy, or "split", the copy
 * then the kernel's crc32c().  Unless given at load, the faster of the
 * two on 4 KiB when the module loads: one pass wins on hardware, but
 * QEMU's TCG emulates crc32 a bit at a time, and there the answer
 * depends on which crc32c() driver the kernel runs (Documentation/
 * module.md).
 */
static int kiwi_crc_mode = -1;	/* -1: measure at load; 0 one pass; 1 split */
static const char * const kiwi_crc_modes[] = { "onepass", "split" };

static int kiwi_param_crc_set(const char *val, const struct kernel_param *kp)
{
	int i = sysfs_match_string(kiwi_crc_modes, val);

	if (i < 0)
		return -EINVAL;
	if (i == 0 && !kiwi_cpu_has_crc32())
		return -EOPNOTSUPP;
	kiwi_crc_mode = i;
	WRITE_ONCE(kiwi_crc_soft, i == 1);
	return 0;
}

static int kiwi_param_crc_get(char *buf, const struct kernel_param *kp)
{
	return scnprintf(buf, PAGE_SIZE, "%s\n",
			 kiwi_crc_modes[READ_ONCE(kiwi_crc_soft)]);
}

static const struct kernel_param_ops kiwi_param_crc_ops = {
	.set = kiwi_param_crc_set,
	.get = kiwi_param_crc_get,
};

module_param_cb(crc_copy, &kiwi_param_crc_ops, NULL, 0644);
MODULE_PARM_DESC(crc_copy,
		 "CRC of copied payload: onepass or split (default: the faster at load)");

/*
 * Copies of 1 KiB and more fold their CRC in zmm registers (proto/crc.c)
 * where the CPU has AVX-512 with VPCLMULQDQ and the kernel saves zmm state; N keeps them on
 * the crc32 instruction (for comparisons).
 */
static int kiwi_param_v512_set(const char *val, const struct kernel_param *kp)
{
	bool on;
	int rv = kstrtobool(val, &on);

	if (rv)
		return rv;
	if (on && !kiwi_cpu_v512_ok())
		return -EOPNOTSUPP;
	WRITE_ONCE(kiwi_crc_v512, on);
	return 0;
}

static int kiwi_param_v512_get(char *buf, const struct kernel_param *kp)
{
	return scnprintf(buf, PAGE_SIZE, "%c\n",
			 READ_ONCE(kiwi_crc_v512) ? 'Y' : 'N');
}

static const struct kernel_param_ops kiwi_param_v512_ops = {
	.set = kiwi_param_v512_set,
	.get = kiwi_param_v512_get,
};

module_param_cb(crc_avx512, &kiwi_param_v512_ops, NULL, 0644);
MODULE_PARM_DESC(crc_avx512,
		 "CRC of copies from 1 KiB folded with AVX-512 VPCLMULQDQ (default: Y where the CPU has it)");

#define KIWI_CRC_PROBE	4096

/* the fastest of 16 runs of a 4 KiB copy with CRC, ns */
static u64 kiwi_crc_time(void *dst, const void *src, bool soft)
{
	u64 best = U64_MAX, t;
	u32 crc = ~0U;
	int i;

	WRITE_ONCE(kiwi_crc_soft, soft);
	for (i = 0; i < 16; i++) {
		t = ktime_get_ns();
		crc = kiwi_crc32c_copy(crc, dst, src, KIWI_CRC_PROBE);
		t = ktime_get_ns() - t;
		best = min(best, t);
	}
	return best;
}

void __init kiwi_crc_pick(void)
{
	u64 one, split;
	u8 *buf;

	kiwi_crc_init();
	kiwi_crc_v512 = kiwi_cpu_v512_ok();
	if (kiwi_crc_mode >= 0)
		return;
	if (!kiwi_cpu_has_crc32()) {
		kiwi_crc_soft = true;
		return;
	}
	buf = kmalloc(2 * KIWI_CRC_PROBE, GFP_KERNEL);
	if (!buf) {
		kiwi_crc_soft = false;
		return;
	}
	memset(buf, 0x5a, 2 * KIWI_CRC_PROBE);
	one = kiwi_crc_time(buf, buf + KIWI_CRC_PROBE, false);
	split = kiwi_crc_time(buf, buf + KIWI_CRC_PROBE, true);
	kfree(buf);
	kiwi_crc_soft = split < one;
	pr_info("kiwi: CRC of copies: %s%s (4 KiB: one pass %llu ns, copy then crc32c() %llu ns)\n",
		kiwi_crc_modes[kiwi_crc_soft],
		kiwi_crc_v512 ?
		", AVX-512 folding from 1 KiB" :
		"", one, split);
}
