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
 */
#ifndef KIWI_CONN_H
#define KIWI_CONN_H

#include <linux/net.h>

#include "proto/kiwi_proto.h"

struct kiwi_qp;
struct kiwi_cep;

/* What the MPA exchange settled, handed from the CM to the engines. */
struct kiwi_conn_params {
	struct kiwi_mpa_result mpa;	/* CRC, Markers, RTR, IRD/ORD */
	bool initiator;			/* we sent the MPA Request */
	u32 mss;			/* effective MSS when streaming began */
};

/*
 * Engines -> CM: the stream ended or must end.  Callable from any context
 * (softirq sk callbacks included); the CM defers to process context.
 */
enum kiwi_llp_event {
	KIWI_LLP_PEER_CLOSED,		/* FIN from the peer */
	KIWI_LLP_RESET,			/* RST or fatal socket error */
	KIWI_LLP_TERMINATE_SENT,	/* we sent a Terminate: close now */
	KIWI_LLP_TERMINATE_RCVD,	/* the peer sent one */
	KIWI_LLP_CLOSED,		/* graceful close we asked for is done */
};

/* ---- provided by the CM (cm.c) ---- */

void kiwi_cm_llp_event(struct kiwi_cep *cep, enum kiwi_llp_event ev);
/*
 * modify_qp to SQD (graceful) or ERR (abortive) on a connected QP:
 * iw_cm_disconnect() asks for a disconnect this way.  Process context.
 */
void kiwi_cm_disconnect(struct kiwi_cep *cep, bool abort);
void kiwi_cep_get(struct kiwi_cep *cep);
void kiwi_cep_put(struct kiwi_cep *cep);
/*
 * destroy_qp of a QP whose connect is still in its handshake: end the
 * handshake now (the consumer is told the connect failed) instead of
 * waiting for a peer that may never answer.  Process context.
 */
void kiwi_cm_qp_gone(struct kiwi_cep *cep);

/* ---- provided by the engines (qp.c, qp_state.c) ---- */

/*
 * An initiator's endpoint took (cep non-NULL) or dropped (NULL) its QP
 * reference: what kiwi_cm_qp_gone() is called on if the QP is destroyed
 * in between.
 */
void kiwi_qp_conn_cep_set(struct kiwi_qp *qp, struct kiwi_cep *cep);

/*
 * The MPA exchange is done (Reply received by the initiator, Reply sent by
 * the responder) and nothing beyond the MPA frame has been read from sock.
 * Take over the stream: install sk callbacks, move the QP to RTS, send the
 * RTR first (peer-to-peer initiator) or hold transmission until the RTR
 * arrives (peer-to-peer responder).  Process context.  On error the QP is
 * unchanged and the CM closes the socket.
 */
int kiwi_qp_llp_start(struct kiwi_qp *qp, struct kiwi_cep *cep,
		      struct socket *sock,
		      const struct kiwi_conn_params *params);
/*
 * Give the stream back: stop both engines, wait for them, restore the
 * socket's callbacks, move the QP to ERR and flush its queues.  After it
 * returns the engines never touch sock or cep again.  Process context.
 */
void kiwi_qp_llp_stop(struct kiwi_qp *qp);

#endif /* KIWI_CONN_H */
