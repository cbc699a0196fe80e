// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * inline-burst: many inline Sends posted at once, each with its own
 * length and bytes, must arrive each with its own: kiwi's transmit engine
 * batches several WRs per TCP send, and inline data lives in the WR.
 * For tests/cases/35-datapath.sh; works on any iWARP device.
 *
 *   inline-burst server ADDR PORT N	receive N Sends, check them (TAP)
 *   inline-burst client ADDR PORT N	post N inline Sends in one list
 *
 * Send i carries 1 + (i * 37) % MAXLEN bytes, byte j being (i + j * 13)
 * mod 256.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netdb.h>
#include <rdma/rdma_cma.h>

#include "kiwi-tap.h"
#include "common.h"

#define TIMEOUT_MS	20000
#define MAXN		64
#define SLOT		128
#define MAXLEN		64	/* within every provider's max_inline_data */

static unsigned int msg_len(int i)
{
	return 1 + (i * 37) % MAXLEN;
}

static void msg_fill(unsigned char *p, int i)
{
	unsigned int j;

	for (j = 0; j < msg_len(i); j++)
		p[j] = (unsigned char)(i + j * 13);
}

struct conn {
	struct rdma_event_channel *ch;
	struct rdma_cm_id *lid, *id;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	unsigned char buf[MAXN * SLOT];
};

static int setup_qp(struct conn *c, int n)
{
	struct ibv_qp_init_attr qa = {
		.cap = { .max_send_wr = n, .max_recv_wr = n,
			 .max_send_sge = 1, .max_recv_sge = 1,
			 .max_inline_data = MAXLEN },
		.qp_type = IBV_QPT_RC,
	};

	c->pd = ibv_alloc_pd(c->id->verbs);
	c->cq = c->pd ? ibv_create_cq(c->id->verbs, 2 * n, NULL, NULL, 0) :
		NULL;
	c->mr = c->cq ? ibv_reg_mr(c->pd, c->buf, sizeof(c->buf),
				   IBV_ACCESS_LOCAL_WRITE) : NULL;
	if (!c->mr) {
		perror("inline-burst: pd/cq/mr");
		return -1;
	}
	qa.send_cq = c->cq;
	qa.recv_cq = c->cq;
	if (rdma_create_qp(c->id, c->pd, &qa)) {
		perror("inline-burst: rdma_create_qp");
		return -1;
	}
	return 0;
}

/* n completions (or an error one); returns how many succeeded */
static int poll_n(struct conn *c, int n, struct ibv_wc *wcs)
{
	int got = 0, r, spins = 0;

	while (got < n) {
		r = ibv_poll_cq(c->cq, n - got, wcs + got);
		if (r < 0)
			return -1;
		if (!r) {
			if (++spins > 2000000000)
				break;
			continue;
		}
		for (; r; r--, got++)
			if (wcs[got].status != IBV_WC_SUCCESS)
				return got;
	}
	return got;
}

static int server(struct conn *c, struct addrinfo *ai, int n)
{
	struct rdma_conn_param cp = { .responder_resources = 1 };
	struct ibv_wc wcs[MAXN];
	struct ibv_sge sge;
	struct ibv_recv_wr wr, *bad;
	unsigned char want[SLOT];
	int i, got, bad_len = 0, bad_bytes = 0;

	if (kiwi_cm_listen(c->ch, ai->ai_addr, 1, NULL, &c->lid))
		return 1;
	printf("# listening\n");
	fflush(stdout);
	if (kiwi_cm_expect(c->ch, RDMA_CM_EVENT_CONNECT_REQUEST, -1,
			   &c->id) ||
	    setup_qp(c, n))
		return 1;
	for (i = 0; i < n; i++) {
		sge.addr = (uintptr_t)(c->buf + i * SLOT);
		sge.length = SLOT;
		sge.lkey = c->mr->lkey;
		memset(&wr, 0, sizeof(wr));
		wr.wr_id = i;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		if (ibv_post_recv(c->id->qp, &wr, &bad)) {
			perror("inline-burst: ibv_post_recv");
			return 1;
		}
	}
	if (rdma_accept(c->id, &cp) ||
	    kiwi_cm_expect(c->ch, RDMA_CM_EVENT_ESTABLISHED, -1, NULL))
		return 1;
	got = poll_n(c, n, wcs);
	ok(got == n, "%d inline Sends received, all successful (%d)", n, got);
	for (i = 0; i < got; i++) {
		int id = (int)wcs[i].wr_id;

		msg_fill(want, id);
		if (wcs[i].byte_len != msg_len(id))
			bad_len++;
		else if (memcmp(c->buf + id * SLOT, want, msg_len(id)))
			bad_bytes++;
	}
	ok(!bad_len, "each Send's length is its own (%d wrong)", bad_len);
	ok(!bad_bytes, "each Send's bytes are its own (%d wrong)", bad_bytes);
	for (i = 0; i < got; i++)
		if (wcs[i].wr_id != (uint64_t)i)
			break;
	ok(i == got, "in posting order");
	rdma_disconnect(c->id);
	return tap_failed != 0;
}

static int client(struct conn *c, struct addrinfo *ai, int n)
{
	struct rdma_conn_param cp = { .initiator_depth = 1 };
	struct ibv_send_wr wr[MAXN], *bad;
	struct ibv_sge sge[MAXN];
	struct ibv_wc wcs[MAXN];
	unsigned char data[MAXN][MAXLEN];
	int i;

	if (kiwi_cm_resolve(c->ch, NULL, ai->ai_addr, TIMEOUT_MS, -1, &c->id) ||
	    setup_qp(c, n) || rdma_connect(c->id, &cp) ||
	    kiwi_cm_expect(c->ch, RDMA_CM_EVENT_ESTABLISHED, -1, NULL))
		return 1;
	memset(wr, 0, sizeof(wr));
	for (i = 0; i < n; i++) {
		msg_fill(data[i], i);
		sge[i].addr = (uintptr_t)data[i];
		sge[i].length = msg_len(i);
		wr[i].wr_id = i;
		wr[i].sg_list = &sge[i];
		wr[i].num_sge = 1;
		wr[i].opcode = IBV_WR_SEND;
		wr[i].send_flags = IBV_SEND_INLINE | IBV_SEND_SIGNALED;
		wr[i].next = i + 1 < n ? &wr[i + 1] : NULL;
	}
	if (ibv_post_send(c->id->qp, wr, &bad)) {
		perror("inline-burst: ibv_post_send");
		return 1;
	}
	/* inline: the data may change as soon as post_send returns */
	memset(data, 0xee, sizeof(data));
	if (poll_n(c, n, wcs) != n) {
		fprintf(stderr, "inline-burst: send completions failed\n");
		return 1;
	}
	printf("# %d inline Sends completed\n", n);
	return kiwi_cm_expect(c->ch, RDMA_CM_EVENT_DISCONNECTED, -1,
			      NULL) ? 1 : 0;
}

int main(int argc, char **argv)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai;
	static struct conn c;
	int n, rv;

	if (argc != 5) {
		fprintf(stderr, "usage: inline-burst server|client ADDR PORT N\n");
		return 2;
	}
	n = atoi(argv[4]);
	if (n < 1 || n > MAXN || getaddrinfo(argv[2], argv[3], &hints, &ai))
		return 2;
	c.ch = rdma_create_event_channel();
	if (!c.ch)
		return 1;
	if (!strcmp(argv[1], "server")) {
		printf("1..4\n");
		rv = server(&c, ai, n);
	} else {
		rv = client(&c, ai, n);
	}
	/* process exit releases the rest */
	freeaddrinfo(ai);
	return rv;
}
