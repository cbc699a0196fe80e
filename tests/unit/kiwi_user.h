/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The user-space half of drivers/kiwi/proto/kiwi_shim.h: the kernel names
 * the protocol core uses, from libc, for the unit tests, the fuzzers, the
 * adversary and bench-proto.  Included by kiwi_shim.h only.
 */
#ifndef KIWI_USER_H
#define KIWI_USER_H

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

#endif /* KIWI_USER_H */
