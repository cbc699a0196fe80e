// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Hold many connected, idle QPs, or one large MR, so that the kernel's
 * memory can be read around them (tests/bench/memory.sh, issue 15 point
 * 6).  Each program prints one line when its objects exist, then holds
 * them until SIGTERM or SIGINT and frees them.
 *
 *   qp-hold server ADDR PORT N
 *	accepts N connections, each with a QP (16 send and 16 receive WRs,
 *	one SGE, one shared CQ of CQ_DEPTH); prints "server: established N".
 *   qp-hold client ADDR PORT N
 *	opens N connections one after the other, each with the same QP;
 *	prints "client: progress I" every 100, then "client: established N".
 *   qp-hold mr DEVICE MIB
 *	registers MIB MiB of touched anonymous memory as one MR on DEVICE;
 *	prints "mr: registered PAGES pages".
 *
 * Every wait has a time limit (30 s); a failure exits 1 with the step
 * on stderr, 2 is a usage error.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <sys/mman.h>
#include <rdma/rdma_cma.h>

#include "common.h"

#define WAIT_MS		30000
#define RESOLVE_MS	5000
/* one CQ per process: a fixed cost, which cancels out of the per-QP figure */
#define CQ_DEPTH	64

static struct ibv_pd *pd;
static struct ibv_cq *cq;
static struct rdma_conn_param conn_param = {
	.initiator_depth = 1,
	.responder_resources = 1,
};

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static int qp_make(struct rdma_cm_id *id)
{
	struct ibv_qp_init_attr qa = {
		.cap = { .max_send_wr = 16, .max_recv_wr = 16,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
	};

	if (!pd) {
		pd = ibv_alloc_pd(id->verbs);
		cq = pd ? ibv_create_cq(id->verbs, CQ_DEPTH, NULL, NULL, 0) : NULL;
		if (!cq)
			return -1;
	}
	qa.send_cq = cq;
	qa.recv_cq = cq;
	return rdma_create_qp(id, pd, &qa);
}

static void hold(void)
{
	while (!stop)
		pause();
}

static int server(struct rdma_event_channel *ch, struct sockaddr_in *sa,
		  struct rdma_cm_id **ids, long n)
{
	struct rdma_cm_id *lid;
	struct rdma_cm_event *ev;
	long accepted = 0, established = 0;
	long long end;

	if (rdma_create_id(ch, &lid, NULL, RDMA_PS_TCP) ||
	    rdma_bind_addr(lid, (struct sockaddr *)sa) ||
	    rdma_listen(lid, 1024)) {
		perror("qp-hold server: listen");
		return 1;
	}
	printf("server: listening\n");
	fflush(stdout);
	end = kiwi_now_ms() + WAIT_MS;
	while (!stop && established < n && kiwi_now_ms() < end) {
		ev = kiwi_cm_next(ch, 1000);
		if (!ev)
			continue;
		end = kiwi_now_ms() + WAIT_MS;
		if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST &&
		    accepted < n) {
			ids[accepted] = ev->id;
			if (qp_make(ev->id) || rdma_accept(ev->id, &conn_param)) {
				perror("qp-hold server: accept");
				rdma_ack_cm_event(ev);
				return 1;
			}
			accepted++;
		} else if (ev->event == RDMA_CM_EVENT_ESTABLISHED) {
			established++;
		} else {
			fprintf(stderr, "qp-hold server: %s (status %d)\n",
				rdma_event_str(ev->event), ev->status);
			rdma_ack_cm_event(ev);
			return 1;
		}
		rdma_ack_cm_event(ev);
	}
	if (established < n) {
		fprintf(stderr, "qp-hold server: %ld of %ld established\n",
			established, n);
		return 1;
	}
	printf("server: established %ld\n", established);
	fflush(stdout);
	hold();
	return 0;
}

static int client(struct rdma_event_channel *ch, struct sockaddr_in *sa,
		  struct rdma_cm_id **ids, long n)
{
	const char *step = "rdma_create_id";
	long i;

	for (i = 0; i < n && !stop; i++) {
		if (rdma_create_id(ch, &ids[i], NULL, RDMA_PS_TCP))
			goto fail;
		step = "resolve";
		if (rdma_resolve_addr(ids[i], NULL, (struct sockaddr *)sa,
				      RESOLVE_MS) ||
		    kiwi_cm_expect(ch, RDMA_CM_EVENT_ADDR_RESOLVED, WAIT_MS,
				   NULL) ||
		    rdma_resolve_route(ids[i], RESOLVE_MS) ||
		    kiwi_cm_expect(ch, RDMA_CM_EVENT_ROUTE_RESOLVED, WAIT_MS,
				   NULL))
			goto fail;
		step = "create a QP";
		if (qp_make(ids[i]))
			goto fail;
		step = "connect";
		if (rdma_connect(ids[i], &conn_param) ||
		    kiwi_cm_expect(ch, RDMA_CM_EVENT_ESTABLISHED, WAIT_MS, NULL))
			goto fail;
		if ((i + 1) % 100 == 0) {
			printf("client: progress %ld\n", i + 1);
			fflush(stdout);
		}
	}
	if (i < n)
		return 1;
	printf("client: established %ld\n", n);
	fflush(stdout);
	hold();
	return 0;
fail:
	fprintf(stderr, "qp-hold client: connection %ld: %s failed (%s)\n",
		i, step, strerror(errno));
	return 1;
}

static int mr(const char *name, long mib)
{
	struct ibv_device **list;
	struct ibv_context *ctx = NULL;
	struct ibv_mr *m;
	size_t len = (size_t)mib << 20;
	char *buf;
	int i;

	list = ibv_get_device_list(NULL);
	for (i = 0; list && list[i]; i++)
		if (!strcmp(ibv_get_device_name(list[i]), name))
			ctx = ibv_open_device(list[i]);
	if (!ctx) {
		fprintf(stderr, "qp-hold mr: no device %s\n", name);
		return 1;
	}
	buf = mmap(NULL, len, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	pd = buf == MAP_FAILED ? NULL : ibv_alloc_pd(ctx);
	m = pd ? ibv_reg_mr(pd, buf, len, IBV_ACCESS_LOCAL_WRITE |
			    IBV_ACCESS_REMOTE_WRITE |
			    IBV_ACCESS_REMOTE_READ) : NULL;
	if (!m) {
		perror("qp-hold mr: ibv_reg_mr");
		return 1;
	}
	printf("mr: registered %zu pages\n", len / sysconf(_SC_PAGESIZE));
	fflush(stdout);
	hold();
	ibv_dereg_mr(m);
	ibv_dealloc_pd(pd);
	pd = NULL;
	ibv_close_device(ctx);
	ibv_free_device_list(list);
	munmap(buf, len);
	return 0;
}

int main(int argc, char **argv)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	struct rdma_event_channel *ch;
	struct rdma_cm_id **ids;
	long n, i;
	int rc;

	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	if (argc == 4 && !strcmp(argv[1], "mr") && atol(argv[3]) > 0)
		return mr(argv[2], atol(argv[3]));
	if (argc != 5 || inet_pton(AF_INET, argv[2], &sa.sin_addr) != 1 ||
	    (n = atol(argv[4])) <= 0 || n > 100000) {
		fprintf(stderr,
			"usage: qp-hold server|client ADDR PORT N | mr DEVICE MIB\n");
		return 2;
	}
	sa.sin_port = htons(atoi(argv[3]));
	ch = rdma_create_event_channel();
	ids = calloc(n, sizeof(*ids));
	if (!ch || !ids) {
		perror("qp-hold");
		return 1;
	}
	if (!strcmp(argv[1], "server"))
		rc = server(ch, &sa, ids, n);
	else if (!strcmp(argv[1], "client"))
		rc = client(ch, &sa, ids, n);
	else
		rc = 2;
	for (i = 0; i < n; i++)
		if (ids[i])
			kiwi_cm_drop(ids[i]);
	if (cq)
		ibv_destroy_cq(cq);
	if (pd)
		ibv_dealloc_pd(pd);
	rdma_destroy_event_channel(ch);
	free(ids);
	return rc;
}
