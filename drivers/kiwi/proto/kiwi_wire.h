/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * iWARP wire formats: MPA (RFC 5044, RFC 6581), DDP (RFC 5041) and
 * RDMAP (RFC 5040). Layouts only; the code that reads and writes them is
 * in mpa.c, fpdu.c and rdmap.c.
 *
 * Every FPDU header struct starts with the 16-bit MPA ULPDU Length, so
 * all 32- and 64-bit fields are naturally aligned and no struct needs to
 * be packed.
 */
#ifndef KIWI_WIRE_H
#define KIWI_WIRE_H

#include "kiwi_shim.h"

/* MPA Request/Reply frame (RFC 5044 section 7.1, RFC 6581 section 9) */
#define KIWI_MPA_KEY_LEN	16
#define KIWI_MPA_KEY_REQ	"MPA ID Req Frame"
#define KIWI_MPA_KEY_REP	"MPA ID Rep Frame"
#define KIWI_MPA_PD_MAX		512

/* bits of kiwi_mpa_rr.bits, host order */
#define KIWI_MPA_M		0x8000	/* sender wants Markers */
#define KIWI_MPA_C		0x4000	/* sender wants CRC */
#define KIWI_MPA_R		0x2000	/* reject (Reply only) */
#define KIWI_MPA_H		0x1000	/* enhanced setup (RFC 6581) */
/*
 * A reserved bit (RFC 5044: sent as 0, ignored): siw's experimental
 * "GSO" flag, saying the sender takes FPDUs longer than one MSS
 */
#define KIWI_MPA_G		0x0800
#define KIWI_MPA_REV_MASK	0x00ff

struct kiwi_mpa_rr {
	u8 key[KIWI_MPA_KEY_LEN];
	__be16 bits;
	__be16 pd_len;
};

/*
 * RFC 6581 IRD/ORD word, first four bytes of the private data when H is
 * set: |A|B| IRD (14) |C|D| ORD (14)|. A is peer-to-peer, B a zero-length
 * Send RTR, C a zero-length RDMA Write RTR, D a zero-length RDMA Read RTR.
 */
#define KIWI_MPA_V2_P2P		0x8000	/* in ird */
#define KIWI_MPA_V2_RTR_SEND	0x4000	/* in ird */
#define KIWI_MPA_V2_RTR_WRITE	0x8000	/* in ord */
#define KIWI_MPA_V2_RTR_READ	0x4000	/* in ord */
#define KIWI_MPA_V2_MASK	0x3fff

struct kiwi_mpa_v2 {
	__be16 ird;
	__be16 ord;
};

/* MPA Marker (RFC 5044 section 5): 16 reserved bits, then FPDUPTR */
#define KIWI_MPA_MARKER_SPACING	512
#define KIWI_MPA_MARKER_LEN	4

#define KIWI_MPA_LEN_SIZE	2	/* ULPDU Length field */
#define KIWI_MPA_CRC_SIZE	4

/* DDP/RDMAP control word (RFC 5041 4.2/4.3, RFC 5040 4.2), host order */
#define KIWI_DDP_T		0x8000
#define KIWI_DDP_L		0x4000
#define KIWI_DDP_DV_SHIFT	8
#define KIWI_DDP_DV_MASK	0x0300
#define KIWI_RDMAP_RV_SHIFT	6
#define KIWI_RDMAP_RV_MASK	0x00c0
#define KIWI_RDMAP_OP_MASK	0x000f

#define KIWI_DDP_VERSION	1
#define KIWI_RDMAP_VERSION	1

struct kiwi_wire_ctrl {
	__be16 mpa_len;
	__be16 ctrl;
};

/* tagged buffer model: Write, Read Response */
struct kiwi_wire_tagged {
	struct kiwi_wire_ctrl c;
	__be32 stag;
	__be64 to;
};

/* untagged buffer model: Sends, Read Request, Terminate */
struct kiwi_wire_untagged {
	struct kiwi_wire_ctrl c;
	__be32 rsvd;		/* Invalidate STag for Send with Invalidate */
	__be32 qn;
	__be32 msn;
	__be32 mo;
};

/* RDMA Read Request (RFC 5040 section 4.4) */
struct kiwi_wire_rreq {
	struct kiwi_wire_untagged u;
	__be32 sink_stag;
	__be64 sink_to;
	__be32 size;
	__be32 src_stag;
	__be64 src_to;
};

/* Terminate (RFC 5040 section 4.8): control word, copied headers follow */
struct kiwi_wire_term {
	struct kiwi_wire_untagged u;
	__be32 term;
};

/* Terminate control word, host order */
#define KIWI_TERM_LAYER_SHIFT	28
#define KIWI_TERM_ETYPE_SHIFT	24
#define KIWI_TERM_ECODE_SHIFT	16
#define KIWI_TERM_M		0x00008000	/* DDP Segment Length valid */
#define KIWI_TERM_D		0x00004000	/* DDP header included */
#define KIWI_TERM_R		0x00002000	/* RDMAP header included */

/* sizes on the wire, counted from the DDP control field (ULPDU bytes) */
#define KIWI_HDR_TAGGED		14
#define KIWI_HDR_UNTAGGED	18
#define KIWI_HDR_RREQ		46
#define KIWI_HDR_TERM		22
#define KIWI_RREQ_BODY		28	/* Read Request after the DDP header */
/* Terminate: control + DDP Segment Length + DDP header + RDMAP header */
#define KIWI_TERM_ULPDU_MAX	(KIWI_HDR_TERM + 2 + KIWI_HDR_UNTAGGED + \
				 KIWI_RREQ_BODY)
/* largest header the receiver holds, with the ULPDU Length field */
#define KIWI_WIRE_HDR_MAX	(KIWI_MPA_LEN_SIZE + KIWI_TERM_ULPDU_MAX)

union kiwi_wire_hdr {
	struct kiwi_wire_ctrl c;
	struct kiwi_wire_tagged t;
	struct kiwi_wire_untagged u;
	struct kiwi_wire_rreq rreq;
	struct kiwi_wire_term term;
	u8 raw[KIWI_WIRE_HDR_MAX];
	u64 align;
};

#endif /* KIWI_WIRE_H */
