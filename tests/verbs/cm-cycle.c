// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Connect/disconnect cycles through rdma_cm, as fast as the stack allows
 * (tests/cases/38-load.sh).  ucmatose pays a process start and a listener
 * per ten connections, which caps a TCG guest near 6 connections a second;
 * this keeps one listener and one event channel per process, so the cost
 * measured is the connection's own.
 *
 *   cm-cycle server ADDR PORT TOTAL
 *	accepts connections, each with a QP, until TOTAL have come and gone
 *	(DISCONNECTED, QP and cm_id destroyed); prints
 *	"server: accepted A established E closed C errors X" and exits 0 iff
 *	every connection was accepted, established and closed without error.
 *   cm-cycle client ADDR PORT CYCLES
 *	CYCLES times: resolve address and route, create a QP, connect, wait
 *	for ESTABLISHED, disconnect, wait for DISCONNECTED, destroy; prints
 *	"client: cycles N failed F in MS ms" and exits 0 iff none failed.
 *
 * With a fifth argument "speak" or "nudge" (on both ends), the server
 * speaks first: a zero-length Send once ESTABLISHED, and the client
 * disconnects only once it has received it (counted in the connect
 * step).  A siw responder needs it: siw can leave the RTR unread until
 * the next bytes arrive (Documentation/cm.md, "Known limits"), and a
 * client that disconnects at once then closes a connection siw has not
 * reported established, which ends in a BUG() in iw_cm's close handler
 * (a close for an id still in CONN_RECV).  A server that has spoken has
 * seen ESTABLISHED, so the client's close can no longer race it.  And
 * since the server then waits for ever for the RTR it left unread, a
 * "nudge" client that has not heard it after NUDGE_MS posts an
 * unsignaled zero-length Write to STag 0 (siw places it nowhere; a
 * strict responder may refuse the STag, so only towards siw), as a real
 * client's first message would unstick it, and counts it: "client: rtr
 * nudges N" (seen under a loaded TCG host, where without it the client's
 * close after its 30 s wait hit that BUG(); 38-load bounds the count).
 *
 * With "ping" (on both ends) the client speaks first, as RFC 5044 has an
 * initiator do where no RTR was negotiated: a zero-length Send once
 * ESTABLISHED, which the server answers with one; the client disconnects
 * once it has the answer.  A server that speaks first may put its Send in
 * the same read as its MPA Reply, which a siw initiator refuses (EPROTO,
 * a CONNECT_ERROR): siw to siw negotiates no RTR by default.  The bench
 * runs every configuration in this mode (tests/bench/perftest-wire.sh).
 *
 * Every wait has a time limit (30 s), so a lost event is a failure, not a
 * hang.  Ten failures in a row end the run.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <rdma/rdma_cma.h>

#include "common.h"

#define WAIT_MS		30000
#define NUDGE_MS	3000
#define RESOLVE_MS	5000

static struct ibv_pd *pd;
static struct ibv_cq *cq;
static struct ibv_context *pd_ctx;
/*
 * The client's receive for the server's zero-length Send: one SGE, since
 * siw's provider refuses a receive without any (EINVAL).
 */
static char rbuf[16];
static struct ibv_mr *rmr;

static int speak, nudge, ping, serving;
/* the server's CQ events (ping): the client's Sends to answer */
static struct ibv_comp_channel *cch;

static struct rdma_conn_param conn_param = {
	.initiator_depth = 1,
	.responder_resources = 1,
};

/* One PD and CQ per process: librdmacm shares a device's context. */
static int qp_make(struct rdma_cm_id *id)
{
	struct ibv_qp_init_attr qa = {
		.cap = { .max_send_wr = 2, .max_recv_wr = 2,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
	};

	if (!pd) {
		pd_ctx = id->verbs;
		pd = ibv_alloc_pd(id->verbs);
		cch = ping && serving ? ibv_create_comp_channel(id->verbs) : NULL;
		cq = pd && (cch || !ping || !serving) ?
			ibv_create_cq(id->verbs, 256, NULL, cch, 0) : NULL;
		if (cq && cch && ibv_req_notify_cq(cq, 0))
			cq = NULL;
		rmr = cq ? ibv_reg_mr(pd, rbuf, sizeof(rbuf),
				      IBV_ACCESS_LOCAL_WRITE) : NULL;
		if (!rmr) {
			perror("cm-cycle: PD or CQ");
			return -1;
		}
	}
	if (id->verbs != pd_ctx) {
		fprintf(stderr, "cm-cycle: a second device context\n");
		return -1;
	}
	qa.send_cq = cq;
	qa.recv_cq = cq;
	if (rdma_create_qp(id, pd, &qa)) {
		perror("cm-cycle: rdma_create_qp");
		return -1;
	}
	return 0;
}

/* a receive for the peer's zero-length Send, its wr_id the cm_id */
static int post_rbuf(struct rdma_cm_id *id)
{
	struct ibv_sge sge = { .addr = (uintptr_t)rbuf, .length = sizeof(rbuf),
			       .lkey = rmr->lkey };
	struct ibv_recv_wr rwr = { .wr_id = (uintptr_t)id, .sg_list = &sge,
				   .num_sge = 1 }, *bad;
	int rv = ibv_post_recv(id->qp, &rwr, &bad);

	/* providers return the error, some negated */
	if (rv)
		errno = rv < 0 ? -rv : rv;
	return rv ? -1 : 0;
}

/*
 * ping: answer each client's Send received (the CQ's event first, when
 * the channel had one); the errors counted
 */
static long answer_pings(int event)
{
	struct ibv_send_wr swr = { .opcode = IBV_WR_SEND }, *bad;
	struct ibv_wc wc[16];
	struct ibv_cq *ecq;
	long errors = 0;
	void *ctx;
	int n, i;

	if (event && ibv_get_cq_event(cch, &ecq, &ctx) == 0) {
		ibv_ack_cq_events(ecq, 1);
		ibv_req_notify_cq(cq, 0);
	}
	while ((n = ibv_poll_cq(cq, 16, wc)) > 0) {
		for (i = 0; i < n; i++) {
			struct rdma_cm_id *id = (void *)(uintptr_t)wc[i].wr_id;

			if (!ping || wc[i].opcode != IBV_WC_RECV ||
			    wc[i].status != IBV_WC_SUCCESS)
				continue;
			if (ibv_post_send(id->qp, &swr, &bad)) {
				fprintf(stderr, "cm-cycle server: answer: %s\n",
					strerror(errno));
				errors++;
			}
		}
	}
	return errors;
}

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static int server(struct rdma_event_channel *ch, struct sockaddr_in *sa,
		  long total)
{
	long accepted = 0, established = 0, closed = 0, errors = 0;
	struct rdma_cm_id *lid, *id;
	struct rdma_cm_event *ev;
	enum rdma_cm_event_type type;
	struct ibv_send_wr swr = { .opcode = IBV_WR_SEND }, *bad;
	int status;

	if (rdma_create_id(ch, &lid, NULL, RDMA_PS_TCP) ||
	    rdma_bind_addr(lid, (struct sockaddr *)sa) ||
	    rdma_listen(lid, 1024)) {
		perror("cm-cycle server: listen");
		return 1;
	}
	printf("server: listening\n");
	fflush(stdout);
	while (!stop && closed + errors < total) {
		struct pollfd pf[2] = {
			{ .fd = ch->fd, .events = POLLIN },
			{ .fd = cch ? cch->fd : -1, .events = POLLIN },
		};

		if (poll(pf, 2, 1000) < 0)
			continue;
		/* the clients' Sends (answered in ping) and the flushes */
		if (cq)
			errors += answer_pings(cch && (pf[1].revents & POLLIN));
		if (!(pf[0].revents & POLLIN))
			continue;
		ev = kiwi_cm_next(ch, 0);
		if (!ev)
			continue;
		id = ev->id;
		type = ev->event;
		status = ev->status;
		rdma_ack_cm_event(ev);
		switch (type) {
		case RDMA_CM_EVENT_CONNECT_REQUEST:
			if (qp_make(id) || (ping && post_rbuf(id)) ||
			    rdma_accept(id, &conn_param)) {
				fprintf(stderr, "cm-cycle server: accept: %s\n",
					strerror(errno));
				rdma_reject(id, NULL, 0);
				kiwi_cm_drop(id);
				errors++;
				break;
			}
			accepted++;
			break;
		case RDMA_CM_EVENT_ESTABLISHED:
			established++;
			/* unsignaled: nothing to poll for but errors */
			if (speak && !ping && ibv_post_send(id->qp, &swr, &bad)) {
				fprintf(stderr, "cm-cycle server: Send: %s\n",
					strerror(errno));
				errors++;
			}
			break;
		case RDMA_CM_EVENT_DISCONNECTED:
			kiwi_cm_drop(id);
			closed++;
			break;
		default:
			fprintf(stderr, "cm-cycle server: %s (status %d)\n",
				rdma_event_str(type), status);
			if (id != lid) {
				kiwi_cm_drop(id);
				errors++;
			}
			break;
		}
	}
	printf("server: accepted %ld established %ld closed %ld errors %ld\n",
	       accepted, established, closed, errors);
	rdma_destroy_id(lid);
	return !(accepted == total && established == total &&
		 closed == total && !errors);
}

/* where a cycle's time goes: ms summed over the cycles, per step */
enum { T_RESOLVE, T_QP, T_CONNECT, T_DISCONNECT, T_DESTROY, T_N };
static const char *const t_name[T_N] = {
	"resolve", "qp", "connect", "disconnect", "destroy"
};
static long long t_sum[T_N], t_max[T_N];
static long long t_mark;

static void lap(int step)
{
	long long now = kiwi_now_ms();

	t_sum[step] += now - t_mark;
	if (now - t_mark > t_max[step])
		t_max[step] = now - t_mark;
	t_mark = now;
}

static long nudges;

/*
 * The server's zero-length Send, received (the receive posted first); a
 * nudge for a siw server that left the RTR unread (see the top).
 */
static int hear(struct ibv_qp *qp)
{
	struct ibv_send_wr w = { .opcode = IBV_WR_RDMA_WRITE }, *bad;
	struct ibv_wc wc;
	int n;

	n = kiwi_poll_cq_n(cq, &wc, 1, nudge ? NUDGE_MS : WAIT_MS, NULL);
	if (n == 0 && nudge) {
		nudges++;
		if (ibv_post_send(qp, &w, &bad))
			return -1;
		n = kiwi_poll_cq_n(cq, &wc, 1, WAIT_MS - NUDGE_MS, NULL);
	}
	if (n != 1) {
		errno = ETIMEDOUT;
		return -1;
	}
	if (wc.status != IBV_WC_SUCCESS || wc.opcode != IBV_WC_RECV) {
		fprintf(stderr, "cm-cycle client: receive: %s\n",
			ibv_wc_status_str(wc.status));
		errno = EIO;
		return -1;
	}
	return 0;
}

/* One cycle; the step that failed on stderr. */
static int cycle(struct rdma_event_channel *ch, struct sockaddr_in *sa)
{
	struct ibv_send_wr swr = { .opcode = IBV_WR_SEND }, *bad;
	struct rdma_cm_id *id;
	const char *step;

	t_mark = kiwi_now_ms();
	if (rdma_create_id(ch, &id, NULL, RDMA_PS_TCP)) {
		perror("cm-cycle client: rdma_create_id");
		return -1;
	}
	step = "resolve address";
	if (rdma_resolve_addr(id, NULL, (struct sockaddr *)sa, RESOLVE_MS) ||
	    kiwi_cm_expect(ch, RDMA_CM_EVENT_ADDR_RESOLVED, WAIT_MS, NULL))
		goto fail;
	step = "resolve route";
	if (rdma_resolve_route(id, RESOLVE_MS) ||
	    kiwi_cm_expect(ch, RDMA_CM_EVENT_ROUTE_RESOLVED, WAIT_MS, NULL))
		goto fail;
	lap(T_RESOLVE);
	step = "create a QP";
	if (qp_make(id))
		goto fail;
	if (speak && post_rbuf(id))
		goto fail;
	lap(T_QP);
	step = "connect";
	if (rdma_connect(id, &conn_param) ||
	    kiwi_cm_expect(ch, RDMA_CM_EVENT_ESTABLISHED, WAIT_MS, NULL))
		goto fail;
	step = "ping";
	if (ping && ibv_post_send(id->qp, &swr, &bad))
		goto fail;
	step = ping ? "hear the answer" : "hear the server first";
	if (speak && hear(id->qp))
		goto fail;
	lap(T_CONNECT);
	step = "disconnect";
	if (rdma_disconnect(id) ||
	    kiwi_cm_expect(ch, RDMA_CM_EVENT_DISCONNECTED, WAIT_MS, NULL))
		goto fail;
	lap(T_DISCONNECT);
	kiwi_cm_drop(id);
	lap(T_DESTROY);
	return 0;
fail:
	fprintf(stderr, "cm-cycle client: %s failed (%s)\n", step,
		strerror(errno));
	kiwi_cm_drop(id);
	return -1;
}

static int client(struct rdma_event_channel *ch, struct sockaddr_in *sa,
		  long cycles)
{
	long n, failed = 0, in_row = 0;
	long long t0 = kiwi_now_ms();
	int i;

	for (n = 0; n < cycles && !stop && in_row < 10; n++) {
		if (cycle(ch, sa)) {
			failed++;
			in_row++;
		} else {
			in_row = 0;
		}
	}
	printf("client: cycles %ld failed %ld in %lld ms\n", n, failed,
	       kiwi_now_ms() - t0);
	if (speak)
		printf("client: rtr nudges %ld\n", nudges);
	printf("client: mean ms per cycle:");
	for (i = 0; i < T_N; i++)
		printf(" %s %.2f", t_name[i], n ? (double)t_sum[i] / n : 0.0);
	printf("\nclient: max ms of one step:");
	for (i = 0; i < T_N; i++)
		printf(" %s %lld", t_name[i], t_max[i]);
	printf("\n");
	return !(n == cycles && !failed);
}

int main(int argc, char **argv)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	struct rdma_event_channel *ch;
	long count;
	int rc;

	if (argc < 5 || argc > 6 ||
	    inet_pton(AF_INET, argv[2], &sa.sin_addr) != 1 ||
	    (count = atol(argv[4])) <= 0 ||
	    (argc == 6 && strcmp(argv[5], "speak") &&
	     strcmp(argv[5], "nudge") && strcmp(argv[5], "ping"))) {
		fprintf(stderr,
			"usage: cm-cycle server|client ADDR PORT COUNT [speak|nudge|ping]\n");
		return 2;
	}
	speak = argc == 6;
	nudge = speak && !strcmp(argv[5], "nudge");
	ping = speak && !strcmp(argv[5], "ping");
	serving = !strcmp(argv[1], "server");
	sa.sin_port = htons(atoi(argv[3]));
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	ch = rdma_create_event_channel();
	if (!ch) {
		perror("cm-cycle: rdma_create_event_channel");
		return 1;
	}
	if (!strcmp(argv[1], "server"))
		rc = server(ch, &sa, count);
	else if (!strcmp(argv[1], "client"))
		rc = client(ch, &sa, count);
	else
		rc = 2;
	if (cq)
		ibv_destroy_cq(cq);
	if (cch)
		ibv_destroy_comp_channel(cch);
	if (pd)
		ibv_dealloc_pd(pd);
	rdma_destroy_event_channel(ch);
	return rc;
}
