/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The only header that differs between the kernel and the user-space
 * builds of the protocol core. Every file in proto/ includes this one and
 * nothing from the system, so the same sources compile into kiwi.ko and
 * into the unit tests and fuzzers (the zstd model).
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

#else /* user space */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>	/* and with it glibc's __always_inline */
#include <errno.h>

typedef uint8_t u8;
typedef uint16_t u16;
typedef uint32_t u32;
typedef uint64_t u64;
typedef uint16_t __be16;
typedef uint32_t __be32;
typedef uint64_t __be64;
typedef uint32_t __le32;

#define __force
#define BUILD_BUG_ON(cond) _Static_assert(!(cond), #cond)

#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define cpu_to_be16(x) ((__be16)__builtin_bswap16(x))
#define cpu_to_be32(x) ((__be32)__builtin_bswap32(x))
#define cpu_to_be64(x) ((__be64)__builtin_bswap64(x))
#define cpu_to_le32(x) ((__le32)(x))
#else
#define cpu_to_be16(x) ((__be16)(x))
#define cpu_to_be32(x) ((__be32)(x))
#define cpu_to_be64(x) ((__be64)(x))
#define cpu_to_le32(x) ((__le32)__builtin_bswap32(x))
#endif
#define be16_to_cpu(x) ((u16)cpu_to_be16(x))
#define be32_to_cpu(x) ((u32)cpu_to_be32(x))
#define be64_to_cpu(x) ((u64)cpu_to_be64(x))
#define le32_to_cpu(x) ((u32)cpu_to_le32(x))

/*
 * The kernel's crc32c() semantics: no pre- or post-inversion. User space
 * links a table-driven implementation (tests/unit/crc32c_sw.c).
 */
u32 crc32c(u32 crc, const void *address, unsigned int length);

#ifdef __x86_64__
#define kiwi_cpu_has_crc32()	__builtin_cpu_supports("sse4.2")
/* what kiwi_crc_v512 may be set to (the kernel also asks the OS) */
#define kiwi_cpu_v512_ok()	(__builtin_cpu_supports("avx512f") &&	\
				 __builtin_cpu_supports("avx512vl") &&	\
				 __builtin_cpu_supports("vpclmulqdq"))
#define kiwi_simd_begin()	true
#define kiwi_simd_end()		do { } while (0)
#define KIWI_CPU_VAR(tag, name)		static __thread struct tag name
#define kiwi_cpu_ptr(name)		(&(name))
/* what proto/crc.c's vector code overwrites (zmm: their xmm names) */
#define KIWI_ASM_CLOBBERS	"cc", "xmm0", "xmm1", "xmm2", "xmm3",	\
				"xmm4", "xmm5", "xmm6", "xmm7", "xmm8",	\
				"xmm9", "xmm10", "xmm11", "xmm12",	\
				"xmm13", "xmm14", "xmm15"
#endif

/* what the kernel runs from module init runs before main() */
#define kiwi_user_init	__attribute__((constructor))

#endif /* __KERNEL__ */

/* elsewhere no CRC instruction is used (proto/crc.c) */
#ifndef kiwi_cpu_has_crc32
#define kiwi_cpu_has_crc32()	false
#endif
#ifndef __x86_64__
#define kiwi_cpu_v512_ok()	false
#endif

#endif /* KIWI_SHIM_H */
