/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * kiwi trace events (events/kiwi/, operability.md): QP states, the MPA
 * exchange and the RTR, Terminates, work requests posted and completed.
 * CREATE_TRACE_POINTS is defined in core/obj.c only.
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM kiwi

#if !defined(KIWI_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define KIWI_TRACE_H

#include <linux/socket.h>
#include <linux/tracepoint.h>
#include <rdma/ib_verbs.h>

#include "proto/kiwi_proto.h"

#define kiwi_show_qp_state(s)					\
	__print_symbolic(s,					\
			 { IB_QPS_RESET, "RESET" },		\
			 { IB_QPS_INIT, "INIT" },		\
			 { IB_QPS_RTR, "RTR" },			\
			 { IB_QPS_RTS, "RTS" },			\
			 { IB_QPS_SQD, "SQD" },			\
			 { IB_QPS_SQE, "SQE" },			\
			 { IB_QPS_ERR, "ERR" })

TRACE_EVENT(kiwi_qp_state,
	TP_PROTO(u32 qpn, int old, int new),
	TP_ARGS(qpn, old, new),
	TP_STRUCT__entry(
		__field(u32, qpn)
		__field(int, old)
		__field(int, new)
	),
	TP_fast_assign(
		__entry->qpn = qpn;
		__entry->old = old;
		__entry->new = new;
	),
	TP_printk("qp %u %s -> %s", __entry->qpn,
		  kiwi_show_qp_state(__entry->old),
		  kiwi_show_qp_state(__entry->new))
);

/*
 * An MPA Request or Reply as it went or came: its header and, with H
 * set, the IRD/ORD word (RFC 6581) from the start of its private data.
 */
DECLARE_EVENT_CLASS(kiwi_mpa_class,
	TP_PROTO(u32 qpn, const struct sockaddr_storage *laddr,
		 const struct sockaddr_storage *raddr,
		 const struct kiwi_mpa_rr *rr, const u8 *pd),
	TP_ARGS(qpn, laddr, raddr, rr, pd),
	TP_STRUCT__entry(
		__field(u32, qpn)
		__array(u8, laddr, sizeof(struct sockaddr_in6))
		__array(u8, raddr, sizeof(struct sockaddr_in6))
		__field(u16, bits)
		__field(u16, pd_len)
		__field(u16, ird)
		__field(u16, ord)
	),
	TP_fast_assign(
		__entry->qpn = qpn;
		memcpy(__entry->laddr, laddr, sizeof(__entry->laddr));
		memcpy(__entry->raddr, raddr, sizeof(__entry->raddr));
		__entry->bits = be16_to_cpu(rr->bits);
		__entry->pd_len = be16_to_cpu(rr->pd_len);
		__entry->ird = 0;
		__entry->ord = 0;
		if ((__entry->bits & KIWI_MPA_H) && __entry->pd_len >= 4) {
			__entry->ird = pd[0] << 8 | pd[1];
			__entry->ord = pd[2] << 8 | pd[3];
		}
	),
	TP_printk("qp %u %pISpc -> %pISpc rev %u%s%s%s%s pd_len %u ird 0x%04x ord 0x%04x",
		  __entry->qpn, __entry->laddr, __entry->raddr,
		  __entry->bits & KIWI_MPA_REV_MASK,
		  __entry->bits & KIWI_MPA_M ? " M" : "",
		  __entry->bits & KIWI_MPA_C ? " C" : "",
		  __entry->bits & KIWI_MPA_R ? " R" : "",
		  __entry->bits & KIWI_MPA_H ? " H" : "",
		  __entry->pd_len, __entry->ird, __entry->ord)
);

#define KIWI_MPA_EVENT(name)						\
DEFINE_EVENT(kiwi_mpa_class, name,					\
	TP_PROTO(u32 qpn, const struct sockaddr_storage *laddr,		\
		 const struct sockaddr_storage *raddr,			\
		 const struct kiwi_mpa_rr *rr, const u8 *pd),		\
	TP_ARGS(qpn, laddr, raddr, rr, pd))

KIWI_MPA_EVENT(kiwi_mpa_req_sent);
KIWI_MPA_EVENT(kiwi_mpa_req_rcvd);
KIWI_MPA_EVENT(kiwi_mpa_rep_sent);
KIWI_MPA_EVENT(kiwi_mpa_rep_rcvd);

/* The peer-to-peer RTR: its RDMAP opcode (Send, Write or Read Request). */
DECLARE_EVENT_CLASS(kiwi_rtr_class,
	TP_PROTO(u32 qpn, u8 opcode),
	TP_ARGS(qpn, opcode),
	TP_STRUCT__entry(
		__field(u32, qpn)
		__field(u8, opcode)
	),
	TP_fast_assign(
		__entry->qpn = qpn;
		__entry->opcode = opcode;
	),
	TP_printk("qp %u opcode %u", __entry->qpn, __entry->opcode)
);

DEFINE_EVENT(kiwi_rtr_class, kiwi_rtr_sent,
	TP_PROTO(u32 qpn, u8 opcode),
	TP_ARGS(qpn, opcode));
DEFINE_EVENT(kiwi_rtr_class, kiwi_rtr_rcvd,
	TP_PROTO(u32 qpn, u8 opcode),
	TP_ARGS(qpn, opcode));

/* layer 0 RDMAP, 1 DDP, 2 LLP (MPA); etype and ecode as in RFC 5040. */
DECLARE_EVENT_CLASS(kiwi_term_class,
	TP_PROTO(u32 qpn, const struct kiwi_term_info *t),
	TP_ARGS(qpn, t),
	TP_STRUCT__entry(
		__field(u32, qpn)
		__field(u8, layer)
		__field(u8, etype)
		__field(u8, ecode)
	),
	TP_fast_assign(
		__entry->qpn = qpn;
		__entry->layer = t->layer;
		__entry->etype = t->etype;
		__entry->ecode = t->ecode;
	),
	TP_printk("qp %u layer %s etype %u ecode 0x%02x", __entry->qpn,
		  __print_symbolic(__entry->layer,
				   { KIWI_LAYER_RDMAP, "RDMAP" },
				   { KIWI_LAYER_DDP, "DDP" },
				   { KIWI_LAYER_LLP, "LLP" }),
		  __entry->etype, __entry->ecode)
);

DEFINE_EVENT(kiwi_term_class, kiwi_term_sent,
	TP_PROTO(u32 qpn, const struct kiwi_term_info *t),
	TP_ARGS(qpn, t));
DEFINE_EVENT(kiwi_term_class, kiwi_term_rcvd,
	TP_PROTO(u32 qpn, const struct kiwi_term_info *t),
	TP_ARGS(qpn, t));

/*
 * A work request posted by a kernel consumer, or a user QP's SQE or RQE
 * when the engines take it from the ring.  opcode: enum kiwi_opcode.
 */
TRACE_EVENT(kiwi_wr_post,
	TP_PROTO(u32 qpn, bool recv, bool user, u64 id, u8 opcode, u32 len),
	TP_ARGS(qpn, recv, user, id, opcode, len),
	TP_STRUCT__entry(
		__field(u64, id)
		__field(u32, qpn)
		__field(u32, len)
		__field(u8, opcode)
		__field(bool, recv)
		__field(bool, user)
	),
	TP_fast_assign(
		__entry->id = id;
		__entry->qpn = qpn;
		__entry->len = len;
		__entry->opcode = opcode;
		__entry->recv = recv;
		__entry->user = user;
	),
	TP_printk("qp %u %s %s id 0x%llx opcode %u len %u", __entry->qpn,
		  __entry->recv ? "rq" : "sq",
		  __entry->user ? "taken" : "posted",
		  __entry->id, __entry->opcode, __entry->len)
);

/* A CQE written; status: enum ib_wc_status. */
TRACE_EVENT(kiwi_wr_complete,
	TP_PROTO(u32 cq, u32 qpn, u64 id, u8 opcode, u8 status, u32 bytes),
	TP_ARGS(cq, qpn, id, opcode, status, bytes),
	TP_STRUCT__entry(
		__field(u64, id)
		__field(u32, cq)
		__field(u32, qpn)
		__field(u32, bytes)
		__field(u8, opcode)
		__field(u8, status)
	),
	TP_fast_assign(
		__entry->id = id;
		__entry->cq = cq;
		__entry->qpn = qpn;
		__entry->bytes = bytes;
		__entry->opcode = opcode;
		__entry->status = status;
	),
	TP_printk("cq %u qp %u id 0x%llx opcode %u status %u bytes %u",
		  __entry->cq, __entry->qpn, __entry->id, __entry->opcode,
		  __entry->status, __entry->bytes)
);

#endif /* KIWI_TRACE_H */

/* this part must be outside the include guard */
#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH core
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE kiwi_trace
#include <trace/define_trace.h>
