// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * One end of an rdma_cm connection that waits to be told it is dead
 * (tests/cases/36-faults.sh): it connects (client) or accepts one
 * connection (server), posts receives, writes READY_FILE, and then sends
 * nothing: an idle connection, the one only keepalive can judge.  When the
 * connection dies under it (TCP reset, a path gone past the device's TCP
 * user timeout or keepalive, the peer's namespace deleted) it prints when
 * it was told and how:
 *
 *   told <CLOCK_REALTIME ms> <how> flushed <n> of <posted>
 *
 * <how> is the first sign, a CM event (DISCONNECTED) or an error
 * completion's status; then it waits for the receives to be flushed and
 * exits 0.  Exit 1: not told within SECONDS (default 300), or a set-up
 * error.
 *
 *   liveness server|client ADDR PORT READY_FILE [SECONDS]
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <rdma/rdma_cma.h>

#include "common.h"

#define NRECV	8
#define BUFSZ	4096

int main(int argc, char **argv)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *lid = NULL, *id = NULL;
	struct ibv_qp_init_attr qa = {
		.cap = { .max_send_wr = 4, .max_recv_wr = NRECV,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
	};
	struct rdma_conn_param cp = { .initiator_depth = 1,
				      .responder_resources = 1 };
	struct sockaddr_in sa = { .sin_family = AF_INET };
	struct rdma_cm_event *ev;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	struct ibv_wc wc;
	const char *how = NULL;
	char *buf, howbuf[64];
	int server, seconds = 300, flushed = 0, posted = 0, i, n;
	long long told = 0, end;
	FILE *f;

	if (argc < 5 || !ch) {
		fprintf(stderr, "usage: liveness server|client ADDR PORT READY_FILE [SECONDS]\n");
		return 1;
	}
	server = !strcmp(argv[1], "server");
	if (argc > 5)
		seconds = atoi(argv[5]);
	sa.sin_port = htons(atoi(argv[3]));
	if (inet_pton(AF_INET, argv[2], &sa.sin_addr) != 1)
		return 1;

	if (server) {
		if (rdma_create_id(ch, &lid, NULL, RDMA_PS_TCP) ||
		    rdma_bind_addr(lid, (struct sockaddr *)&sa) ||
		    rdma_listen(lid, 1)) {
			perror("listen");
			return 1;
		}
		if (kiwi_cm_expect(ch, RDMA_CM_EVENT_CONNECT_REQUEST, 30000,
				   &id))
			return 1;
	} else {
		if (rdma_create_id(ch, &id, NULL, RDMA_PS_TCP) ||
		    rdma_resolve_addr(id, NULL, (struct sockaddr *)&sa, 5000)) {
			perror("resolve");
			return 1;
		}
		if (kiwi_cm_expect(ch, RDMA_CM_EVENT_ADDR_RESOLVED, 30000, NULL))
			return 1;
		if (rdma_resolve_route(id, 5000))
			return 1;
		if (kiwi_cm_expect(ch, RDMA_CM_EVENT_ROUTE_RESOLVED, 30000, NULL))
			return 1;
	}

	buf = calloc(NRECV + 1, BUFSZ);
	cq = ibv_create_cq(id->verbs, 2 * NRECV + 8, NULL, NULL, 0);
	if (!buf || !cq)
		return 1;
	qa.send_cq = cq;
	qa.recv_cq = cq;
	if (rdma_create_qp(id, NULL, &qa)) {
		perror("rdma_create_qp");
		return 1;
	}
	mr = ibv_reg_mr(id->pd, buf, (NRECV + 1) * BUFSZ,
			IBV_ACCESS_LOCAL_WRITE);
	if (!mr)
		return 1;
	for (i = 0; i < NRECV; i++) {
		struct ibv_sge sg = { (uintptr_t)buf + (i + 1) * BUFSZ, BUFSZ,
				      mr->lkey };
		struct ibv_recv_wr wr = { .wr_id = i, .sg_list = &sg,
					  .num_sge = 1 }, *bad;

		if (ibv_post_recv(id->qp, &wr, &bad))
			return 1;
		posted++;
	}
	if (server ? rdma_accept(id, &cp) : rdma_connect(id, &cp)) {
		perror("accept/connect");
		return 1;
	}
	if (kiwi_cm_expect(ch, RDMA_CM_EVENT_ESTABLISHED, 30000, NULL))
		return 1;
	f = fopen(argv[4], "w");
	if (!f)
		return 1;
	fclose(f);

	/* told: the first sign of death; then the flushes of the receives */
	end = kiwi_now_ms() + seconds * 1000LL;
	while (flushed < posted && kiwi_now_ms() < end) {
		while ((n = ibv_poll_cq(cq, 1, &wc)) > 0) {
			if (wc.status == IBV_WC_SUCCESS) {
				fprintf(stderr, "unexpected completion\n");
				return 1;
			}
			if (!how) {
				snprintf(howbuf, sizeof(howbuf), "wc:%s",
					 ibv_wc_status_str(wc.status));
				how = howbuf;
				told = kiwi_clock_ms(CLOCK_REALTIME);
			}
			if (wc.wr_id < NRECV && wc.status == IBV_WC_WR_FLUSH_ERR)
				flushed++;
		}
		if (n < 0)
			return 1;
		ev = kiwi_cm_next(ch, 20);
		if (ev) {
			if (!how) {
				snprintf(howbuf, sizeof(howbuf), "cm:%s",
					 rdma_event_str(ev->event));
				how = howbuf;
				told = kiwi_clock_ms(CLOCK_REALTIME);
			}
			rdma_ack_cm_event(ev);
		}
	}
	if (!how) {
		printf("not told within %d s\n", seconds);
		return 1;
	}
	printf("told %lld %s flushed %d of %d\n", told, how, flushed, posted);
	fflush(stdout);
	rdma_disconnect(id);
	ibv_dereg_mr(mr);
	rdma_destroy_qp(id);
	ibv_destroy_cq(cq);
	rdma_destroy_id(id);
	if (lid)
		rdma_destroy_id(lid);
	rdma_destroy_event_channel(ch);
	free(buf);
	return flushed == posted ? 0 : 1;
}
