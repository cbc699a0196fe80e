/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The seam between connection management (cm*.c) and the QP engines
 * (qp_state.c, tx.c, rx.c).  The CM owns sockets, listeners and the MPA
 * exchange; the engines own a connected QP's byte stream.  Nothing else
 * crosses: keep it that way so each side can be reasoned about alone.
 *
 * Lifetime: the CM creates a struct kiwi_cep per connection attempt and
 * holds a QP reference (kiwi_qp_get) from iw_connect/iw_accept until the
 * connection is gone.  The socket belongs to the cep; the engines borrow
 * it between kiwi_qp_llp_start() and kiwi_qp_llp_stop(), during which
 * they own its sk callbacks (and must restore the originals in stop).
 * The engines hold conn (ops->get) from llp_start to llp_stop.
 */
#ifndef KIWI_CONN_H
#define KIWI_CONN_H

#include <linux/net.h>

#include "proto/kiwi_proto.h"

struct kiwi_qp;

/* What the MPA exchange settled, handed from the CM to the engines. */
struct kiwi_conn_params {
	struct kiwi_mpa_result mpa;	/* CRC, Markers, RTR, IRD/ORD */
	bool initiator;			/* we sent the MPA Request */
	u32 mss;			/* effective MSS when streaming began */
};

/* Engines -> CM: how the stream ended (kiwi_conn_ops.llp_event). */
enum kiwi_llp_event {
	KIWI_LLP_PEER_CLOSED,		/* FIN from the peer */
	KIWI_LLP_RESET,			/* RST or fatal socket error */
	KIWI_LLP_TERMINATE_SENT,	/* we sent a Terminate: close now */
	KIWI_LLP_TERMINATE_RCVD,	/* the peer sent one */
	KIWI_LLP_CLOSED,		/* graceful close we asked for is done */
};

/*
 * What the engines know of a connection: the CM embeds one in each
 * endpoint and hands it over with the QP (strparser's callbacks are the
 * model), so the engines call up only through these.
 */
struct kiwi_conn;

struct kiwi_conn_ops {
	/*
	 * The stream ended or must end.  Any context (softirq sk callbacks
	 * included); the CM defers to process context.
	 */
	void (*llp_event)(struct kiwi_conn *conn, enum kiwi_llp_event ev);
	/*
	 * modify_qp to SQD (graceful) or ERR (abortive) on a connected QP:
	 * iw_cm_disconnect() asks for a disconnect this way.  Process
	 * context.
	 */
	void (*disconnect)(struct kiwi_conn *conn, bool abort);
	/*
	 * destroy_qp of a QP whose connect is still in its handshake: end
	 * the handshake now (the consumer is told the connect failed)
	 * instead of waiting for a peer that may never answer.  Process
	 * context.
	 */
	void (*qp_gone)(struct kiwi_conn *conn);
	void (*get)(struct kiwi_conn *conn);
	void (*put)(struct kiwi_conn *conn);
};

struct kiwi_conn {
	const struct kiwi_conn_ops *ops;
};

static inline void kiwi_conn_llp_event(struct kiwi_conn *conn,
				       enum kiwi_llp_event ev)
{
	conn->ops->llp_event(conn, ev);
}

/* ---- provided by the engines (engine/qp_state.c) ---- */

/*
 * The CM claims the QP named by connect or accept: a referenced QP, or
 * NULL when there is none or the caller of id may not bind it.
 */
struct iw_cm_id;
struct kiwi_dev;
struct kiwi_qp *kiwi_qp_claim(struct kiwi_dev *kdev, u32 qpn,
			      const struct iw_cm_id *id);
/*
 * An initiator's endpoint took (conn non-NULL) or dropped (NULL) its QP
 * reference: what ops->qp_gone is called on if the QP is destroyed in
 * between.
 */
void kiwi_qp_conn_set(struct kiwi_qp *qp, struct kiwi_conn *conn);

/*
 * The MPA exchange is done (Reply received by the initiator, Reply sent by
 * the responder) and nothing beyond the MPA frame has been read from sock.
 * Take over the stream: install sk callbacks, move the QP to RTS, send the
 * RTR first (peer-to-peer initiator) or hold transmission until the RTR
 * arrives (peer-to-peer responder).  Process context.  On error the QP is
 * unchanged and the CM closes the socket.
 */
int kiwi_qp_llp_start(struct kiwi_qp *qp, struct kiwi_conn *conn,
		      struct socket *sock,
		      const struct kiwi_conn_params *params);
/*
 * Give the stream back: stop both engines, wait for them, restore the
 * socket's callbacks, move the QP to ERR and flush its queues.  After it
 * returns the engines never touch sock or cep again.  Process context.
 */
void kiwi_qp_llp_stop(struct kiwi_qp *qp);

#endif /* KIWI_CONN_H */
