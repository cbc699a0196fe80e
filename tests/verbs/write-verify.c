// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * write-verify: a stream of RDMA Writes whose every byte the receiver
 * checks, running until it is told to stop, for a transfer that must
 * stay correct while something changes under the connection (the path
 * MTU in tests/cases/37-path-mtu.sh).  Works on any iWARP device.
 *
 *   write-verify server ADDR PORT SIZE		the sink: checks each Write (TAP)
 *   write-verify client ADDR PORT SIZE STOPFILE	Writes until STOPFILE exists
 *
 * The server registers SIZE bytes for remote writing and sends their
 * address and key.  Each round, the client fills its buffer with round
 * i's pattern, Writes all of it to the server and Sends i; the Send
 * arrives after the Write is placed (RDMAP's ordering), so the server
 * compares the buffer with the pattern then and answers with the number
 * of bytes that differed.  Once STOPFILE exists the client Sends 0
 * instead and both end: the server with its TAP (rounds checked, none
 * wrong), the client with status 0 if every answer was 0 wrong.
 */
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <netdb.h>
#include <rdma/rdma_cma.h>

#include "kiwi-tap.h"
#include "common.h"

#define TIMEOUT_MS	60000
#define MAXSIZE		(16u << 20)

/* the messages: the server's buffer, a round, an answer */
struct msg {
	uint64_t addr;
	uint32_t rkey;
	uint32_t round;		/* 0: the client's last message */
	uint32_t wrong;		/* bytes that differed (answers) */
	uint32_t pad;
};

struct conn {
	struct rdma_event_channel *ch;
	struct rdma_cm_id *lid, *id;
	struct ibv_pd *pd;
	struct ibv_comp_channel *cc;	/* for both CQs */
	struct ibv_cq *scq, *rcq;
	struct ibv_mr *mr, *mmr;
	unsigned char *buf;
	uint32_t size;
	struct {			/* registered as one */
		struct msg rx[2], tx;
	} mb;
};

/* round r's word k: differs for every round and every offset */
static void pattern(uint32_t *p, uint32_t size, uint32_t r)
{
	uint32_t k;

	for (k = 0; k < size / 4; k++)
		p[k] = (r * 0x9e3779b1u) ^ (k * 0x85ebca77u) ^ 0x5bd1e995u;
}

static int setup_qp(struct conn *c, int access)
{
	struct ibv_qp_init_attr qa = {
		.cap = { .max_send_wr = 4, .max_recv_wr = 4,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
	};

	c->pd = ibv_alloc_pd(c->id->verbs);
	c->cc = c->pd ? ibv_create_comp_channel(c->id->verbs) : NULL;
	c->scq = c->cc ? ibv_create_cq(c->id->verbs, 8, NULL, c->cc, 0) :
		NULL;
	c->rcq = c->scq ? ibv_create_cq(c->id->verbs, 8, NULL, c->cc, 0) :
		NULL;
	c->buf = c->rcq ? aligned_alloc(4096, c->size) : NULL;
	c->mr = c->buf ? ibv_reg_mr(c->pd, c->buf, c->size, access) : NULL;
	c->mmr = c->mr ? ibv_reg_mr(c->pd, &c->mb, sizeof(c->mb),
				    IBV_ACCESS_LOCAL_WRITE) : NULL;
	if (!c->mmr) {
		perror("write-verify: pd/cq/mr");
		return -1;
	}
	qa.send_cq = c->scq;
	qa.recv_cq = c->rcq;
	if (rdma_create_qp(c->id, c->pd, &qa)) {
		perror("write-verify: rdma_create_qp");
		return -1;
	}
	return 0;
}

static int post_recv(struct conn *c, int slot)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)&c->mb.rx[slot],
		.length = sizeof(c->mb.rx[slot]),
		.lkey = c->mmr->lkey,
	};
	struct ibv_recv_wr wr = { .wr_id = slot, .sg_list = &sge,
				  .num_sge = 1 }, *bad;

	if (ibv_post_recv(c->id->qp, &wr, &bad)) {
		perror("write-verify: ibv_post_recv");
		return -1;
	}
	return 0;
}

/* c->mb.tx as a signalled Send, after a Write of the buffer if write */
static int post_send(struct conn *c, const struct msg *rem, int write)
{
	struct ibv_sge msge = {
		.addr = (uintptr_t)&c->mb.tx,
		.length = sizeof(c->mb.tx),
		.lkey = c->mmr->lkey,
	};
	struct ibv_sge wsge = {
		.addr = (uintptr_t)c->buf,
		.length = c->size,
		.lkey = c->mr->lkey,
	};
	struct ibv_send_wr send = {
		.wr_id = 2, .sg_list = &msge, .num_sge = 1,
		.opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED,
	};
	struct ibv_send_wr wr = {
		.wr_id = 3, .sg_list = &wsge, .num_sge = 1,
		.opcode = IBV_WR_RDMA_WRITE, .next = &send,
	}, *bad;

	if (write) {
		wr.wr.rdma.remote_addr = rem->addr;
		wr.wr.rdma.rkey = rem->rkey;
	}
	if (ibv_post_send(c->id->qp, write ? &wr : &send, &bad)) {
		perror("write-verify: ibv_post_send");
		return -1;
	}
	return 0;
}

/*
 * The next completion of cq, waiting on the completion channel (no busy
 * polling: in a TCG guest the peer and the engines need the vCPUs): 0
 * with it in *wc, -1 on an error completion, a failure or TIMEOUT_MS
 * without one.  An event of the other CQ is only acknowledged: that CQ
 * is polled, and armed again, before anyone waits for it.
 */
static int next_wc(struct conn *c, struct ibv_cq *cq, struct ibv_wc *wc)
{
	long long end = kiwi_now_ms() + TIMEOUT_MS;
	struct pollfd p = { .fd = c->cc->fd, .events = POLLIN };
	struct ibv_cq *ecq;
	void *ctx;
	int r;

	for (;;) {
		r = ibv_poll_cq(cq, 1, wc);
		if (!r) {
			if (ibv_req_notify_cq(cq, 0))
				break;
			/* one may have come before the request */
			r = ibv_poll_cq(cq, 1, wc);
		}
		if (r < 0)
			break;
		if (r) {
			if (wc->status == IBV_WC_SUCCESS)
				return 0;
			fprintf(stderr, "write-verify: wr %llu: %s\n",
				(unsigned long long)wc->wr_id,
				ibv_wc_status_str(wc->status));
			return -1;
		}
		r = (int)(end - kiwi_now_ms());
		if (r <= 0 || poll(&p, 1, r) <= 0)
			break;
		if (ibv_get_cq_event(c->cc, &ecq, &ctx))
			break;
		ibv_ack_cq_events(ecq, 1);
	}
	fprintf(stderr, "write-verify: no completion within %d ms\n",
		TIMEOUT_MS);
	return -1;
}

/* The next message received (its slot re-posted once read into *m). */
static int next_msg(struct conn *c, struct msg *m)
{
	struct ibv_wc wc;
	int slot;

	if (next_wc(c, c->rcq, &wc))
		return -1;
	slot = (int)wc.wr_id;
	if (wc.opcode != IBV_WC_RECV || wc.byte_len != sizeof(*m)) {
		fprintf(stderr, "write-verify: opcode %d, %u bytes\n",
			wc.opcode, wc.byte_len);
		return -1;
	}
	*m = c->mb.rx[slot];
	return post_recv(c, slot);
}

/* c->mb.tx sent (after a Write of the buffer if write) and completed */
static int send_msg(struct conn *c, const struct msg *rem, int write)
{
	struct ibv_wc wc;

	return post_send(c, rem, write) || next_wc(c, c->scq, &wc) ? -1 : 0;
}

static int server(struct conn *c, struct addrinfo *ai)
{
	struct rdma_conn_param cp = { .responder_resources = 1 };
	uint32_t *want = aligned_alloc(4096, c->size);
	unsigned long long wrong_total = 0;
	unsigned int rounds = 0, bad_rounds = 0, bad_order = 0;
	struct msg m = { .round = 1 };
	uint32_t k;

	if (!want || kiwi_cm_listen(c->ch, ai->ai_addr, 1, NULL, &c->lid))
		return 1;
	printf("# listening\n");
	fflush(stdout);
	if (kiwi_cm_expect(c->ch, RDMA_CM_EVENT_CONNECT_REQUEST, -1,
			   &c->id) ||
	    setup_qp(c, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE) ||
	    post_recv(c, 0) || post_recv(c, 1) || rdma_accept(c->id, &cp) ||
	    kiwi_cm_expect(c->ch, RDMA_CM_EVENT_ESTABLISHED, TIMEOUT_MS,
			   NULL))
		return 1;
	memset(c->buf, 0, c->size);
	c->mb.tx.addr = (uintptr_t)c->buf;
	c->mb.tx.rkey = c->mr->rkey;
	if (send_msg(c, NULL, 0))
		return 1;
	for (;;) {
		if (next_msg(c, &m))
			break;
		if (!m.round)
			break;
		rounds++;
		if (m.round != rounds)
			bad_order++;
		pattern(want, c->size, m.round);
		m.wrong = 0;
		if (memcmp(c->buf, want, c->size))
			for (k = 0; k < c->size; k++)
				m.wrong += c->buf[k] != ((uint8_t *)want)[k];
		if (m.wrong) {
			bad_rounds++;
			wrong_total += m.wrong;
			diag("round %u: %u of %u bytes wrong", m.round, m.wrong,
			     c->size);
		}
		/* the client waits for this before its next Write */
		c->mb.tx = m;
		if (send_msg(c, NULL, 0))
			break;
	}
	ok(rounds > 0 && !m.round,
	   "%u Writes of %u bytes checked, then the client's last message",
	   rounds, c->size);
	ok(!bad_rounds, "every byte of every Write as sent (%u Writes with bytes wrong, %llu bytes)",
	   bad_rounds, wrong_total);
	ok(!bad_order, "the rounds came in order (%u out of order)",
	   bad_order);
	rdma_disconnect(c->id);
	return tap_end();
}

static int client(struct conn *c, struct addrinfo *ai, const char *stop)
{
	struct rdma_conn_param cp = { .initiator_depth = 1 };
	struct msg rem, m;
	uint32_t r;

	if (kiwi_cm_resolve(c->ch, NULL, ai->ai_addr, TIMEOUT_MS, TIMEOUT_MS,
			    &c->id) ||
	    setup_qp(c, IBV_ACCESS_LOCAL_WRITE) || post_recv(c, 0) ||
	    post_recv(c, 1) || rdma_connect(c->id, &cp) ||
	    kiwi_cm_expect(c->ch, RDMA_CM_EVENT_ESTABLISHED, TIMEOUT_MS,
			   NULL) ||
	    next_msg(c, &rem))
		return 1;
	for (r = 1;; r++) {
		if (!access(stop, F_OK))
			break;
		pattern((uint32_t *)c->buf, c->size, r);
		memset(&c->mb.tx, 0, sizeof(c->mb.tx));
		c->mb.tx.round = r;
		if (send_msg(c, &rem, 1) || next_msg(c, &m))
			return 1;
		if (m.round != r || m.wrong) {
			fprintf(stderr, "write-verify: round %u: answer for %u, %u bytes wrong\n",
				r, m.round, m.wrong);
			return 1;
		}
	}
	memset(&c->mb.tx, 0, sizeof(c->mb.tx));
	if (send_msg(c, NULL, 0))
		return 1;
	printf("# %u Writes of %u bytes, each checked by the server\n", r - 1,
	       c->size);
	fflush(stdout);
	return kiwi_cm_expect(c->ch, RDMA_CM_EVENT_DISCONNECTED, TIMEOUT_MS,
			      NULL) ? 1 : 0;
}

int main(int argc, char **argv)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai;
	static struct conn c;
	unsigned long size;
	int rv, srv;

	srv = argc == 5 && !strcmp(argv[1], "server");
	if (!srv && (argc != 6 || strcmp(argv[1], "client"))) {
		fprintf(stderr, "usage: write-verify server ADDR PORT SIZE\n"
			"       write-verify client ADDR PORT SIZE STOPFILE\n");
		return 2;
	}
	size = strtoul(argv[4], NULL, 0);
	if (!size || size % 4096 || size > MAXSIZE ||
	    getaddrinfo(argv[2], argv[3], &hints, &ai))
		return 2;
	c.size = (uint32_t)size;
	c.ch = rdma_create_event_channel();
	if (!c.ch)
		return 1;
	rv = srv ? server(&c, ai) : client(&c, ai, argv[5]);
	/* process exit releases the rest */
	freeaddrinfo(ai);
	return rv;
}
