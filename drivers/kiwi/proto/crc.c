// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * CRC32c computed in the same pass as a copy (kiwi_crc32c_copy()): each
 * byte is loaded once, stored to its destination and fed to the CRC from
 * the same register, so a CRC-on FPDU costs one pass over its payload,
 * not two.
 *
 * On x86-64 the SSE4.2 crc32 instruction works on general-purpose
 * registers only, so this is legal in any kernel context without
 * kernel_fpu_begin().  It takes three cycles and one core can run one
 * (Intel, older AMD) or two (AMD Zen 5) per cycle, so a block of 6 x L
 * bytes is run as six independent streams (three chains use half of
 * Zen 5's rate), whose CRCs are then joined.  CRC32c without inversion is
 * linear in its state, so crc(c, A B) = shift_B(crc(c, A)) ^ crc(0, B),
 * where shift_B is what |B| zero bytes do to a state: for each fixed L
 * that map is eight table lookups (one per nibble of the state).
 * Elsewhere, or when told to (kiwi_crc_soft), copy then crc32c().
 */
#include "kiwi_proto.h"

bool kiwi_crc_soft;
bool kiwi_crc_v512;
bool kiwi_crc_run_hold;

#ifdef __x86_64__

/*
 * Streams, and how many block lengths L (kiwi_crc32c_copy_hw()): 2048 for
 * long spans, 680 for a 4 KiB page (4080), 224 for an MSS-sized FPDU
 * (1344 of 1428), then 96 and 32; what is left, under 192 bytes, is one
 * stream.  L a power of two from 4096 up ran slower (the streams' loads
 * and stores then share their low address bits).
 */
#define KIWI_CRC_WAYS	6
#define KIWI_CRC_NBLK	5

/* the block lengths L, longest first, as kiwi_crc32c_copy_hw() runs them */
static const u32 kiwi_crc_blk[KIWI_CRC_NBLK] = { 2048, 680, 224, 96, 32 };

/*
 * kiwi_crc_shift[b][i][v]: the state (v << 4i) after kiwi_crc_blk[b]
 * zero bytes, filled by kiwi_crc_init(); the unit tests check every
 * block length against the plain CRC.
 */
static u32 kiwi_crc_shift[KIWI_CRC_NBLK][8][16];

static inline u32 kiwi_crc_shift_by(u32 crc, const u32 (*t)[16])
{
	return t[0][crc & 15] ^ t[1][(crc >> 4) & 15] ^
	       t[2][(crc >> 8) & 15] ^ t[3][(crc >> 12) & 15] ^
	       t[4][(crc >> 16) & 15] ^ t[5][(crc >> 20) & 15] ^
	       t[6][(crc >> 24) & 15] ^ t[7][crc >> 28];
}

static inline u64 kiwi_crc_q(u64 crc, u64 v)
{
	asm("crc32q %1, %0" : "+r" (crc) : "rm" (v));
	return crc;
}

/* up to 7 bytes, 4 then 2 then 1 at a time: a short dependency chain */
static inline u32 kiwi_crc_few(u32 crc, u8 *d, const u8 *s, u32 n)
{
	if (n & 4) {
		u32 v;

		__builtin_memcpy(&v, s, 4);
		__builtin_memcpy(d, &v, 4);
		asm("crc32l %1, %0" : "+r" (crc) : "rm" (v));
		s += 4;
		d += 4;
	}
	if (n & 2) {
		u16 v;

		__builtin_memcpy(&v, s, 2);
		__builtin_memcpy(d, &v, 2);
		asm("crc32w %1, %0" : "+r" (crc) : "rm" (v));
		s += 2;
		d += 2;
	}
	if (n & 1) {
		*d = *s;
		asm("crc32b %1, %0" : "+r" (crc) : "rm" (*s));
	}
	return crc;
}

/* unaligned 8-byte load and store; x86 is little-endian: stream order */
static inline u64 kiwi_ld64(const u8 *p)
{
	u64 v;

	__builtin_memcpy(&v, p, sizeof(v));
	return v;
}

static inline void kiwi_st64(u8 *p, u64 v)
{
	__builtin_memcpy(p, &v, sizeof(v));
}

/*
 * Blocks of KIWI_CRC_WAYS x l bytes while they fit.  Inlined once per
 * block length, so that l is a constant: the six streams are then
 * addressed from one index with immediate offsets and everything stays
 * in registers.
 */
static __always_inline u32 kiwi_crc_blocks(u32 crc, u8 **dp, const u8 **sp,
					   u32 *lenp, const u32 l, int b)
{
	const u32 (*t)[16] = kiwi_crc_shift[b];
	const u8 *s = *sp;
	u8 *d = *dp;
	u32 len = *lenp, i;

	while (len >= KIWI_CRC_WAYS * l) {
		u64 c0 = crc, c1 = 0, c2 = 0, c3 = 0, c4 = 0, c5 = 0;

		for (i = 0; i < l; i += 8) {
			u64 v0 = kiwi_ld64(s + i);
			u64 v1 = kiwi_ld64(s + l + i);
			u64 v2 = kiwi_ld64(s + 2 * l + i);
			u64 v3 = kiwi_ld64(s + 3 * l + i);
			u64 v4 = kiwi_ld64(s + 4 * l + i);
			u64 v5 = kiwi_ld64(s + 5 * l + i);

			kiwi_st64(d + i, v0);
			kiwi_st64(d + l + i, v1);
			kiwi_st64(d + 2 * l + i, v2);
			kiwi_st64(d + 3 * l + i, v3);
			kiwi_st64(d + 4 * l + i, v4);
			kiwi_st64(d + 5 * l + i, v5);
			c0 = kiwi_crc_q(c0, v0);
			c1 = kiwi_crc_q(c1, v1);
			c2 = kiwi_crc_q(c2, v2);
			c3 = kiwi_crc_q(c3, v3);
			c4 = kiwi_crc_q(c4, v4);
			c5 = kiwi_crc_q(c5, v5);
		}
		/* Horner: each stream's CRC moved past the ones after it */
		crc = kiwi_crc_shift_by((u32)c0, t) ^ (u32)c1;
		crc = kiwi_crc_shift_by(crc, t) ^ (u32)c2;
		crc = kiwi_crc_shift_by(crc, t) ^ (u32)c3;
		crc = kiwi_crc_shift_by(crc, t) ^ (u32)c4;
		crc = kiwi_crc_shift_by(crc, t) ^ (u32)c5;
		s += KIWI_CRC_WAYS * l;
		d += KIWI_CRC_WAYS * l;
		len -= KIWI_CRC_WAYS * l;
	}
	*sp = s;
	*dp = d;
	*lenp = len;
	return crc;
}

/*
 * Long spans where the CPU has AVX-512 with VPCLMULQDQ: the copy goes
 * through zmm registers 256 bytes at a time, and the same registers are
 * folded into four 512-bit accumulators by carry-less multiplication
 * (two VPCLMULQDQ and one three-way XOR per 64 bytes, where the crc32
 * instruction needs eight), then reduced to 16 bytes whose CRC, taken
 * from zero with two crc32 instructions, is the span's: folding keeps a
 * message's CRC while moving its leading bytes forward.  The starting
 * state is XORed into the first four bytes (the CRC without inversion:
 * crc(c, M) = crc(0, M ^ c)).
 *
 * Each pair below moves a 16-byte lane forward by D bytes: its low
 * quadword is multiplied by x^(8D+32) mod P, its high one by
 * x^(8D-32) mod P, both bit-reflected and shifted left by one, as
 * tests/unit/gen_crc_shift.c computes them from the reference CRC.
 */
static const u64 kiwi_crc_k256[2] = { 0x0dcb17aa4, 0x0b9e02b86 };
static const u64 kiwi_crc_k64[2] = { 0x0740eef02, 0x09e4addf8 };
static const u64 kiwi_crc_k16[2] = { 0x0f20c0dfe, 0x14cd00bd6 };

/* spans from this long on (a multiple of 256 of them) */
#define KIWI_CRC_V512_MIN	1024

/* one 64-byte accumulator folded forward over the next 64 data bytes */
#define KIWI_FOLD(acc, data, tmp)					\
	"vpclmulqdq $0x00, %%zmm10, %%" acc ", %%" tmp "\n\t"		\
	"vpclmulqdq $0x11, %%zmm10, %%" acc ", %%" acc "\n\t"		\
	"vpternlogq $0x96, %%" tmp ", %%" data ", %%" acc "\n\t"

/* the same by 16 bytes, xmm0 over the next lane (taken out before) */
#define KIWI_FOLD16(lane)						\
	"vpclmulqdq $0x00, %%xmm10, %%xmm0, %%xmm8\n\t"		\
	"vpclmulqdq $0x11, %%xmm10, %%xmm0, %%xmm0\n\t"		\
	"vpternlogq $0x96, %%xmm8, %%" lane ", %%xmm0\n\t"

/* 256 bytes from s to d through four zmm registers */
#define KIWI_COPY256(a, b, c, e)					\
	"vmovdqu64 0(%[s]), %%zmm" a "\n\t"				\
	"vmovdqu64 64(%[s]), %%zmm" b "\n\t"				\
	"vmovdqu64 128(%[s]), %%zmm" c "\n\t"			\
	"vmovdqu64 192(%[s]), %%zmm" e "\n\t"			\
	"vmovdqu64 %%zmm" a ", 0(%[d])\n\t"				\
	"vmovdqu64 %%zmm" b ", 64(%[d])\n\t"				\
	"vmovdqu64 %%zmm" c ", 128(%[d])\n\t"			\
	"vmovdqu64 %%zmm" e ", 192(%[d])\n\t"

/*
 * The turn of a folding loop: zmm4-zmm7 (the 256 bytes just copied)
 * folded into the accumulators zmm0-zmm3, then on to the next 256
 */
#define KIWI_FOLD_TURN							\
	KIWI_FOLD("zmm0", "zmm4", "zmm8")				\
	KIWI_FOLD("zmm1", "zmm5", "zmm9")				\
	KIWI_FOLD("zmm2", "zmm6", "zmm11")				\
	KIWI_FOLD("zmm3", "zmm7", "zmm12")				\
	"add $256, %[s]\n\t"						\
	"add $256, %[d]\n\t"						\
	"sub $256, %[len]\n\t"

/*
 * The four accumulators into one, 64 bytes at a time, then its four
 * lanes into one, 16 bytes at a time, into xmm0.
 */
#define KIWI_REDUCE							\
	"vbroadcasti32x4 %[k64], %%zmm10\n\t"				\
	KIWI_FOLD("zmm0", "zmm1", "zmm8")				\
	KIWI_FOLD("zmm0", "zmm2", "zmm8")				\
	KIWI_FOLD("zmm0", "zmm3", "zmm8")				\
	"vextracti32x4 $1, %%zmm0, %%xmm1\n\t"			\
	"vextracti32x4 $2, %%zmm0, %%xmm2\n\t"			\
	"vextracti32x4 $3, %%zmm0, %%xmm3\n\t"			\
	"vmovdqu %[k16], %%xmm10\n\t"					\
	KIWI_FOLD16("xmm1")						\
	KIWI_FOLD16("xmm2")						\
	KIWI_FOLD16("xmm3")

/*
 * len: a multiple of 256, at least 256.  zmm0-zmm15 only (the kernel's
 * compiler, built without SSE, neither uses nor knows vector registers),
 * between kiwi_simd_begin() and kiwi_simd_end().
 */
static u32 kiwi_crc_copy_v512(u32 crc, u8 *d, const u8 *s, unsigned long len)
{
	u64 lo, hi;

	asm volatile(KIWI_COPY256("0", "1", "2", "3")
		     "vmovd %k[crc], %%xmm4\n\t"
		     "vpxorq %%zmm4, %%zmm0, %%zmm0\n\t"
		     "vbroadcasti32x4 %[k256], %%zmm10\n\t"
		     "add $256, %[s]\n\t"
		     "add $256, %[d]\n\t"
		     "sub $256, %[len]\n\t"
		     "jz 2f\n"
		     "1:\n\t"
		     KIWI_COPY256("4", "5", "6", "7")
		     KIWI_FOLD_TURN
		     "jnz 1b\n"
		     "2:\n\t"
		     KIWI_REDUCE
		     "vmovq %%xmm0, %[lo]\n\t"
		     "vpextrq $1, %%xmm0, %[hi]\n\t"
		     "vzeroupper"
		     : [s] "+r" (s), [d] "+r" (d), [len] "+r" (len),
		       [lo] "=r" (lo), [hi] "=r" (hi)
		     : [crc] "r" (crc), [k256] "m" (kiwi_crc_k256),
		       [k64] "m" (kiwi_crc_k64), [k16] "m" (kiwi_crc_k16)
		     : "memory", KIWI_ASM_CLOBBERS);
	return (u32)kiwi_crc_q(kiwi_crc_q(0, lo), hi);
}

static u32 kiwi_crc32c_copy_hw(u32 crc, u8 *d, const u8 *s, u32 len)
{
	/*
	 * Stores aligned to 8, loads as they come: a misaligned store that
	 * straddles two cache lines costs more than such a load.
	 */
	u32 head = -(unsigned long)d & 7;

	if (head && len >= 8) {
		crc = kiwi_crc_few(crc, d, s, head);
		d += head;
		s += head;
		len -= head;
	}
	if (len >= KIWI_CRC_V512_MIN && kiwi_crc_v512 && kiwi_simd_begin()) {
		u32 n;

		/*
		 * zmm stores aligned (d is 8-aligned already): stores that
		 * straddle cache lines cost a quarter of the speed
		 */
		head = -(unsigned long)d & 63;
		len -= head;
		for (; head; head -= 8, s += 8, d += 8) {
			u64 v = kiwi_ld64(s);

			kiwi_st64(d, v);
			crc = (u32)kiwi_crc_q(crc, v);
		}

		n = len & ~255U;
		if (n)
			crc = kiwi_crc_copy_v512(crc, d, s, n);
		kiwi_simd_end();
		d += n;
		s += n;
		len -= n;
	}
	crc = kiwi_crc_blocks(crc, &d, &s, &len, 2048, 0);
	crc = kiwi_crc_blocks(crc, &d, &s, &len, 680, 1);
	crc = kiwi_crc_blocks(crc, &d, &s, &len, 224, 2);
	crc = kiwi_crc_blocks(crc, &d, &s, &len, 96, 3);
	crc = kiwi_crc_blocks(crc, &d, &s, &len, 32, 4);
	/* under 192 bytes left: one stream */
	for (; len >= 8; len -= 8, s += 8, d += 8) {
		u64 v = kiwi_ld64(s);

		kiwi_st64(d, v);
		crc = (u32)kiwi_crc_q(crc, v);
	}
	return kiwi_crc_few(crc, d, s, len);
}

/*
 * A run: the folding carried across the pieces of one FPDU, so that a
 * payload the kernel copies a page at a time is folded as one span,
 * with one kiwi_simd_begin() and one reduction for all of it.  The four
 * accumulators take 64-byte chunks in turn (chunk j into acc[j % 4]), so
 * a piece may end at any multiple of 64; between pieces they wait in the
 * CPU's scratch, with the bytes of a chunk split between two pieces.
 * Accumulators that never took a chunk hold zeros, which the reduction
 * passes through: zero bytes ahead of a message from a zero state leave
 * its CRC as it is.
 */
struct kiwi_fold {
	u8 acc[4][64];		/* zmm0-zmm3 of the chunks so far */
	u8 part[64];		/* a chunk's bytes from the piece before */
	u32 npart;
	u32 next;		/* acc[next] takes the next chunk */
	u32 inj;		/* XORed into the next chunk: the start CRC */
	bool started;		/* a chunk was folded */
	bool scalar;		/* kiwi_crc_run_hold without AVX-512: inj runs */
	u64 runs;		/* opened on this CPU (debugfs crc_runs) */
};

KIWI_CPU_VAR(kiwi_fold, kiwi_folds);

#ifdef __KERNEL__
u64 kiwi_crc_runs(void)
{
	u64 n = 0;
	int cpu;

	for_each_possible_cpu(cpu)
		n += per_cpu_ptr(&kiwi_folds, cpu)->runs;
	return n;
}
#endif

/*
 * A run begins at a piece this long: an MSS-sized FPDU (one piece) is
 * faster through kiwi_crc32c_copy_hw() alone
 */
#define KIWI_CRC_RUN_MIN	2048

/*
 * len (a multiple of 64) bytes from s to d, folded into the accumulators
 * from acc[f->next] on: 256 bytes a turn, then up to three chunks, the
 * k-th of them into the k-th register.  d == s: fold only.
 */
static void kiwi_fold_span(struct kiwi_fold *f, u8 *d, const u8 *s,
			   unsigned long len)
{
	unsigned long blk = len & ~255UL, one = len & 255;
	u32 n = f->next;

	asm volatile("vmovdqu64 (%[a0]), %%zmm0\n\t"
		     "vmovdqu64 (%[a1]), %%zmm1\n\t"
		     "vmovdqu64 (%[a2]), %%zmm2\n\t"
		     "vmovdqu64 (%[a3]), %%zmm3\n\t"
		     "vbroadcasti32x4 %[k256], %%zmm10\n\t"
		     "vmovd %k[inj], %%xmm13\n\t"
		     "test %[len], %[len]\n\t"
		     "jz 2f\n"
		     "1:\n\t"
		     KIWI_COPY256("4", "5", "6", "7")
		     "vpxorq %%zmm13, %%zmm4, %%zmm4\n\t"
		     "vpxorq %%zmm13, %%zmm13, %%zmm13\n\t"
		     KIWI_FOLD_TURN
		     "jnz 1b\n"
		     "2:\n\t"
		     "test %[one], %[one]\n\t"
		     "jz 3f\n\t"
		     "vmovdqu64 (%[s]), %%zmm4\n\t"
		     "vmovdqu64 %%zmm4, (%[d])\n\t"
		     "vpxorq %%zmm13, %%zmm4, %%zmm4\n\t"
		     KIWI_FOLD("zmm0", "zmm4", "zmm8")
		     "cmp $64, %[one]\n\t"
		     "je 3f\n\t"
		     "vmovdqu64 64(%[s]), %%zmm5\n\t"
		     "vmovdqu64 %%zmm5, 64(%[d])\n\t"
		     KIWI_FOLD("zmm1", "zmm5", "zmm9")
		     "cmp $128, %[one]\n\t"
		     "je 3f\n\t"
		     "vmovdqu64 128(%[s]), %%zmm6\n\t"
		     "vmovdqu64 %%zmm6, 128(%[d])\n\t"
		     KIWI_FOLD("zmm2", "zmm6", "zmm11")
		     "3:\n\t"
		     "vmovdqu64 %%zmm0, (%[a0])\n\t"
		     "vmovdqu64 %%zmm1, (%[a1])\n\t"
		     "vmovdqu64 %%zmm2, (%[a2])\n\t"
		     "vmovdqu64 %%zmm3, (%[a3])\n\t"
		     "vzeroupper"
		     : [s] "+r" (s), [d] "+r" (d), [len] "+r" (blk)
		     : [one] "r" (one), [a0] "r" (f->acc[n]),
		       [a1] "r" (f->acc[(n + 1) & 3]),
		       [a2] "r" (f->acc[(n + 2) & 3]),
		       [a3] "r" (f->acc[(n + 3) & 3]),
		       [inj] "r" (f->inj), [k256] "m" (kiwi_crc_k256)
		     : "memory", KIWI_ASM_CLOBBERS);
	f->next = (n + one / 64) & 3;
	f->inj = 0;
	f->started = true;
}

/* n bytes into the run: copied now, folded a whole chunk at a time */
static void kiwi_fold_copy(struct kiwi_fold *f, u8 *d, const u8 *s, u32 n)
{
	u32 m;

	if (f->scalar) {
		f->inj = kiwi_crc32c_copy_hw(f->inj, d, s, n);
		return;
	}
	if (f->npart) {
		m = sizeof(f->part) - f->npart;
		if (m > n)
			m = n;
		memcpy(d, s, m);
		memcpy(f->part + f->npart, s, m);
		f->npart += m;
		if (f->npart < sizeof(f->part))
			return;
		kiwi_fold_span(f, f->part, f->part, sizeof(f->part));
		f->npart = 0;
		d += m;
		s += m;
		n -= m;
	}
	m = n & ~63U;
	if (m)
		kiwi_fold_span(f, d, s, m);
	if (n - m) {
		memcpy(d + m, s + m, n - m);
		memcpy(f->part, s + m, n - m);
		f->npart = n - m;
	}
}

/*
 * The run's CRC: its chunks reduced (the start CRC was XORed into the
 * first), else crc as it was; then the bytes of no whole chunk.
 */
static u32 kiwi_fold_end(struct kiwi_fold *f, u32 crc)
{
	u64 lo, hi;

	if (f->scalar)
		return f->inj;
	if (f->started) {
		asm volatile("vmovdqu64 (%[a0]), %%zmm0\n\t"
			     "vmovdqu64 (%[a1]), %%zmm1\n\t"
			     "vmovdqu64 (%[a2]), %%zmm2\n\t"
			     "vmovdqu64 (%[a3]), %%zmm3\n\t"
			     KIWI_REDUCE
			     "vmovq %%xmm0, %[lo]\n\t"
			     "vpextrq $1, %%xmm0, %[hi]\n\t"
			     "vzeroupper"
			     : [lo] "=r" (lo), [hi] "=r" (hi)
			     : [a0] "r" (f->acc[f->next]),
			       [a1] "r" (f->acc[(f->next + 1) & 3]),
			       [a2] "r" (f->acc[(f->next + 2) & 3]),
			       [a3] "r" (f->acc[(f->next + 3) & 3]),
			       [k64] "m" (kiwi_crc_k64),
			       [k16] "m" (kiwi_crc_k16)
			     : "memory", KIWI_ASM_CLOBBERS);
		crc = (u32)kiwi_crc_q(kiwi_crc_q(0, lo), hi);
	}
	/* onto itself: the copy's CRC path without another */
	return kiwi_crc32c_copy_hw(crc, f->part, f->part, f->npart);
}

#endif /* __x86_64__ */

/*
 * The shift tables, from the plain CRC over zeros (no algebra to get
 * wrong): the CRC without inversion is linear in its state, so the state
 * v << 4i after L zero bytes is the XOR of what each of its bits becomes.
 */
kiwi_user_init void kiwi_crc_init(void)
{
#ifdef __x86_64__
	static const u8 zero[64];
	unsigned int b, i, v, k, n;
	u32 bit[32], c;

	for (b = 0; b < KIWI_CRC_NBLK; b++) {
		for (k = 0; k < 32; k++) {
			c = 1U << k;
			for (n = kiwi_crc_blk[b]; n > sizeof(zero); n -= sizeof(zero))
				c = crc32c(c, zero, sizeof(zero));
			bit[k] = crc32c(c, zero, n);
		}
		for (i = 0; i < 8; i++)
			for (v = 0; v < 16; v++) {
				for (c = 0, k = 0; k < 4; k++)
					if (v & 1U << k)
						c ^= bit[4 * i + k];
				kiwi_crc_shift[b][i][v] = c;
			}
	}
#endif
}

u32 kiwi_crc32c_copy_run(u32 crc, void *dst, const void *src, u32 len,
			 bool *fold)
{
#ifdef __x86_64__
	u8 *d = dst;
	const u8 *s = src;
	u32 head;

	if (*fold) {
		kiwi_fold_copy(kiwi_cpu_ptr(kiwi_folds), d, s, len);
		return crc;
	}
	if (len >= KIWI_CRC_RUN_MIN && !kiwi_crc_soft &&
	    kiwi_cpu_has_crc32() && (kiwi_crc_v512 || kiwi_crc_run_hold) &&
	    kiwi_simd_begin()) {
		struct kiwi_fold *f = kiwi_cpu_ptr(kiwi_folds);

		/*
		 * Chunks in step with the destination's cache lines: its
		 * pages are whole, so the pieces that follow stay in step
		 */
		head = -(unsigned long)d & 63;
		crc = kiwi_crc32c_copy_hw(crc, d, s, head);
		memset(f->acc, 0, sizeof(f->acc));
		f->npart = 0;
		f->next = 0;
		f->inj = crc;
		f->started = false;
		f->scalar = !kiwi_crc_v512;
		f->runs++;
		*fold = true;
		kiwi_fold_copy(f, d + head, s + head, len - head);
		return crc;
	}
#endif
	return kiwi_crc32c_copy(crc, dst, src, len);
}

u32 kiwi_crc_run_end(u32 crc, bool *fold)
{
	if (!*fold)
		return crc;
	*fold = false;
#ifdef __x86_64__
	crc = kiwi_fold_end(kiwi_cpu_ptr(kiwi_folds), crc);
	kiwi_simd_end();
#endif
	return crc;
}

#if defined(__KERNEL__) && !defined(__x86_64__)
u64 kiwi_crc_runs(void)
{
	return 0;
}
#endif

u32 kiwi_crc32c_copy(u32 crc, void *dst, const void *src, u32 len)
{
#ifdef __x86_64__
	if (!kiwi_crc_soft && kiwi_cpu_has_crc32())
		return kiwi_crc32c_copy_hw(crc, dst, src, len);
#endif
	memcpy(dst, src, len);
	return crc32c(crc, dst, len);
}
