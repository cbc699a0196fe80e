// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * cm-reject: rdma_reject() with private data, seen from both ends of an
 * rdma_cm connection, for tests/cases/30-cm.sh.  Works on any iWARP
 * device (kiwi, siw).
 *
 *   cm-reject server ADDR PORT LEN
 *	listen on ADDR:PORT; answer the first connection request with
 *	rdma_reject() carrying LEN bytes of the test pattern; print the
 *	request's private data as "request pdlen=N pd=HEX"; exit 0.
 *   cm-reject client ADDR PORT LEN EXPECT
 *	connect (a QP is needed on iWARP) with LEN bytes of the pattern as
 *	private data; the next event must be RDMA_CM_EVENT_REJECTED whose
 *	private data is exactly the first EXPECT bytes of the pattern
 *	(EXPECT -1: any); prints "event NAME status=S pdlen=N pd=HEX" and
 *	exits 0 only if so.
 *
 *   cm-reject destroy-connecting ADDR PORT READY_FILE
 *	connect to a listener that never answers (the case's), wait until
 *	READY_FILE exists (the listener has read the MPA Request), then
 *	rdma_destroy_qp(): it must return within DESTROY_MS, and the
 *	connect must then end with an event (REJECTED, CONNECT_ERROR or
 *	UNREACHABLE) within TIMEOUT_MS; prints "destroy_qp N ms, then
 *	EVENT" and exits 0 only if both held.
 *
 * The pattern: byte i is (i * 7 + 3) mod 256, so that truncation and
 * offsets show.
 *
 * The order of connection requests (applications such as perftest -q N
 * pair several connections up by it):
 *   cm-reject order-server ADDR PORT N
 *	take N connection requests, each rejected; print "order I0 I1 ..."
 *	(the first private data byte of each); exit 0 if it is 0 1 .. N-1.
 *   cm-reject order-client ADDR PORT N
 *	make N connections, their addresses and routes resolved first,
 *	then rdma_connect() back to back, connection i with private data
 *	byte i; exit 0 when all N were REJECTED.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <netdb.h>
#include <rdma/rdma_cma.h>

#include "common.h"

#define TIMEOUT_MS	20000

static void pattern(unsigned char *p, int len)
{
	int i;

	for (i = 0; i < len; i++)
		p[i] = (unsigned char)(i * 7 + 3);
}

static void print_pd(const void *pd, int len)
{
	const unsigned char *p = pd;
	int i;

	printf(" pdlen=%d pd=", len);
	for (i = 0; i < len; i++)
		printf("%02x", p[i]);
	putchar('\n');
	fflush(stdout);
}

static int get_addr(const char *host, const char *port, struct addrinfo **ai)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM };
	int rv = getaddrinfo(host, port, &hints, ai);

	if (rv)
		fprintf(stderr, "cm-reject: %s: %s\n", host, gai_strerror(rv));
	return rv ? -1 : 0;
}

static int server(struct addrinfo *ai, int len)
{
	unsigned char pd[256];
	struct rdma_event_channel *ch;
	struct rdma_cm_event *ev;
	struct rdma_cm_id *lid, *cid;
	int rv = 1;

	ch = rdma_create_event_channel();
	if (!ch || rdma_create_id(ch, &lid, NULL, RDMA_PS_TCP)) {
		perror("cm-reject: create");
		return 1;
	}
	if (rdma_bind_addr(lid, ai->ai_addr) || rdma_listen(lid, 4)) {
		perror("cm-reject: bind/listen");
		goto out;
	}
	printf("listening\n");
	fflush(stdout);
	ev = kiwi_cm_next(ch, -1);
	if (!ev)
		goto out;
	if (ev->event != RDMA_CM_EVENT_CONNECT_REQUEST) {
		fprintf(stderr, "cm-reject: %s\n", rdma_event_str(ev->event));
		rdma_ack_cm_event(ev);
		goto out;
	}
	cid = ev->id;
	printf("request");
	print_pd(ev->param.conn.private_data,
		 ev->param.conn.private_data_len);
	rdma_ack_cm_event(ev);
	pattern(pd, len);
	if (rdma_reject(cid, len ? pd : NULL, (uint8_t)len)) {
		perror("cm-reject: rdma_reject");
		rdma_destroy_id(cid);
		goto out;
	}
	printf("rejected with %d bytes\n", len);
	rdma_destroy_id(cid);
	rv = 0;
out:
	rdma_destroy_id(lid);
	rdma_destroy_event_channel(ch);
	return rv;
}

#define ORDER_MAX	32

static int order_server(struct addrinfo *ai, int n)
{
	struct rdma_event_channel *ch;
	struct rdma_cm_event *ev;
	struct rdma_cm_id *lid;
	int got[ORDER_MAX], i, bad = 0;

	ch = rdma_create_event_channel();
	if (!ch || rdma_create_id(ch, &lid, NULL, RDMA_PS_TCP)) {
		perror("cm-reject: create");
		return 1;
	}
	if (rdma_bind_addr(lid, ai->ai_addr) || rdma_listen(lid, n)) {
		perror("cm-reject: bind/listen");
		bad = 1;
		goto out;
	}
	printf("listening\n");
	fflush(stdout);
	for (i = 0; i < n; i++) {
		ev = kiwi_cm_next(ch, -1);
		if (!ev) {
			bad = 1;
			goto out;
		}
		if (ev->event != RDMA_CM_EVENT_CONNECT_REQUEST ||
		    ev->param.conn.private_data_len < 1) {
			fprintf(stderr, "cm-reject: %s\n",
				rdma_event_str(ev->event));
			rdma_ack_cm_event(ev);
			bad = 1;
			goto out;
		}
		got[i] = *(const unsigned char *)ev->param.conn.private_data;
		rdma_reject(ev->id, NULL, 0);
		rdma_destroy_id(ev->id);
		rdma_ack_cm_event(ev);
	}
	printf("order");
	for (i = 0; i < n; i++) {
		printf(" %d", got[i]);
		bad |= got[i] != i;
	}
	putchar('\n');
out:
	rdma_destroy_id(lid);
	rdma_destroy_event_channel(ch);
	return bad;
}

static int order_client(struct addrinfo *ai, int n)
{
	struct rdma_conn_param cp = { .initiator_depth = 1,
				      .responder_resources = 1,
				      .private_data_len = 1 };
	struct ibv_qp_init_attr qa = {
		.cap = { .max_send_wr = 1, .max_recv_wr = 1,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
	};
	struct rdma_cm_id *id[ORDER_MAX] = { NULL };
	struct rdma_event_channel *ch;
	struct rdma_cm_event *ev;
	struct ibv_pd *ibpd = NULL;
	struct ibv_cq *cq = NULL;
	unsigned char idx;
	int i, made = 0, rv = 1;

	ch = rdma_create_event_channel();
	if (!ch)
		return 1;
	for (made = 0; made < n; made++) {
		if (rdma_create_id(ch, &id[made], NULL, RDMA_PS_TCP) ||
		    rdma_resolve_addr(id[made], NULL, ai->ai_addr,
				      TIMEOUT_MS) ||
		    kiwi_cm_expect(ch, RDMA_CM_EVENT_ADDR_RESOLVED, -1, NULL) ||
		    rdma_resolve_route(id[made], TIMEOUT_MS) ||
		    kiwi_cm_expect(ch, RDMA_CM_EVENT_ROUTE_RESOLVED, -1, NULL))
			goto out;
		if (!ibpd) {
			ibpd = ibv_alloc_pd(id[made]->verbs);
			cq = ibpd ? ibv_create_cq(id[made]->verbs, 2 * n, NULL,
						  NULL, 0) : NULL;
			if (!cq) {
				perror("cm-reject: pd/cq");
				goto out;
			}
			qa.send_cq = cq;
			qa.recv_cq = cq;
		}
		if (rdma_create_qp(id[made], ibpd, &qa)) {
			perror("cm-reject: rdma_create_qp");
			goto out;
		}
	}
	for (i = 0; i < n; i++) {
		idx = (unsigned char)i;
		cp.private_data = &idx;
		if (rdma_connect(id[i], &cp)) {
			perror("cm-reject: rdma_connect");
			goto out;
		}
	}
	for (i = 0; i < n; i++) {
		ev = kiwi_cm_next(ch, -1);
		if (!ev)
			goto out;
		if (ev->event != RDMA_CM_EVENT_REJECTED) {
			fprintf(stderr, "cm-reject: %s (status %d)\n",
				rdma_event_str(ev->event), ev->status);
			rdma_ack_cm_event(ev);
			goto out;
		}
		rdma_ack_cm_event(ev);
	}
	printf("%d connections rejected\n", n);
	rv = 0;
out:
	for (i = 0; i < made + (made < n && id[made]); i++)
		kiwi_cm_drop(id[i]);
	if (cq)
		ibv_destroy_cq(cq);
	if (ibpd)
		ibv_dealloc_pd(ibpd);
	rdma_destroy_event_channel(ch);
	return rv;
}

/* A client end: its channel, id (address and route resolved) and QP. */
struct cli {
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
};

/* 0 with c's QP made; else -1, and cli_close() frees what was made */
static int cli_open(struct addrinfo *ai, struct cli *c)
{
	struct ibv_qp_init_attr qa = {
		.cap = { .max_send_wr = 1, .max_recv_wr = 1,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
	};

	memset(c, 0, sizeof(*c));
	c->ch = rdma_create_event_channel();
	if (!c->ch || rdma_create_id(c->ch, &c->id, NULL, RDMA_PS_TCP)) {
		perror("cm-reject: create");
		return -1;
	}
	if (rdma_resolve_addr(c->id, NULL, ai->ai_addr, TIMEOUT_MS) ||
	    kiwi_cm_expect(c->ch, RDMA_CM_EVENT_ADDR_RESOLVED, -1, NULL) ||
	    rdma_resolve_route(c->id, TIMEOUT_MS) ||
	    kiwi_cm_expect(c->ch, RDMA_CM_EVENT_ROUTE_RESOLVED, -1, NULL))
		return -1;
	c->pd = ibv_alloc_pd(c->id->verbs);
	c->cq = c->pd ? ibv_create_cq(c->id->verbs, 2, NULL, NULL, 0) : NULL;
	if (!c->cq) {
		perror("cm-reject: pd/cq");
		return -1;
	}
	qa.send_cq = c->cq;
	qa.recv_cq = c->cq;
	if (rdma_create_qp(c->id, c->pd, &qa)) {
		perror("cm-reject: rdma_create_qp");
		return -1;
	}
	return 0;
}

static void cli_close(struct cli *c)
{
	if (c->id && c->id->qp)
		rdma_destroy_qp(c->id);
	if (c->cq)
		ibv_destroy_cq(c->cq);
	if (c->pd)
		ibv_dealloc_pd(c->pd);
	if (c->id)
		rdma_destroy_id(c->id);
	if (c->ch)
		rdma_destroy_event_channel(c->ch);
}

static int client(struct addrinfo *ai, int len, int expect)
{
	struct rdma_conn_param cp = { .initiator_depth = 1,
				      .responder_resources = 1 };
	unsigned char pd[256], want[256];
	struct rdma_cm_event *ev;
	struct cli c;
	int rv = 1, ok;

	if (cli_open(ai, &c))
		goto out;
	pattern(pd, len);
	cp.private_data = len ? pd : NULL;
	cp.private_data_len = (uint8_t)len;
	if (rdma_connect(c.id, &cp)) {
		perror("cm-reject: rdma_connect");
		goto out;
	}
	ev = kiwi_cm_next(c.ch, -1);
	if (!ev)
		goto out;
	printf("event %s status=%d", rdma_event_str(ev->event), ev->status);
	print_pd(ev->param.conn.private_data,
		 ev->param.conn.private_data_len);
	pattern(want, sizeof(want));
	ok = ev->event == RDMA_CM_EVENT_REJECTED;
	if (expect >= 0)
		ok = ok && ev->param.conn.private_data_len == expect &&
			(!expect || !memcmp(ev->param.conn.private_data, want,
					    expect));
	rdma_ack_cm_event(ev);
	rv = !ok;
out:
	cli_close(&c);
	return rv;
}

#define DESTROY_MS	1000

/* READY_FILE within TIMEOUT_MS, polled (a file is all the case can give) */
static int wait_file(const char *path)
{
	long long end = kiwi_now_ms() + TIMEOUT_MS;

	while (access(path, F_OK)) {
		if (kiwi_now_ms() > end) {
			fprintf(stderr, "cm-reject: no %s\n", path);
			return -1;
		}
		usleep(10000);
	}
	return 0;
}

static int destroy_connecting(struct addrinfo *ai, const char *ready)
{
	struct rdma_conn_param cp = { .initiator_depth = 1,
				      .responder_resources = 1 };
	struct rdma_cm_event *ev;
	long long t0, ms;
	struct cli c;
	int rv = 1;

	if (cli_open(ai, &c))
		goto out;
	if (rdma_connect(c.id, &cp)) {
		perror("cm-reject: rdma_connect");
		goto out;
	}
	if (wait_file(ready))
		goto out;
	t0 = kiwi_now_ms();
	rdma_destroy_qp(c.id);
	ms = kiwi_now_ms() - t0;
	ev = kiwi_cm_next(c.ch, TIMEOUT_MS);
	printf("destroy_qp %lld ms, then %s\n", ms,
	       ev ? rdma_event_str(ev->event) : "no event");
	if (ev) {
		rv = !(ms < DESTROY_MS &&
		       (ev->event == RDMA_CM_EVENT_REJECTED ||
			ev->event == RDMA_CM_EVENT_CONNECT_ERROR ||
			ev->event == RDMA_CM_EVENT_UNREACHABLE));
		rdma_ack_cm_event(ev);
	}
out:
	cli_close(&c);
	return rv;
}

int main(int argc, char **argv)
{
	struct addrinfo *ai;
	int len, rv;

	if (argc < 5 || (!strcmp(argv[1], "client") && argc < 6)) {
		fprintf(stderr, "usage: cm-reject server ADDR PORT LEN\n"
			"       cm-reject client ADDR PORT LEN EXPECT\n"
			"       cm-reject order-server|order-client ADDR PORT N\n"
			"       cm-reject destroy-connecting ADDR PORT READY_FILE\n");
		return 2;
	}
	if (!strcmp(argv[1], "destroy-connecting")) {
		if (get_addr(argv[2], argv[3], &ai))
			return 2;
		rv = destroy_connecting(ai, argv[4]);
		freeaddrinfo(ai);
		return rv;
	}
	len = atoi(argv[4]);
	if (!strncmp(argv[1], "order-", 6)) {
		if (len < 1 || len > ORDER_MAX) {
			fprintf(stderr, "cm-reject: N is 1..%d\n", ORDER_MAX);
			return 2;
		}
		if (get_addr(argv[2], argv[3], &ai))
			return 2;
		rv = !strcmp(argv[1], "order-server") ? order_server(ai, len) :
		     order_client(ai, len);
		freeaddrinfo(ai);
		return rv;
	}
	if (len < 0 || len > 255) {
		fprintf(stderr, "cm-reject: LEN is 0..255\n");
		return 2;
	}
	if (get_addr(argv[2], argv[3], &ai))
		return 2;
	if (!strcmp(argv[1], "server"))
		rv = server(ai, len);
	else
		rv = client(ai, len, atoi(argv[5]));
	freeaddrinfo(ai);
	return rv;
}
