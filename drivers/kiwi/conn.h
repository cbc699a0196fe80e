/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The seam between connection management (cm*.c) and the QP engines: the
 * CM owns sockets, listeners and the MPA exchange, the engines a
 * connected QP's byte stream; nothing else crosses.
 *
 * The CM holds a QP reference from iw_connect/iw_accept until the
 * connection is gone.  The engines borrow the cep's socket, its sk
 * callbacks and conn (ops->get) from kiwi_qp_llp_start() to
 * kiwi_qp_llp_stop(), which restores the callbacks.
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

/* A connection as the engines know it, embedded in the CM's endpoint. */
struct kiwi_conn;

struct kiwi_conn_ops {
	/* the stream ended or must end; any context (the CM defers) */
	void (*llp_event)(struct kiwi_conn *conn, enum kiwi_llp_event ev);
	/* modify_qp to SQD (graceful) or ERR (abortive); process context */
	void (*disconnect)(struct kiwi_conn *conn, bool abort);
	/* destroy_qp mid-handshake: fail the connect now; process context */
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
/* An initiator took (conn) or dropped (NULL) the QP: for ops->qp_gone. */
void kiwi_qp_conn_set(struct kiwi_qp *qp, struct kiwi_conn *conn);

/*
 * The MPA exchange is done, nothing beyond its frame read: take over the stream
 * (callbacks, RTS, p2p RTR).  Process context; on error the QP is unchanged.
 */
int kiwi_qp_llp_start(struct kiwi_qp *qp, struct kiwi_conn *conn,
		      struct socket *sock,
		      const struct kiwi_conn_params *params);
/* Give the stream back: stop the engines, restore sock, ERR, flush. */
void kiwi_qp_llp_stop(struct kiwi_qp *qp);

#endif /* KIWI_CONN_H */
