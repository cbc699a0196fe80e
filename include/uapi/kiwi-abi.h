/* SPDX-License-Identifier: ((GPL-2.0 WITH Linux-syscall-note) OR BSD-2-Clause) */
/*
 * kiwi kernel <-> provider ABI.
 *
 * The one header shared by kiwi.ko and libkiwi-rdmav34.so.  Every structure
 * here is laid out with explicit padding and fixed-size types so that it is
 * identical for 32- and 64-bit user space.  Any incompatible change bumps
 * KIWI_ABI_VERSION; the provider refuses a kernel whose version differs.
 *
 * Shared rings: the SQ, RQ, SRQ and CQ are arrays of fixed-size slots in
 * memory allocated by the kernel and mmap()ed by the provider with the key
 * returned at creation.  Each ring mapping is `num` slots followed by one
 * control block (struct kiwi_*_ctrl) at offset num * slot size.  Slot
 * ownership is the KIWI_WQE_VALID / KIWI_CQE_VALID bit in the slot's flags:
 * the producer fills a slot, issues a write barrier, then sets the bit; the
 * consumer reads the bit, issues a read barrier, copies the slot, then clears
 * the bit.  The kernel copies every user-written slot once (READ_ONCE) and
 * validates the copy, so user space can only ever hurt itself.
 */
#ifndef KIWI_ABI_H
#define KIWI_ABI_H

#include <linux/types.h>

#define KIWI_ABI_VERSION	1

/*
 * Our own driver id (RDMA_NLDEV_ATTR_UVERBS_DRIVER_ID), far from the kernel's
 * small enum rdma_driver_id values so that no upstream driver collides; the
 * value spells "kiwi" in ASCII.
 */
#define KIWI_DRIVER_ID		0x6b697769

#define KIWI_MAX_SGE		6	/* per SQ and RQ work request */
#define KIWI_MAX_INLINE		96	/* bytes; inline data fills the SGE area */

/*
 * Device limits, as reported by ibv_query_device()/ibv_query_port() and
 * enforced by kiwi.ko.  Documentation/limits.md gives the reason for each.
 * Ring sizes are rounded up to a power of two, so each *_WR/CQE limit is a
 * power of two and a request within the limit never rounds above it.
 */
#define KIWI_MAX_PD		16384
#define KIWI_MAX_CQ		16384
#define KIWI_MAX_CQE		1048576	/* slots per CQ */
#define KIWI_MAX_QP		16384	/* QP numbers are 1..KIWI_MAX_QP */
#define KIWI_MAX_QP_WR		16384	/* slots per SQ and per RQ */
#define KIWI_MAX_SRQ		1024
#define KIWI_MAX_SRQ_WR		16384	/* slots per SRQ */
#define KIWI_MAX_MR		65536	/* STag indexes are 1..KIWI_MAX_MR */
#define KIWI_MAX_MR_SIZE	(1ULL << 40)	/* bytes per MR */
#define KIWI_MAX_FRMR_PAGES	1024	/* alloc_mr max_num_sg */
#define KIWI_MAX_SGE_RD		1	/* local SGEs of an RDMA Read */
#define KIWI_MAX_ORD		32	/* outstanding Reads we initiate */
#define KIWI_MAX_IRD		32	/* outstanding Reads we answer */
#define KIWI_MAX_MSG_SIZE	0x80000000U	/* bytes per message */
#define KIWI_GID_TBL_LEN	1

/* No key: the QP has no such ring (e.g. an RQ replaced by an SRQ). */
#define KIWI_INVAL_KEY		(~0ULL)

/* Work request opcodes as written into SQ slots. */
enum kiwi_opcode {
	KIWI_OP_WRITE		= 0,
	KIWI_OP_READ		= 1,
	KIWI_OP_READ_LOCAL_INV	= 2,
	KIWI_OP_SEND		= 3,
	KIWI_OP_SEND_INV	= 4,
	KIWI_OP_REG_MR		= 5,	/* kernel consumers only */
	KIWI_OP_LOCAL_INV	= 6,
	KIWI_OP_RECEIVE		= 7,	/* in CQEs only */
	KIWI_OP_MAX
};

/* flags of SQ and RQ slots */
#define KIWI_WQE_VALID		(1 << 0)
#define KIWI_WQE_SIGNALED	(1 << 1)
#define KIWI_WQE_SOLICITED	(1 << 2)
#define KIWI_WQE_READ_FENCE	(1 << 3)	/* IB_SEND_FENCE */
#define KIWI_WQE_LOCAL_FENCE	(1 << 4)
#define KIWI_WQE_INLINE		(1 << 5)

struct kiwi_sge {
	__aligned_u64 addr;
	__u32 length;
	__u32 lkey;
};

/* One SQ slot: 128 bytes. */
struct kiwi_sqe {
	__aligned_u64 id;		/* wr_id */
	__u16 flags;			/* KIWI_WQE_* */
	__u8 num_sge;
	__u8 opcode;			/* enum kiwi_opcode */
	__u32 rkey;			/* Write/Read: remote STag */
	__aligned_u64 raddr;		/* Write/Read: remote tagged offset */
	__u32 inval_stag;		/* SEND_INV, LOCAL_INV, READ_LOCAL_INV */
	__u32 inline_len;		/* bytes in inline_data (KIWI_WQE_INLINE) */
	union {
		struct kiwi_sge sge[KIWI_MAX_SGE];
		__u8 inline_data[KIWI_MAX_INLINE];
		struct {		/* KIWI_OP_REG_MR, kernel QPs only */
			__aligned_u64 mr;
			__u32 key;
			__u32 access;
		} reg;
	};
};

/* One RQ or SRQ slot: 128 bytes. */
struct kiwi_rqe {
	__aligned_u64 id;		/* wr_id */
	__u16 flags;			/* KIWI_WQE_VALID */
	__u8 num_sge;
	__u8 reserved0;
	__u32 reserved1;
	struct kiwi_sge sge[KIWI_MAX_SGE];
	__u8 reserved2[16];
};

/* flags of CQ slots */
#define KIWI_CQE_VALID		(1 << 0)
#define KIWI_CQE_SOLICITED	(1 << 1)
#define KIWI_CQE_INVALIDATED	(1 << 2)	/* inval_stag holds the STag */

/* One CQ slot: 32 bytes. */
struct kiwi_cqe {
	__aligned_u64 id;		/* wr_id */
	__u8 flags;			/* KIWI_CQE_* */
	__u8 opcode;			/* enum kiwi_opcode */
	__u8 status;			/* enum ib_wc_status numbering */
	__u8 reserved0;
	__u32 bytes;			/* byte_len */
	__u32 qp_id;
	__u32 inval_stag;
	__aligned_u64 reserved1;
};

/* CQ arming, written by the provider into kiwi_cq_ctrl.notify */
#define KIWI_NOTIFY_NONE	0
#define KIWI_NOTIFY_SOLICITED	(1 << 0)
#define KIWI_NOTIFY_NEXT	(1 << 1)

/*
 * Control blocks, each 64 bytes, placed after the last slot of a ring.
 *
 * alive (kernel -> provider), the last word of every control block: a
 * random non-zero value the kernel writes when it creates a user ring and
 * never changes.  When the device goes away (rdma link del, netdev
 * deletion, rmmod) ib_uverbs replaces every page of the process's ring
 * mappings by one zeroed page of its own, the same for all rings and
 * offsets, into which the provider's own stores then land.  A provider
 * that remembers the word at mmap() time and finds it changed knows the
 * ring is gone: it posts nothing (EIO) and returns no completion (nothing
 * it reads there came from the kernel).  Added within ABI version 1:
 * the word used to be reserved and 0, which a provider takes as "no
 * liveness word" (an older kernel), and an older provider ignores it.
 */
struct kiwi_cq_ctrl {
	__u32 notify;			/* KIWI_NOTIFY_*, provider -> kernel */
	__u32 reserved[14];
	__u32 alive;
};

/*
 * engine_busy (kernel -> provider): non-zero while kiwi.ko's send engine
 * is certain to look at the SQ again without being told, so a post needs
 * no doorbell.  Protocol, without a lost wakeup: the provider publishes its
 * slots (release store of VALID), issues a full barrier, then loads
 * engine_busy and rings the doorbell (POST_SEND without WRs) only if it
 * reads 0.  The kernel, whenever its engine stops looking, stores 0, issues
 * a full barrier and re-reads the next slot's VALID bit, resuming if set.
 * Whenever posting needs the kernel's attention (QP not in RTS, flushes in
 * ERR, Terminate, teardown) the word is 0.
 *
 * Added within ABI version 1: the word used to be reserved and always 0,
 * so a new provider on an older kernel always rings (as before), and an
 * older provider ignores the word and always rings; both are correct.
 */
struct kiwi_sq_ctrl {
	__u32 engine_busy;
	__u32 reserved[14];
	__u32 alive;
};

/*
 * kiwi_rq_ctrl.flush, kernel -> provider: 1 once the QP is in ERR and its
 * RQ has been flushed.  Receives need no doorbell while the QP works (the
 * kernel takes them when a message arrives); from then on they must reach
 * the kernel to complete with IB_WC_WR_FLUSH_ERR, so the provider publishes
 * its slots, issues a full fence, reads this word and, if set, rings with
 * an empty POST_RECV.  The kernel sets the word, issues a full barrier and
 * then flushes, so each side sees the other.  A word that was reserved (0):
 * an older provider ignores it and an older kernel never sets it.
 */
struct kiwi_rq_ctrl {
	__u32 flush;
	__u32 reserved[14];
	__u32 alive;
};

/* Where `alive' lies in every control block. */
#define KIWI_CTRL_ALIVE_OFFSET	60

/*
 * The SQ doorbell as a driver method of ib_uverbs' ioctl interface
 * (RDMA_VERBS_IOCTL on the command fd): object UVERBS_OBJECT_QP, method
 * KIWI_IB_METHOD_QP_DOORBELL, one attribute, the QP's handle.  It does
 * what POST_SEND without work requests does, without the per-call buffer
 * the legacy command allocates.  Added within ABI version 1: an older
 * kiwi.ko answers EPROTONOSUPPORT, and the provider then rings with
 * POST_SEND as before.  IDs in the driver's namespace (UVERBS_ID_NS_SHIFT
 * of <rdma/ib_user_ioctl_cmds.h>, which is 12).
 */
enum kiwi_ib_qp_methods {
	KIWI_IB_METHOD_QP_DOORBELL = 1U << 12,
};

enum kiwi_ib_doorbell_attrs {
	KIWI_IB_ATTR_DOORBELL_QP = 1U << 12,
};

/* ib_uverbs driver data: requests (provider -> kernel) and responses. */

struct kiwi_uresp_alloc_ctx {
	__u32 abi_version;		/* KIWI_ABI_VERSION of the kernel */
	__u32 dev_id;
	__u32 max_sge;
	__u32 max_inline;
};

struct kiwi_uresp_create_cq {
	__aligned_u64 cq_key;		/* mmap offset of the CQ ring */
	__u32 cq_id;
	__u32 num_cqe;			/* slots in the ring */
};

struct kiwi_uresp_create_qp {
	__aligned_u64 sq_key;		/* mmap offset of the SQ ring */
	__aligned_u64 rq_key;		/* KIWI_INVAL_KEY with an SRQ */
	__u32 qp_id;
	__u32 num_sqe;
	__u32 num_rqe;
	__u32 reserved;
};

struct kiwi_uresp_create_srq {
	__aligned_u64 srq_key;		/* mmap offset of the SRQ ring */
	__u32 num_rqe;
	__u32 reserved;
};

#endif /* KIWI_ABI_H */
