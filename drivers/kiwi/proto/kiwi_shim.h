/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The only header that differs between the kernel and the user-space
 * builds of the protocol core. Every file in proto/ includes this one and
 * nothing from the system, so the same sources compile into kiwi.ko and
 * into the unit tests and fuzzers (the zstd model); the user-space half
 * is tests/unit/kiwi_user.h.
 */
#ifndef KIWI_SHIM_H
#define KIWI_SHIM_H

#ifdef __KERNEL__

#include <linux/types.h>
#include <linux/string.h>
#include <linux/errno.h>
#include <linux/compiler.h>
#include <linux/build_bug.h>
#include <linux/crc32c.h>
#include <linux/init.h>
#include <asm/byteorder.h>
#include <linux/percpu.h>
/*
 * Scratch of one CPU, used only with its vector registers held
 * (kiwi_simd_begin(): preemption is off and no one else may hold them)
 */
#define KIWI_CPU_VAR(tag, name)		static DEFINE_PER_CPU(struct tag, name)
#define kiwi_cpu_ptr(name)		this_cpu_ptr(&(name))
#ifdef CONFIG_X86_64
#include <asm/cpufeature.h>
#include <asm/fpu/api.h>
/* SSE4.2: the crc32 instruction (general-purpose registers only) */
#define kiwi_cpu_has_crc32()	boot_cpu_has(X86_FEATURE_XMM4_2)
/* AVX-512 F and VL with VPCLMULQDQ, and the OS saving zmm state */
static inline bool kiwi_cpu_v512_ok(void)
{
	return boot_cpu_has(X86_FEATURE_AVX512F) &&
	       boot_cpu_has(X86_FEATURE_AVX512VL) &&
	       boot_cpu_has(X86_FEATURE_VPCLMULQDQ) &&
	       cpu_has_xfeatures(XFEATURE_MASK_SSE | XFEATURE_MASK_YMM |
				 XFEATURE_MASK_AVX512, NULL);
}

/*
 * Vector registers in the kernel: only where they may be used now (not
 * in a hard interrupt that came while the kernel used them), else false
 * and the caller takes the general-purpose path.
 */
static inline bool kiwi_simd_begin(void)
{
	if (!irq_fpu_usable())
		return false;
	kernel_fpu_begin();
	return true;
}

#define kiwi_simd_end()		kernel_fpu_end()
/*
 * What proto/crc.c's vector code overwrites, to the compiler: of the
 * vector registers, nothing in a kernel built without SSE (it uses none)
 */
#define KIWI_ASM_CLOBBERS	"cc"
#endif

/* kiwi_crc_init() runs from module init */
#define kiwi_user_init	__init

#else
/* user space: libc in the kernel's names (tests/unit/kiwi_user.h) */
#include "kiwi_user.h"
#endif /* __KERNEL__ */

/* elsewhere no CRC instruction is used (proto/crc.c) */
#ifndef kiwi_cpu_has_crc32
#define kiwi_cpu_has_crc32()	false
#endif
#ifndef __x86_64__
#define kiwi_cpu_v512_ok()	false
#endif

#endif /* KIWI_SHIM_H */
