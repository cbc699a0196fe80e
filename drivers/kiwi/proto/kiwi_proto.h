/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * kiwi protocol core: MPA connection setup, FPDU framing, DDP and RDMAP
 * headers, Terminate codes. Pure functions and state machines over plain
 * buffers, shared by kiwi.ko and the user-space tests and fuzzers.
 * Documentation/protocol.md describes how the data path drives them.
 */
#ifndef KIWI_PROTO_H
#define KIWI_PROTO_H

#include "kiwi_wire.h"

/*
 * Copy len bytes from src to dst and return crc32c(crc, src, len) (the
 * kernel's convention: no inversion), in one pass where the CPU has a
 * CRC instruction (crc.c).  kiwi_crc_soft forces copy-then-crc32c().
 */
u32 kiwi_crc32c_copy(u32 crc, void *dst, const void *src, u32 len);
/* its tables; the kernel calls it at load, user space before main() */
void kiwi_crc_init(void);
extern bool kiwi_crc_soft;
/*
 * Long copies fold the CRC in zmm registers (AVX-512 with VPCLMULQDQ);
 * whoever sets it has checked the CPU (and, in the kernel, the OS).
 */
extern bool kiwi_crc_v512;
/*
 * The same over the pieces of one stream (an FPDU's payload, copied a
 * page at a time): a long piece opens a run (*fold true), which holds
 * the CPU's vector registers and carries the CRC's folding from piece to
 * piece, so the value returned is complete only after
 * kiwi_crc_run_end().  Nothing may sleep while a run is open.
 */
u32 kiwi_crc32c_copy_run(u32 crc, void *dst, const void *src, u32 len,
			 bool *fold);
u32 kiwi_crc_run_end(u32 crc, bool *fold);
/*
 * Runs hold the vector registers even where the CPU has no AVX-512 (the
 * copy then runs on the crc32 instruction): the tests' emulated CPU has
 * none, and this way they still check that nothing sleeps in a run.
 */
extern bool kiwi_crc_run_hold;
/* runs opened so far, on all CPUs (the kernel's debugfs crc_runs) */
u64 kiwi_crc_runs(void);

/*
 * Every validation failure the core (or its caller) can detect. The
 * Terminate layer, type and code and the errno for each live in one
 * table, kiwi_err_table in rdmap.c.
 */
enum kiwi_err {
	KIWI_OK = 0,
	/* MPA (LLP layer) */
	KIWI_ERR_MPA_CRC,		/* FPDU CRC mismatch */
	KIWI_ERR_MPA_MARKER,		/* Marker does not point at the FPDU */
	KIWI_ERR_MPA_KEY,		/* Request/Reply key wrong */
	KIWI_ERR_MPA_PDLEN,		/* private data above 512 bytes */
	KIWI_ERR_MPA_REVISION,		/* revision not 1 or 2 */
	KIWI_ERR_MPA_REQREP,		/* malformed Request/Reply */
	KIWI_ERR_MPA_NOCRC,		/* policy requires CRC, peer has none */
	KIWI_ERR_MPA_REJECTED,		/* peer set the R flag */
	KIWI_ERR_MPA_LOCAL,		/* local catastrophic */
	KIWI_ERR_MPA_IRD,		/* insufficient IRD */
	KIWI_ERR_MPA_RTR,		/* no matching RTR */
	/* DDP tagged buffer errors */
	KIWI_ERR_DDP_T_STAG,
	KIWI_ERR_DDP_T_BOUNDS,
	KIWI_ERR_DDP_T_STAG_STREAM,
	KIWI_ERR_DDP_T_TO_WRAP,
	KIWI_ERR_DDP_T_VERSION,
	/* DDP untagged buffer errors */
	KIWI_ERR_DDP_U_QN,
	KIWI_ERR_DDP_U_MSN_NOBUF,
	KIWI_ERR_DDP_U_MSN_RANGE,
	KIWI_ERR_DDP_U_MO,
	KIWI_ERR_DDP_U_TOOLONG,
	KIWI_ERR_DDP_U_VERSION,
	KIWI_ERR_DDP_LOCAL,
	/* RDMAP */
	KIWI_ERR_RDMAP_LOCAL,
	KIWI_ERR_RDMAP_STAG,
	KIWI_ERR_RDMAP_BOUNDS,
	KIWI_ERR_RDMAP_ACCESS,
	KIWI_ERR_RDMAP_STAG_STREAM,
	KIWI_ERR_RDMAP_TO_WRAP,
	KIWI_ERR_RDMAP_PROT_INVALIDATE,
	KIWI_ERR_RDMAP_PROT_UNSPEC,
	KIWI_ERR_RDMAP_VERSION,
	KIWI_ERR_RDMAP_OPCODE,
	KIWI_ERR_RDMAP_STREAM,
	KIWI_ERR_RDMAP_GLOBAL,
	KIWI_ERR_RDMAP_INVALIDATE,
	KIWI_ERR_RDMAP_UNSPEC,
	KIWI_ERR_MAX
};

/* Terminate layers and error types (RFC 5040 4.8, RFC 5041 7, RFC 5044) */
#define KIWI_LAYER_RDMAP	0
#define KIWI_LAYER_DDP		1
#define KIWI_LAYER_LLP		2

/* which offending headers a Terminate for this error carries */
#define KIWI_TERM_HDR_NONE	0
#define KIWI_TERM_HDR_DDP	1	/* M and D: segment length, DDP hdr */
#define KIWI_TERM_HDR_RDMAP	2	/* also R for a Read Request */

struct kiwi_err_desc {
	u8 layer;
	u8 etype;
	u8 ecode;
	u8 hdrs;	/* KIWI_TERM_HDR_* */
	bool term;	/* false: no Terminate (close or MPA reject) */
	short errnum;	/* positive errno for the caller to report */
	const char *name;
};

const struct kiwi_err_desc *kiwi_err_desc(enum kiwi_err err);

/* RDMAP opcodes (RFC 5040 section 4.2) */
enum kiwi_rdmap_op {
	KIWI_RDMAP_WRITE = 0,
	KIWI_RDMAP_READ_REQ = 1,
	KIWI_RDMAP_READ_RESP = 2,
	KIWI_RDMAP_SEND = 3,
	KIWI_RDMAP_SEND_INV = 4,
	KIWI_RDMAP_SEND_SE = 5,
	KIWI_RDMAP_SEND_SE_INV = 6,
	KIWI_RDMAP_TERMINATE = 7,
	KIWI_RDMAP_MAX = 8
};

/* untagged queues (RFC 5040 section 5.1) */
#define KIWI_QN_SEND	0
#define KIWI_QN_RREQ	1
#define KIWI_QN_TERM	2
#define KIWI_QN_MAX	3

struct kiwi_term_info {
	u8 layer;
	u8 etype;
	u8 ecode;
	bool m;			/* seg_len valid */
	bool d;			/* ddp_hdr valid */
	bool r;			/* rdma_hdr valid */
	u16 seg_len;		/* DDP Segment Length of the offending segment */
	u8 ddp_hdr_len;		/* KIWI_HDR_TAGGED or KIWI_HDR_UNTAGGED */
	u8 ddp_hdr[KIWI_HDR_UNTAGGED];
	u8 rdma_hdr[KIWI_RREQ_BODY];
};

/* A DDP segment header with its RDMAP header, decoded, host order. */
struct kiwi_hdr {
	u8 opcode;		/* enum kiwi_rdmap_op */
	u8 dv;			/* DDP version as sent/received */
	u8 rv;			/* RDMAP version as sent/received */
	bool tagged;
	bool last;
	/* tagged: Write, Read Response */
	u32 stag;
	u64 to;
	/* untagged: Sends, Read Request, Terminate */
	u32 qn;
	u32 msn;
	u32 mo;
	u32 inval_stag;		/* Send with Invalidate */
	/* Read Request */
	u32 sink_stag;
	u64 sink_to;
	u32 read_size;
	u32 src_stag;
	u64 src_to;
	/* Terminate */
	struct kiwi_term_info term;
};

void kiwi_hdr_init(struct kiwi_hdr *h, enum kiwi_rdmap_op op);
/* bytes of the DDP/RDMAP header for an opcode (0: not a valid opcode) */
u32 kiwi_hdr_len(const struct kiwi_hdr *h);
/*
 * Encode h as an FPDU header: ULPDU Length (hdr + payload_len) then the
 * DDP/RDMAP header. Returns the bytes written or -EINVAL/-EMSGSIZE/-ENOSPC.
 */
int kiwi_hdr_encode(const struct kiwi_hdr *h, u32 payload_len,
		    u8 *buf, u32 cap);
/* Build a Terminate for err from the offending FPDU header (may be NULL) */
void kiwi_term_build(struct kiwi_hdr *h, enum kiwi_err err,
		     const u8 *bad_fpdu_hdr, u32 bad_len, u32 msn);

/* Receive-side DDP state: next MSN and message offset per untagged queue */
struct kiwi_rxq {
	u32 msn;		/* MSN of the message in progress or next */
	u32 mo;			/* next expected message offset */
	u8 opcode;		/* opcode of the message in progress */
	bool open;		/* a message is in progress (no L yet) */
};

/*
 * Validate a decoded header against the protocol and the untagged queue
 * state, and on success advance that state. The caller still checks what
 * needs the QP: STags, receive buffers, IRD.
 */
enum kiwi_err kiwi_ddp_check(struct kiwi_rxq *qs, const struct kiwi_hdr *h,
			     u32 payload_len);
/*
 * Receive-side decoding in two steps, as bytes arrive: from the first
 * four bytes (ULPDU Length and control word) the full header size, then
 * the fields. Both reject what cannot be parsed with the Terminate error.
 */
enum kiwi_err kiwi_hdr_need(const union kiwi_wire_hdr *w, u32 *need);
enum kiwi_err kiwi_hdr_decode(struct kiwi_hdr *h,
			      const union kiwi_wire_hdr *w, u32 have);

/* ---- FPDU receive: incremental stream parser ---- */

enum kiwi_rx_event_type {
	KIWI_RX_MORE,	/* chunk consumed, feed more */
	KIWI_RX_HDR,	/* header parsed and valid: ev.hdr, ev.payload_len */
	KIWI_RX_DATA,	/* payload at buf[ev.off .. ev.off + ev.len) */
	KIWI_RX_DONE,	/* trailer read, CRC checked: FPDU complete */
	KIWI_RX_ERROR,	/* ev.err; the stream is dead */
};

struct kiwi_rx_event {
	enum kiwi_rx_event_type type;
	enum kiwi_err err;
	const struct kiwi_hdr *hdr;
	u32 payload_len;
	u32 off;
	u32 len;
};

enum kiwi_rx_state {
	KIWI_RXS_HDR,
	KIWI_RXS_DATA,
	KIWI_RXS_TRAILER,
	KIWI_RXS_DEAD,
};

struct kiwi_rx {
	union kiwi_wire_hdr wire;	/* header bytes as received */
	struct kiwi_hdr hdr;
	struct kiwi_rxq q[KIWI_QN_MAX];
	bool crc_on;
	bool markers;
	u8 state;
	u8 mk[KIWI_MPA_MARKER_LEN];
	u8 trl[8];
	u32 pos;		/* FPDU stream position of the next byte */
	u32 len_pos;		/* position of this FPDU's ULPDU Length */
	u32 crc;		/* running crc32c (kernel convention) */
	bool fold;		/* a CRC run is open (kiwi_crc32c_copy_run()) */
	u32 hdr_have;
	u32 hdr_need;
	u32 payload_left;
	u32 trl_have;
	u32 trl_need;
	u32 ulpdu_len;
	bool lead_marker;	/* FPDU began with a Marker */
	enum kiwi_err err;
};

struct kiwi_rx_cfg {
	bool crc;	/* CRC negotiated */
	bool markers;	/* the peer inserts Markers into what we receive */
	u32 pos;	/* stream position of the first byte (0 after MPA) */
};

void kiwi_rx_init(struct kiwi_rx *rx, const struct kiwi_rx_cfg *cfg);
/*
 * Feed a chunk. Returns how many bytes were consumed (less than len when
 * an event other than MORE is returned) and describes one event in ev.
 * After a DATA event the caller must account the span in the CRC
 * (kiwi_rx_copy_data() to place it, kiwi_rx_crc_data() when it goes
 * nowhere) before the next call.
 */
u32 kiwi_rx_feed(struct kiwi_rx *rx, const u8 *buf, u32 len,
		 struct kiwi_rx_event *ev);

/*
 * The FPDU's CRC complete, its run (if any) closed: before the CRC is
 * read, and before the caller may sleep or leave its softirq.
 */
static inline void kiwi_rx_run_end(struct kiwi_rx *rx)
{
	if (rx->fold)
		rx->crc = kiwi_crc_run_end(rx->crc, &rx->fold);
}

static inline void kiwi_rx_crc_data(struct kiwi_rx *rx, const void *p,
				    u32 len)
{
	if (rx->crc_on) {
		kiwi_rx_run_end(rx);
		rx->crc = crc32c(rx->crc, p, len);
	}
}

/* place a payload span at dst, with its CRC in the same pass */
static inline void kiwi_rx_copy_data(struct kiwi_rx *rx, void *dst,
				     const void *src, u32 len)
{
	if (rx->crc_on)
		rx->crc = kiwi_crc32c_copy_run(rx->crc, dst, src, len,
					       &rx->fold);
	else
		memcpy(dst, src, len);
}

/* raw FPDU header bytes of the segment last reported by KIWI_RX_HDR */
static inline const u8 *kiwi_rx_raw_hdr(const struct kiwi_rx *rx, u32 *len)
{
	*len = rx->hdr_have;
	return rx->wire.raw;
}

/* ---- FPDU transmit: framing around caller-owned payload ---- */

/* most framing bytes one kiwi_tx_next() call writes */
#define KIWI_TX_FRAME_MAX	96

struct kiwi_tx {
	union kiwi_wire_hdr wire;
	bool crc_on;
	bool markers;
	u8 state;
	u32 pos;		/* FPDU stream position of the next byte */
	u32 len_pos;
	bool lead_marker;
	u32 crc;
	bool fold;		/* a CRC run is open (kiwi_crc32c_copy_run()) */
	u32 hdr_len;		/* FPDU header bytes incl. ULPDU Length */
	u32 hdr_off;
	u32 payload_left;
	u32 pad;
	u32 trl_off;
	u8 trl[8];
};

struct kiwi_tx_cfg {
	bool crc;
	bool markers;	/* the peer asked for Markers */
	u32 pos;
};

void kiwi_tx_init(struct kiwi_tx *tx, const struct kiwi_tx_cfg *cfg);
/* start an FPDU for h carrying payload_len caller bytes */
int kiwi_tx_begin(struct kiwi_tx *tx, const struct kiwi_hdr *h,
		  u32 payload_len);
/*
 * Write the next framing bytes (at most KIWI_TX_FRAME_MAX) into buf and
 * return their count; *payload is how many caller payload bytes go on the
 * wire right after them. Before the next call, the caller accounts those
 * payload bytes with kiwi_tx_copy_data() when it copies them, else
 * kiwi_tx_crc_data(). Loop while kiwi_tx_more().
 */
u32 kiwi_tx_next(struct kiwi_tx *tx, u8 *buf, u32 *payload);

/*
 * Without Markers an FPDU's framing is the header before its payload and
 * pad plus CRC after it, written in one call each rather than through
 * kiwi_tx_next(): kiwi_tx_head() writes the header into buf (at most cap
 * bytes) and returns its length or -errno (-EINVAL with Markers or an
 * FPDU in progress); the caller accounts the payload as for
 * kiwi_tx_next(); kiwi_tx_tail() writes pad and CRC (at most 7 bytes)
 * and returns their length.  The bytes are the same as kiwi_tx_next()'s.
 */
int kiwi_tx_head(struct kiwi_tx *tx, const struct kiwi_hdr *h,
		 u32 payload_len, u8 *buf, u32 cap);
u32 kiwi_tx_tail(struct kiwi_tx *tx, u8 *buf);

static inline bool kiwi_tx_more(const struct kiwi_tx *tx)
{
	return tx->state != 0;
}

/* as kiwi_rx_run_end(), for the transmit side's CRC */
static inline void kiwi_tx_run_end(struct kiwi_tx *tx)
{
	if (tx->fold)
		tx->crc = kiwi_crc_run_end(tx->crc, &tx->fold);
}

static inline void kiwi_tx_crc_data(struct kiwi_tx *tx, const void *p,
				    u32 len)
{
	if (tx->crc_on) {
		kiwi_tx_run_end(tx);
		tx->crc = crc32c(tx->crc, p, len);
	}
}

/* copy payload bytes to dst, with their CRC in the same pass */
static inline void kiwi_tx_copy_data(struct kiwi_tx *tx, void *dst,
				     const void *src, u32 len)
{
	if (tx->crc_on)
		tx->crc = kiwi_crc32c_copy_run(tx->crc, dst, src, len,
					       &tx->fold);
	else
		memcpy(dst, src, len);
}

/* octets on the wire for the next FPDU, Markers included (0: invalid) */
u32 kiwi_tx_wire_len(const struct kiwi_tx *tx, const struct kiwi_hdr *h,
		     u32 payload_len);
/* whole FPDU into out (control messages, tests); bytes or -errno */
int kiwi_fpdu_build(struct kiwi_tx *tx, const struct kiwi_hdr *h,
		    const void *payload, u32 payload_len, u8 *out, u32 cap);

/* largest ULPDU for an effective MSS (RFC 5044 section 5.1.1 MULPDU) */
u32 kiwi_mpa_mulpdu(u32 emss, bool markers);

/* ---- MPA connection setup ---- */

enum kiwi_mpa_crc {
	KIWI_MPA_CRC_OFF,
	KIWI_MPA_CRC_PREFERRED,
	KIWI_MPA_CRC_REQUIRED,
};

/* RTR message types (RFC 6581 section 9) */
#define KIWI_RTR_SEND	0x1
#define KIWI_RTR_WRITE	0x2
#define KIWI_RTR_READ	0x4
#define KIWI_RTR_ALL	0x7

struct kiwi_mpa_cfg {
	u8 rev;		/* 1, or 2 for the enhanced setup */
	u8 crc;		/* enum kiwi_mpa_crc */
	bool markers;	/* ask the peer to send us Markers */
	bool p2p;	/* initiator: request RTR; responder: accept it */
	u8 rtr;		/* KIWI_RTR_* this side can send or receive */
	u16 ird;
	u16 ord;
	/* nonzero: offer G, and send FPDUs up to this size if the peer does */
	u16 fpdu_max;
};

struct kiwi_mpa_frame {
	bool reply;
	u8 rev;
	bool m;
	bool c;
	bool r;
	bool h;
	bool g;		/* FPDUs longer than one MSS accepted */
	bool v2;	/* IRD/ORD word present (rev 2 with H) */
	bool p2p;
	u8 rtr;		/* KIWI_RTR_* bits */
	u16 ird;
	u16 ord;
	u16 pd_len;	/* all private data on the wire */
	u16 ulp_pd_len;	/* private data for the ULP */
	const u8 *ulp_pd;
	u8 pd[KIWI_MPA_PD_MAX];
};

struct kiwi_mpa_parser {
	struct kiwi_mpa_rr rr;
	struct kiwi_mpa_frame f;
	bool want_reply;
	u32 have;
	enum kiwi_err err;
};

void kiwi_mpa_parser_init(struct kiwi_mpa_parser *p, bool want_reply);
/*
 * Feed bytes; *used says how many belong to the frame (FPDUs may follow
 * in the same chunk). Returns 0 for "need more", 1 when p->f is
 * complete, -errno on a malformed frame (p->err says why).
 */
int kiwi_mpa_parse(struct kiwi_mpa_parser *p, const u8 *buf, u32 len,
		   u32 *used);

struct kiwi_mpa_result {
	u8 rev;
	bool crc;
	bool markers_rx;	/* we receive Markers */
	bool markers_tx;	/* we send Markers */
	bool enhanced;
	bool p2p;
	u8 rtr;			/* chosen RTR type, 0 if none */
	u16 ird;		/* ours, as advertised/negotiated */
	u16 ord;
	u16 peer_ird;
	u16 peer_ord;
	u16 fpdu_max;		/* both offered G: our cfg's, else 0 */
};

/* ULP private data an MPA frame can carry under cfg */
u32 kiwi_mpa_ulp_pd_max(const struct kiwi_mpa_cfg *cfg);
int kiwi_mpa_req_build(const struct kiwi_mpa_cfg *cfg, const void *pd,
		       u32 pd_len, u8 *buf, u32 cap);
/* responder: decide on a Request; KIWI_OK to accept, else reject reason */
enum kiwi_err kiwi_mpa_accept(const struct kiwi_mpa_cfg *cfg,
			      const struct kiwi_mpa_frame *req,
			      struct kiwi_mpa_result *res);
int kiwi_mpa_rep_build(const struct kiwi_mpa_result *res, bool reject,
		       const void *pd, u32 pd_len, u8 *buf, u32 cap);
/* initiator: conclude from the Reply */
enum kiwi_err kiwi_mpa_connect(const struct kiwi_mpa_cfg *cfg,
			       const struct kiwi_mpa_frame *rep,
			       struct kiwi_mpa_result *res);
/* the RTR the initiator sends first in peer-to-peer mode */
int kiwi_mpa_rtr_hdr(const struct kiwi_mpa_result *res, struct kiwi_hdr *h);
/* responder: is the first FPDU the agreed RTR? */
enum kiwi_err kiwi_mpa_rtr_check(const struct kiwi_mpa_result *res,
				 const struct kiwi_hdr *h, u32 payload_len);

#endif /* KIWI_PROTO_H */
