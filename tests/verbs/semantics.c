// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * semantics: what a verbs user observes of kiwi's data path, error cases
 * first.  Prints TAP.  Runs inside the test VM (tests/cases/62-semantics.sh)
 * with a veth pair, the server end in a network namespace, an RDMA link on
 * each end; both ends of every connection live in this one process (the
 * listener is created inside the namespace), except for the kill scenarios,
 * whose client is a child process (this program re-executed) killed with
 * SIGKILL in the middle of a stream.
 *
 *   semantics -c 198.18.0.1 -s 198.18.0.2 -n /var/run/netns/NS
 *             [-p PORT] [-t TESTS] [-P siw] [-L]
 *
 * -t runs only the named groups (comma separated: sqfull, lkey, order,
 * access, qpaccess, steal, memops, rnic, zero, sge, caps, qpcaps, large,
 * kill; ringfuzz only when named, with -S SEED and -D SECONDS); qpcaps:
 * posts beyond the QP's (SRQ's) own SGE and inline caps, and WQEs beyond
 * them written into the mapped rings; rnic writes the client
 * device's rnic_strict and puts it back to 1; -P siw says the server end
 * is siw, whose responder-side events, QP state and invalidation flag are
 * not checked (and whose missing remote read check is not tested); -L
 * adds a 32 MiB Write refused while still in flight.  One connection per scenario, a
 * fresh one after each that breaks the QP.  After each scenario kiwi's QP,
 * MR, CQ and PD counts must be back where they were (librdmacm keeps a PD
 * of its own while the listener exists).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "kiwi-abi.h"
#include "kiwi-tap.h"
#include "kiwi-objects.h"
#include "common.h"

#define MAX_MRS		16
#define T_CM		20000	/* ms for connection management steps */
#define T_SIW_RTR	3000	/* ms before looking for siw's unread RTR */
#define T_WC		20000	/* ms for completions of small WRs */
#define T_BIG		180000	/* ms for 64 MiB under TCG */
#define MIB		(1024 * 1024)

static const char *cli_ip = "198.18.0.1";
static const char *srv_ip = "198.18.0.2";
static const char *ns_path;
static const char *tests = "all";
static int port = 20886;
static bool peer_siw;
static bool long_sizes;

static bool want(const char *group)
{
	size_t n = strlen(group);
	const char *p = tests;

	if (!strcmp(tests, "all"))
		return true;
	while ((p = strstr(p, group))) {
		if ((p == tests || p[-1] == ',') && (p[n] == ',' || !p[n]))
			return true;
		p += n;
	}
	return false;
}

/* ---- byte patterns ------------------------------------------------------ */

/* xorshift64 bytes: misplaced or shifted data never compares equal */
static void fill(void *buf, size_t len, uint64_t seed)
{
	uint64_t x = seed * 0x9e3779b97f4a7c15ULL | 1, *w = buf;
	uint8_t *b = buf;
	size_t i, n = len / 8;

	for (i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		memcpy(&w[i], &x, 8);
	}
	for (i = n * 8; i < len; i++)
		b[i] = (uint8_t)(x >> (i % 8 * 8)) ^ (uint8_t)i;
}

/* -1 when equal, else the first differing offset */
static long diff_at(const void *a, const void *b, size_t len)
{
	const uint8_t *x = a, *y = b;
	size_t i;

	if (!memcmp(a, b, len))
		return -1;
	for (i = 0; i < len && x[i] == y[i]; i++)
		;
	return (long)i;
}

static void *big_alloc(size_t len)
{
	void *p = NULL;

	if (posix_memalign(&p, 4096, len))
		return NULL;
	memset(p, 0, len);
	return p;
}


/* what this process holds outside the scenarios (librdmacm's own PD) */
static long base_count[4];

/* qps, mrs, cqs and pds back to the baseline (freed asynchronously) */
static void check_counts(const char *after)
{
	static const char * const names[] = { "qps", "mrs", "cqs", "pds" };
	char why[256];
	int tries, i;
	bool zero = false;

	for (tries = 0; tries < 100 && !zero; tries++) {
		if (tries)
			usleep(100000);
		zero = true;
		why[0] = 0;
		for (i = 0; i < 4; i++) {
			long v = kiwi_count(names[i]);

			if (v != base_count[i]) {
				size_t l = strlen(why);

				snprintf(why + l, sizeof(why) - l, " %s=%ld",
					 names[i], v);
				zero = false;
			}
		}
	}
	ok(zero, "kiwi QP, MR, CQ and PD counts back where they were after %s%s",
	   after, why);
}

/* ---- the two ends of a connection --------------------------------------- */

struct side {
	const char *name;
	struct rdma_cm_id *id;
	struct ibv_pd *pd;
	struct ibv_pd *pd2;		/* another PD on the same device */
	struct ibv_cq *scq;
	struct ibv_cq *rcq;
	struct ibv_qp *qp;
	struct ibv_mr *mr[MAX_MRS];
	int nmr;
	bool requested, established, disconnected;
	int failed;			/* an error CM event */
	int ev[32];			/* async events of our QP, by type */
	uint8_t pdata[64];		/* private data received */
	uint8_t pdlen;
	/* the server: its request's; the client: its ESTABLISHED's */
	uint8_t init_depth, resp_res;
	struct ibv_qp_cap cap;		/* as rdma_create_qp() returned them */
};

static struct side cli = { .name = "client" }, srv = { .name = "server" };
static struct rdma_event_channel *cch, *lch;
static struct rdma_cm_id *listen_id;
static struct ibv_context *nb_ctx[8];	/* async fds made non-blocking */

static void async_nonblock(struct ibv_context *ctx)
{
	int i, fl;

	for (i = 0; i < 8 && nb_ctx[i]; i++)
		if (nb_ctx[i] == ctx)
			return;
	if (i == 8)
		return;
	nb_ctx[i] = ctx;
	fl = fcntl(ctx->async_fd, F_GETFL);
	fcntl(ctx->async_fd, F_SETFL, fl | O_NONBLOCK);
}

static bool qp_event(enum ibv_event_type t)
{
	switch (t) {
	case IBV_EVENT_QP_FATAL:
	case IBV_EVENT_QP_REQ_ERR:
	case IBV_EVENT_QP_ACCESS_ERR:
	case IBV_EVENT_COMM_EST:
	case IBV_EVENT_SQ_DRAINED:
	case IBV_EVENT_QP_LAST_WQE_REACHED:
		return true;
	default:
		return false;
	}
}

static void async_drain(struct ibv_context *ctx)
{
	struct ibv_async_event ev;

	while (!ibv_get_async_event(ctx, &ev)) {
		if (qp_event(ev.event_type) && (unsigned)ev.event_type < 32) {
			if (cli.qp && ev.element.qp == cli.qp)
				cli.ev[ev.event_type]++;
			else if (srv.qp && ev.element.qp == srv.qp)
				srv.ev[ev.event_type]++;
		}
		ibv_ack_async_event(&ev);
	}
}

static struct side *side_of(struct rdma_cm_id *id)
{
	if (id && id == cli.id)
		return &cli;
	if (id && id == srv.id)
		return &srv;
	return NULL;
}

static void cm_handle(struct rdma_cm_event *ev)
{
	struct side *s = side_of(ev->id);
	const struct rdma_conn_param *cp = &ev->param.conn;

	switch (ev->event) {
	case RDMA_CM_EVENT_CONNECT_REQUEST:
		if (srv.id) {
			diag("unexpected second connect request");
			rdma_reject(ev->id, NULL, 0);
			break;
		}
		srv.id = ev->id;
		srv.requested = true;
		srv.init_depth = cp->initiator_depth;
		srv.resp_res = cp->responder_resources;
		srv.pdlen = cp->private_data_len < sizeof(srv.pdata) ?
			cp->private_data_len : sizeof(srv.pdata);
		if (cp->private_data)
			memcpy(srv.pdata, cp->private_data, srv.pdlen);
		break;
	case RDMA_CM_EVENT_ESTABLISHED:
		if (!s)
			break;
		s->established = true;
		/* the server end keeps what came with the request */
		if (s != &cli)
			break;
		s->init_depth = cp->initiator_depth;
		s->resp_res = cp->responder_resources;
		s->pdlen = cp->private_data_len < sizeof(s->pdata) ?
			cp->private_data_len : sizeof(s->pdata);
		if (cp->private_data)
			memcpy(s->pdata, cp->private_data, s->pdlen);
		break;
	case RDMA_CM_EVENT_DISCONNECTED:
		if (s)
			s->disconnected = true;
		break;
	case RDMA_CM_EVENT_ADDR_ERROR:
	case RDMA_CM_EVENT_ROUTE_ERROR:
	case RDMA_CM_EVENT_CONNECT_ERROR:
	case RDMA_CM_EVENT_UNREACHABLE:
	case RDMA_CM_EVENT_REJECTED:
		diag("%s: %s (status %d)", s ? s->name : "?",
		     rdma_event_str(ev->event), ev->status);
		if (s)
			s->failed = ev->event;
		break;
	default:
		break;
	}
}

/* Handle what arrives on the CM channels and async fds for up to ms. */
static void pump(int ms)
{
	struct pollfd pf[2 + 8];
	struct rdma_cm_event *ev;
	int n = 0, i;

	pf[n].fd = cch->fd;
	pf[n++].events = POLLIN;
	pf[n].fd = lch->fd;
	pf[n++].events = POLLIN;
	for (i = 0; i < 8 && nb_ctx[i]; i++) {
		pf[n].fd = nb_ctx[i]->async_fd;
		pf[n++].events = POLLIN;
	}
	if (poll(pf, n, ms) <= 0)
		return;
	if (pf[0].revents & POLLIN) {
		if (!rdma_get_cm_event(cch, &ev)) {
			cm_handle(ev);
			rdma_ack_cm_event(ev);
		}
	}
	if (pf[1].revents & POLLIN) {
		if (!rdma_get_cm_event(lch, &ev)) {
			cm_handle(ev);
			rdma_ack_cm_event(ev);
		}
	}
	for (i = 2; i < n; i++)
		if (pf[i].revents & POLLIN)
			async_drain(nb_ctx[i - 2]);
}

static bool wait_flag(const bool *flag, const int *failed, int ms)
{
	long long end = kiwi_now_ms() + ms;

	while (!*flag && !(failed && *failed) && kiwi_now_ms() < end)
		pump(50);
	return *flag;
}

static bool wait_async(struct side *s, enum ibv_event_type t, int ms)
{
	long long end = kiwi_now_ms() + ms;

	while (!s->ev[t] && kiwi_now_ms() < end)
		pump(50);
	return s->ev[t] > 0;
}

static struct ibv_mr *side_reg(struct side *s, void *buf, size_t len,
			       int access)
{
	struct ibv_mr *mr;

	if (s->nmr == MAX_MRS)
		return NULL;
	mr = ibv_reg_mr(s->pd, buf, len, access);
	if (!mr)
		diag("%s: ibv_reg_mr(%zu bytes): %s", s->name, len,
		     strerror(errno));
	else
		s->mr[s->nmr++] = mr;
	return mr;
}

/* Deregister one MR now (it leaves the side's list). */
static int side_dereg(struct side *s, struct ibv_mr *mr)
{
	int i;

	for (i = 0; i < s->nmr; i++) {
		if (s->mr[i] != mr)
			continue;
		s->mr[i] = s->mr[--s->nmr];
		return ibv_dereg_mr(mr);
	}
	return EINVAL;
}

struct qp_opts {
	uint32_t send_wr;
	uint32_t recv_wr;
	uint32_t send_sge;		/* 0: the device's max_sge */
	uint32_t recv_sge;		/* 0: the device's max_sge */
	uint32_t inline_data;
};

static const struct qp_opts qp_default = { .send_wr = 16, .recv_wr = 16 };

/* PD, CQs and QP on the side's cm_id (its device is known by now). */
static bool side_setup(struct side *s, const struct qp_opts *o)
{
	struct ibv_qp_init_attr qa = {
		.qp_type = IBV_QPT_RC,
		.cap = {
			.max_send_wr = o->send_wr,
			.max_recv_wr = o->recv_wr,
			.max_send_sge = 1,
			.max_recv_sge = 1,
		},
	};
	struct ibv_context *ctx = s->id->verbs;
	struct ibv_device_attr da;

	if (ibv_query_device(ctx, &da)) {
		diag("%s: ibv_query_device: %s", s->name, strerror(errno));
		return false;
	}
	qa.cap.max_send_sge = o->send_sge ? o->send_sge : (uint32_t)da.max_sge;
	qa.cap.max_recv_sge = o->recv_sge ? o->recv_sge : (uint32_t)da.max_sge;
	qa.cap.max_inline_data = o->inline_data;
	async_nonblock(ctx);
	async_drain(ctx);
	s->pd = ibv_alloc_pd(ctx);
	s->pd2 = ibv_alloc_pd(ctx);
	s->scq = ibv_create_cq(ctx, 1024, NULL, NULL, 0);
	s->rcq = ibv_create_cq(ctx, 1024, NULL, NULL, 0);
	if (!s->pd || !s->pd2 || !s->scq || !s->rcq) {
		diag("%s: PD/CQ: %s", s->name, strerror(errno));
		return false;
	}
	qa.send_cq = s->scq;
	qa.recv_cq = s->rcq;
	if (rdma_create_qp(s->id, s->pd, &qa)) {
		diag("%s: rdma_create_qp: %s", s->name, strerror(errno));
		return false;
	}
	s->qp = s->id->qp;
	s->cap = qa.cap;
	return true;
}

static void side_free(struct side *s)
{
	int i;

	if (s->qp)
		rdma_destroy_qp(s->id);
	s->qp = NULL;
	for (i = 0; i < s->nmr; i++)
		ibv_dereg_mr(s->mr[i]);
	s->nmr = 0;
	if (s->scq)
		ibv_destroy_cq(s->scq);
	if (s->rcq)
		ibv_destroy_cq(s->rcq);
	if (s->pd2)
		ibv_dealloc_pd(s->pd2);
	if (s->pd)
		ibv_dealloc_pd(s->pd);
	if (s->id)
		rdma_destroy_id(s->id);
	memset(&s->id, 0, sizeof(*s) - offsetof(struct side, id));
}

/* the client's rdma_cm_id, its address and route resolved, no QP yet */
static bool conn_resolve(void)
{
	struct sockaddr_in src, dst;

	return !kiwi_sockaddr_in(&src, cli_ip, 0) &&
	       !kiwi_sockaddr_in(&dst, srv_ip, port) &&
	       !kiwi_cm_resolve(cch, (struct sockaddr *)&src,
				(struct sockaddr *)&dst, 5000, T_CM, &cli.id);
}

/* Client: resolve, create its QP (INIT).  The server end waits. */
static bool conn_prepare(const struct qp_opts *o)
{
	return conn_resolve() && side_setup(&cli, o);
}

static const struct rdma_conn_param conn_param = {
	.initiator_depth = 8,
	.responder_resources = 8,
	.retry_count = 7,
	.rnr_retry_count = 7,
};

/*
 * Both ends' TCP sockets, for a connection that did not come up: bytes
 * left unread in a Recv-Q show which side stopped reading.
 */
static void dump_sockets(void)
{
	char cmd[512];
	const char *name = ns_path ? strrchr(ns_path, '/') : NULL;

	snprintf(cmd, sizeof(cmd),
		 "{ ss -tnoi; %s%s%s; } 2>&1 | sed 's/^/# /'",
		 name ? "ip netns exec " : "", name ? name + 1 : "",
		 name ? " ss -tnoi" : "");
	fflush(stdout);
	if (system(cmd) == -1)
		diag("ss: %s", strerror(errno));
}

/*
 * siw, as the peer-to-peer responder, hands its socket to the RTR reader
 * only after its MPA Reply has gone (siw_accept()): an RTR arriving in
 * between is left in the socket unread until more bytes come, and a
 * server waiting for ESTABLISHED waits for ever.  Seen under TCG in about
 * one kiwi-to-siw connection in forty.  A real client's first message
 * unsticks it; here, only when the server's socket shows unread bytes
 * after T_SIW_RTR, an unsignaled zero-length Write (which siw places
 * nowhere) does.  Returns whether the server then saw ESTABLISHED.
 */
static int post(struct ibv_qp *qp, enum ibv_wr_opcode op, uint64_t id,
		struct ibv_sge *sg, int nsge, uint32_t rkey, uint64_t raddr,
		unsigned int flags);

/* how often siw_rtr_unread() had to send the Write: its race, or ours */
static int siw_rtr_fixes;

static bool siw_rtr_unread(void)
{
	const char *name = ns_path ? strrchr(ns_path, '/') : NULL;
	char cmd[256];
	int recvq = -1;
	FILE *f;

	if (!peer_siw || srv.failed || !name)
		return false;
	snprintf(cmd, sizeof(cmd),
		 "ip netns exec %s ss -tnH state established '( sport = :%d )'",
		 name + 1, port);
	f = popen(cmd, "r");
	if (!f)
		return false;
	if (fscanf(f, "%d", &recvq) != 1)
		recvq = -1;
	pclose(f);
	if (recvq <= 0)
		return false;
	diag("siw left %d bytes (the RTR) unread: its accept race; "
	     "a zero-length Write follows", recvq);
	siw_rtr_fixes++;
	if (post(cli.qp, IBV_WR_RDMA_WRITE, 0, NULL, 0, 0, 0, 0)) {
		diag("zero-length Write: %s", strerror(errno));
		return false;
	}
	return wait_flag(&srv.established, &srv.failed, T_CM);
}

/* Connect; the server end gets its request and its QP. */
static bool conn_request(const struct qp_opts *o, const void *pd, uint8_t len)
{
	struct rdma_conn_param p = conn_param;

	p.private_data = pd;
	p.private_data_len = len;
	if (rdma_connect(cli.id, &p)) {
		diag("rdma_connect: %s", strerror(errno));
		return false;
	}
	if (!wait_flag(&srv.requested, NULL, T_CM)) {
		diag("no connect request at the server");
		return false;
	}
	return side_setup(&srv, o);
}

static bool conn_accept(const void *pd, uint8_t len)
{
	struct rdma_conn_param p = conn_param;

	p.private_data = pd;
	p.private_data_len = len;
	if (rdma_accept(srv.id, &p)) {
		diag("rdma_accept: %s", strerror(errno));
		return false;
	}
	if (!wait_flag(&cli.established, &cli.failed, T_CM)) {
		diag("the client saw no ESTABLISHED (failed %d)", cli.failed);
		return false;
	}
	if (!wait_flag(&srv.established, &srv.failed,
		       peer_siw ? T_SIW_RTR : T_CM) &&
	    !siw_rtr_unread()) {
		diag("the server saw no ESTABLISHED (failed %d)", srv.failed);
		dump_sockets();
		return false;
	}
	return true;
}

static bool conn_open(const struct qp_opts *o)
{
	bool up = conn_prepare(o);

	if (!up)
		diag("address or route resolution, or the client's QP, failed");
	up = up && conn_request(o, NULL, 0) && conn_accept(NULL, 0);
	if (!up)
		ok(false, "connection established");
	return up;
}

/* Disconnect if still connected (both ends must see it), free both ends. */
static void conn_close(void)
{
	if (cli.established && !cli.disconnected && !srv.disconnected &&
	    !cli.failed) {
		rdma_disconnect(cli.id);
		wait_flag(&cli.disconnected, NULL, T_CM);
		wait_flag(&srv.disconnected, NULL, T_CM);
		if (!cli.disconnected || !srv.disconnected)
			ok(false, "orderly disconnect seen by both ends");
	}
	side_free(&cli);
	side_free(&srv);
}

/* ---- posting and completions -------------------------------------------- */

static int post(struct ibv_qp *qp, enum ibv_wr_opcode op, uint64_t id,
		struct ibv_sge *sg, int nsge, uint32_t rkey, uint64_t raddr,
		unsigned int flags)
{
	struct ibv_send_wr wr = {
		.wr_id = id,
		.sg_list = sg,
		.num_sge = nsge,
		.opcode = op,
		.send_flags = flags,
	}, *bad = NULL;

	wr.wr.rdma.rkey = rkey;
	wr.wr.rdma.remote_addr = raddr;
	return ibv_post_send(qp, &wr, &bad);
}

static int post_recv(struct ibv_qp *qp, uint64_t id, struct ibv_sge *sg,
		     int nsge)
{
	struct ibv_recv_wr wr = {
		.wr_id = id,
		.sg_list = sg,
		.num_sge = nsge,
	}, *bad = NULL;

	return ibv_post_recv(qp, &wr, &bad);
}

static struct ibv_sge sge(struct ibv_mr *mr, void *addr, uint32_t len)
{
	struct ibv_sge s = {
		.addr = (uintptr_t)addr,
		.length = len,
		.lkey = mr->lkey,
	};

	return s;
}

/* Between empty polls, the connection manager's and the devices' events. */
static void pump1(void)
{
	pump(1);
}

static int poll_n(struct ibv_cq *cq, struct ibv_wc *wc, int n, int ms)
{
	return kiwi_poll_cq_n(cq, wc, n, ms, pump1);
}

/* nothing more on cq within ms */
static bool cq_quiet(struct ibv_cq *cq, int ms)
{
	struct ibv_wc wc;
	int n = poll_n(cq, &wc, 1, ms);

	if (n)
		diag("unexpected completion: wr_id %" PRIu64 " %s",
		     wc.wr_id, ibv_wc_status_str(wc.status));
	return !n;
}

/* one completion on cq: wr_id, status and (if bytes >= 0) byte_len */
static bool expect_wc(struct ibv_cq *cq, uint64_t id,
		      enum ibv_wc_status st, long bytes, int ms,
		      const char *what)
{
	struct ibv_wc wc;
	bool good;

	if (poll_n(cq, &wc, 1, ms) != 1) {
		ok(false, "%s: %s (no completion)", what,
		   ibv_wc_status_str(st));
		return false;
	}
	good = wc.wr_id == id && wc.status == st &&
		(bytes < 0 || wc.byte_len == (uint32_t)bytes);
	ok(good, "%s: wr_id %" PRIu64 " %s%s", what, id, ibv_wc_status_str(st),
	   bytes >= 0 ? ", byte_len as sent" : "");
	if (!good)
		diag("got wr_id %" PRIu64 " %s (%d) byte_len %u vendor_err %u",
		     wc.wr_id, ibv_wc_status_str(wc.status), wc.status,
		     wc.byte_len, wc.vendor_err);
	return good;
}

static enum ibv_qp_state qp_state(struct ibv_qp *qp)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;

	if (ibv_query_qp(qp, &a, IBV_QP_STATE, &ia))
		return (enum ibv_qp_state)-1;
	return a.qp_state;
}

static const char *state_str(enum ibv_qp_state s)
{
	static const char * const n[] = {
		"RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR"
	};

	return (unsigned int)s < 7 ? n[s] : "?";
}

static void expect_state(struct side *s, enum ibv_qp_state want,
			 const char *what)
{
	enum ibv_qp_state st = qp_state(s->qp);

	ok(st == want, "%s: %s QP in %s (ibv_query_qp: %s)", what, s->name,
	   state_str(want), state_str(st));
}

/* ---- SQ full ------------------------------------------------------------ */

/*
 * Before the connection exists the QP is in INIT and keeps what is posted
 * (iWARP verbs allow that): a chain longer than the SQ fills it, the call
 * fails with ENOMEM and bad_wr names the first WR not posted; the posted
 * ones run once connected (zero-length Sends into posted receives).
 */
static void t_sq_full(void)
{
	struct ibv_send_wr wr[64], *bad = NULL;
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;
	struct ibv_wc wc[64];
	uint32_t n, i, good;
	int rv, got;

	if (!conn_prepare(&(struct qp_opts){ .send_wr = 8, .recv_wr = 16 })) {
		ok(false, "SQ full: client QP created");
		conn_close();
		return;
	}
	ibv_query_qp(cli.qp, &a, IBV_QP_CAP, &ia);
	n = ia.cap.max_send_wr;
	ok(n >= 8 && n <= 62, "SQ full: max_send_wr %u (asked for 8)", n);
	if (n < 8 || n > 62) {
		conn_close();
		return;
	}
	memset(wr, 0, sizeof(wr));
	for (i = 0; i < n + 2; i++) {
		wr[i].wr_id = 1000 + i;
		wr[i].opcode = IBV_WR_SEND;
		wr[i].send_flags = IBV_SEND_SIGNALED;
		wr[i].next = i + 1 < n + 2 ? &wr[i + 1] : NULL;
	}
	rv = ibv_post_send(cli.qp, wr, &bad);
	ok(rv == ENOMEM, "SQ full: posting %u WRs on a %u-slot SQ fails with ENOMEM (got %s)",
	   n + 2, n, rv ? strerror(rv) : "success");
	ok(bad == &wr[n], "SQ full: bad_wr is the first WR not posted (index %ld, want %u)",
	   bad ? (long)(bad - wr) : -1L, n);
	rv = ibv_post_send(cli.qp, &wr[n + 1], &bad);
	ok(rv == ENOMEM && bad == &wr[n + 1],
	   "SQ full: one more WR alone fails with ENOMEM too");

	if (!conn_request(&qp_default, NULL, 0)) {
		conn_close();
		return;
	}
	for (i = 0; i < n; i++)
		post_recv(srv.qp, 2000 + i, NULL, 0);
	if (!conn_accept(NULL, 0)) {
		ok(false, "SQ full: connection established");
		conn_close();
		return;
	}
	got = poll_n(cli.scq, wc, n, T_WC);
	for (i = 0, good = 0; i < (uint32_t)got; i++)
		good += wc[i].status == IBV_WC_SUCCESS &&
			wc[i].wr_id == 1000 + i && wc[i].opcode == IBV_WC_SEND;
	ok(got == (int)n && good == n,
	   "SQ full: the %u WRs posted complete in order once connected (%d of %d)",
	   n, good, got);
	got = poll_n(srv.rcq, wc, n, T_WC);
	for (i = 0, good = 0; i < (uint32_t)got; i++)
		good += wc[i].status == IBV_WC_SUCCESS &&
			wc[i].wr_id == 2000 + i && wc[i].byte_len == 0 &&
			wc[i].opcode == IBV_WC_RECV;
	ok(got == (int)n && good == n,
	   "SQ full: the peer receives %u zero-length Sends (%d of %d)", n,
	   good, got);
	ok(cq_quiet(cli.scq, 200), "SQ full: nothing else completes");
	conn_close();
	check_counts("SQ full");
}

/* ---- local protection errors -------------------------------------------- */

enum lkey_case { LK_BAD_INDEX, LK_OTHER_PD, LK_OUTSIDE, LK_READ_NO_LW };

/*
 * A connection, the client's MR of 8 KiB at cbuf, the server's (local
 * write and both remote rights) at sbuf, and two receives (wr_id 50, 51)
 * posted at the server.  conn_close() undoes it, whatever was made.
 */
static bool lkey_open(char *cbuf, char *sbuf, struct ibv_mr **cmr,
		      struct ibv_mr **smr)
{
	struct ibv_sge rs;

	if (!cbuf || !sbuf || !conn_open(&qp_default))
		return false;
	*cmr = side_reg(&cli, cbuf, 8192, IBV_ACCESS_LOCAL_WRITE);
	*smr = side_reg(&srv, sbuf, 8192, IBV_ACCESS_LOCAL_WRITE |
			IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	if (!*cmr || !*smr)
		return false;
	rs = sge(*smr, sbuf, 8192);
	post_recv(srv.qp, 50, &rs, 1);
	post_recv(srv.qp, 51, &rs, 1);
	return true;
}

static void t_lkey(enum lkey_case c)
{
	static const char * const names[] = {
		[LK_BAD_INDEX] = "lkey naming no MR",
		[LK_OTHER_PD] = "lkey of an MR of another PD",
		[LK_OUTSIDE] = "SGE reaching past its MR's end",
		[LK_READ_NO_LW] = "Read into an MR without local write",
	};
	const char *what = names[c];
	char *cbuf = big_alloc(65536), *sbuf = big_alloc(65536);
	struct ibv_mr *cmr, *omr = NULL, *smr;
	struct ibv_sge sg;
	char msg[160];
	int rv;

	if (!lkey_open(cbuf, sbuf, &cmr, &smr))
		goto out;
	sg = sge(cmr, cbuf, 100);
	switch (c) {
	case LK_BAD_INDEX:
		/* another STag index; the key byte is the MR's own */
		sg.lkey = cmr->lkey ^ 0x7f00;
		break;
	case LK_OTHER_PD:
		omr = ibv_reg_mr(cli.pd2, cbuf + 16384, 4096,
				 IBV_ACCESS_LOCAL_WRITE);
		if (!omr)
			goto out;
		cli.mr[cli.nmr++] = omr;
		sg = sge(omr, cbuf + 16384, 100);
		break;
	case LK_OUTSIDE:
		sg = sge(cmr, cbuf + 8192 - 50, 100);
		break;
	case LK_READ_NO_LW:
		omr = side_reg(&cli, cbuf + 16384, 4096, 0);
		if (!omr)
			goto out;
		sg = sge(omr, cbuf + 16384, 100);
		break;
	}
	if (c == LK_READ_NO_LW)
		rv = post(cli.qp, IBV_WR_RDMA_READ, 1, &sg, 1, smr->rkey,
			  (uintptr_t)sbuf, IBV_SEND_SIGNALED);
	else
		rv = post(cli.qp, IBV_WR_SEND, 1, &sg, 1, 0, 0,
			  IBV_SEND_SIGNALED);
	ok(!rv, "%s: posted (errors show in the completion)", what);
	snprintf(msg, sizeof(msg), "%s", what);
	expect_wc(cli.scq, 1, IBV_WC_LOC_PROT_ERR, -1, T_WC, msg);
	/* a good WR behind it is flushed */
	sg = sge(cmr, cbuf, 10);
	rv = post(cli.qp, IBV_WR_SEND, 2, &sg, 1, 0, 0, IBV_SEND_SIGNALED);
	snprintf(msg, sizeof(msg), "%s: the next WR", what);
	expect_wc(cli.scq, 2, IBV_WC_WR_FLUSH_ERR, -1, T_WC, msg);
	ok(wait_flag(&cli.disconnected, NULL, T_CM) &&
	   wait_flag(&srv.disconnected, NULL, T_CM),
	   "%s: both ends see RDMA_CM_EVENT_DISCONNECTED", what);
	expect_state(&cli, IBV_QPS_ERR, what);
	expect_state(&srv, IBV_QPS_ERR, what);
	snprintf(msg, sizeof(msg), "%s: peer's receive", what);
	expect_wc(srv.rcq, 50, IBV_WC_WR_FLUSH_ERR, -1, T_WC, msg);
	expect_wc(srv.rcq, 51, IBV_WC_WR_FLUSH_ERR, -1, T_WC, msg);
	ok(cq_quiet(srv.rcq, 100) && cq_quiet(cli.scq, 100),
	   "%s: nothing else completes", what);
out:
	conn_close();
	free(cbuf);
	free(sbuf);
	check_counts(what);
}

/*
 * A good signaled Send and a Send with a bad lkey, posted as one chain:
 * the requester completes WRs in SQ order, so the first Send (taken, and
 * sent before the bad one) completes successfully before the second's
 * local protection error, and a WR posted after them is flushed.  (The
 * first Send's completion once came after the error: it was held until
 * its batch went to TCP, the error was not.)
 */
static void t_lkey_chain(void)
{
	const char *what = "chain of a good Send and a bad lkey";
	char *cbuf = big_alloc(65536), *sbuf = big_alloc(65536);
	struct ibv_send_wr wr[2], *bad = NULL;
	struct ibv_mr *cmr, *smr;
	struct ibv_sge sg[2];
	char msg[160];
	int rv;

	if (!lkey_open(cbuf, sbuf, &cmr, &smr))
		goto out;
	fill(cbuf, 100, 7);
	sg[0] = sge(cmr, cbuf, 100);
	sg[1] = sge(cmr, cbuf, 100);
	sg[1].lkey = cmr->lkey ^ 0x7f00;	/* another STag index */
	memset(wr, 0, sizeof(wr));
	wr[0].wr_id = 1;
	wr[0].sg_list = &sg[0];
	wr[0].num_sge = 1;
	wr[0].opcode = IBV_WR_SEND;
	wr[0].send_flags = IBV_SEND_SIGNALED;
	wr[0].next = &wr[1];
	wr[1] = wr[0];
	wr[1].wr_id = 2;
	wr[1].sg_list = &sg[1];
	wr[1].next = NULL;
	rv = ibv_post_send(cli.qp, &wr[0], &bad);
	ok(!rv, "%s: posted as one chain", what);
	snprintf(msg, sizeof(msg), "%s: first the good Send", what);
	expect_wc(cli.scq, 1, IBV_WC_SUCCESS, 100, T_WC, msg);
	snprintf(msg, sizeof(msg), "%s: then the bad lkey", what);
	expect_wc(cli.scq, 2, IBV_WC_LOC_PROT_ERR, -1, T_WC, msg);
	sg[0] = sge(cmr, cbuf, 10);
	rv = post(cli.qp, IBV_WR_SEND, 3, &sg[0], 1, 0, 0, IBV_SEND_SIGNALED);
	snprintf(msg, sizeof(msg), "%s: the next WR", what);
	expect_wc(cli.scq, 3, IBV_WC_WR_FLUSH_ERR, -1, T_WC, msg);
	snprintf(msg, sizeof(msg), "%s: peer receives the good Send", what);
	if (expect_wc(srv.rcq, 50, IBV_WC_SUCCESS, 100, T_WC, msg))
		ok(diff_at(sbuf, cbuf, 100) < 0, "%s: its data", what);
	snprintf(msg, sizeof(msg), "%s: peer's next receive", what);
	expect_wc(srv.rcq, 51, IBV_WC_WR_FLUSH_ERR, -1, T_WC, msg);
	ok(wait_flag(&cli.disconnected, NULL, T_CM) &&
	   wait_flag(&srv.disconnected, NULL, T_CM),
	   "%s: both ends see RDMA_CM_EVENT_DISCONNECTED", what);
	ok(cq_quiet(srv.rcq, 100) && cq_quiet(cli.scq, 100),
	   "%s: nothing else completes", what);
out:
	conn_close();
	free(cbuf);
	free(sbuf);
	check_counts(what);
}

/*
 * An RDMA Read and a Send with a bad lkey, posted as one chain: the Read
 * is still outstanding (its Response needs a round trip) when the Send
 * fails, and the Read completes first all the same, flushed or (had its
 * Response come) successful: completions in SQ order, as for Sends.
 */
static void t_read_lkey_chain(void)
{
	const char *what = "chain of a Read and a bad lkey";
	char *cbuf = big_alloc(65536), *sbuf = big_alloc(65536);
	struct ibv_send_wr wr[2], *bad = NULL;
	struct ibv_mr *cmr, *smr, *rmr;
	struct ibv_sge sg[2];
	struct ibv_wc wc;
	char msg[160];
	int rv;

	if (!lkey_open(cbuf, sbuf, &cmr, &smr))
		goto out;
	/* the Read's sink as RNICs want it: remote write too */
	rmr = side_reg(&cli, cbuf + 16384, 8192, IBV_ACCESS_LOCAL_WRITE |
		       IBV_ACCESS_REMOTE_WRITE);
	if (!rmr)
		goto out;
	fill(sbuf, 4096, 9);
	sg[0] = sge(rmr, cbuf + 16384, 4096);
	sg[1] = sge(cmr, cbuf, 100);
	sg[1].lkey = cmr->lkey ^ 0x7f00;	/* another STag index */
	memset(wr, 0, sizeof(wr));
	wr[0].wr_id = 1;
	wr[0].sg_list = &sg[0];
	wr[0].num_sge = 1;
	wr[0].opcode = IBV_WR_RDMA_READ;
	wr[0].send_flags = IBV_SEND_SIGNALED;
	wr[0].wr.rdma.rkey = smr->rkey;
	wr[0].wr.rdma.remote_addr = (uintptr_t)sbuf;
	wr[0].next = &wr[1];
	wr[1].wr_id = 2;
	wr[1].sg_list = &sg[1];
	wr[1].num_sge = 1;
	wr[1].opcode = IBV_WR_SEND;
	wr[1].send_flags = IBV_SEND_SIGNALED;
	rv = ibv_post_send(cli.qp, &wr[0], &bad);
	ok(!rv, "%s: posted as one chain", what);
	if (poll_n(cli.scq, &wc, 1, T_WC) != 1) {
		ok(false, "%s: first the Read (no completion)", what);
	} else {
		ok(wc.wr_id == 1 && (wc.status == IBV_WC_SUCCESS ||
				     wc.status == IBV_WC_WR_FLUSH_ERR),
		   "%s: first the Read, successful or flushed", what);
		if (wc.wr_id != 1)
			diag("got wr_id %" PRIu64 " %s first", wc.wr_id,
			     ibv_wc_status_str(wc.status));
		else if (wc.status == IBV_WC_SUCCESS)
			ok(diff_at(cbuf + 16384, sbuf, 4096) < 0,
			   "%s: the Read's data", what);
	}
	snprintf(msg, sizeof(msg), "%s: then the bad lkey", what);
	expect_wc(cli.scq, 2, IBV_WC_LOC_PROT_ERR, -1, T_WC, msg);
	ok(wait_flag(&cli.disconnected, NULL, T_CM),
	   "%s: RDMA_CM_EVENT_DISCONNECTED", what);
	ok(cq_quiet(cli.scq, 100), "%s: nothing else completes", what);
out:
	conn_close();
	free(cbuf);
	free(sbuf);
	check_counts(what);
}

/* ---- send queue completions in posting order ---------------------------- */

/* a Read long enough to complete well after a Send */
#define ORD_LEN		65536

/* one WR of a chain; post_chain() links them */
static void chain_wr(struct ibv_send_wr *wr, uint64_t id,
		     enum ibv_wr_opcode op, struct ibv_sge *sg,
		     unsigned int flags, uint32_t rkey, const void *raddr)
{
	memset(wr, 0, sizeof(*wr));
	wr->wr_id = id;
	wr->opcode = op;
	wr->sg_list = sg;
	wr->num_sge = 1;
	wr->send_flags = flags;
	wr->wr.rdma.rkey = rkey;
	wr->wr.rdma.remote_addr = (uintptr_t)raddr;
}

static int post_chain(struct ibv_qp *qp, struct ibv_send_wr *wr, int n)
{
	struct ibv_send_wr *bad = NULL;
	int i;

	for (i = 0; i < n; i++)
		wr[i].next = i + 1 < n ? &wr[i + 1] : NULL;
	return ibv_post_send(qp, wr, &bad);
}

/* n successful completions on the client's SQ, exactly in the order ids */
static bool expect_order(const uint64_t *ids, int n, const char *what)
{
	struct ibv_wc wc[4];
	char seen[128] = "";
	size_t off = 0;
	bool good;
	int got, i;

	got = poll_n(cli.scq, wc, n, T_WC);
	good = got == n;
	for (i = 0; i < got; i++) {
		good = good && wc[i].wr_id == ids[i] &&
			wc[i].status == IBV_WC_SUCCESS;
		off += snprintf(seen + off, sizeof(seen) - off, " %" PRIu64 "%s",
				wc[i].wr_id, wc[i].status ? "(error)" : "");
	}
	ok(good, "%s: %d completions in posting order, successful", what, n);
	if (!good)
		diag("got %d completion(s), in this order:%s", got, seen);
	return good;
}

/*
 * The buffers of t_order(): the client's source of Writes and Sends at
 * cbuf, its Read sink (remote write too, as RNICs want it) at cbuf +
 * ORD_LEN; the server's Read source at sbuf, Write target at sbuf +
 * ORD_LEN, receive buffer at sbuf + 2 * ORD_LEN.
 */
struct order_bufs {
	char *cbuf, *sbuf;
	struct ibv_mr *cmr, *smr;
};

static bool order_open(struct order_bufs *b)
{
	size_t len = 3 * ORD_LEN;

	if (!b->cbuf || !b->sbuf || !conn_open(&qp_default))
		return false;
	b->cmr = side_reg(&cli, b->cbuf, len, IBV_ACCESS_LOCAL_WRITE |
			  IBV_ACCESS_REMOTE_WRITE);
	b->smr = side_reg(&srv, b->sbuf, len, IBV_ACCESS_LOCAL_WRITE |
			  IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	return b->cmr && b->smr;
}

/*
 * A Read, a Write and a Send (wlen bytes of Write, the Write signaled or
 * not); ids base + 1, 2, 3.  The chain's completions must come in that
 * order: the Send's and the Write's, which TCP takes at once, wait for
 * the Read's last Response.  rfirst: the Write goes first instead (its
 * pages by reference when it is long enough: done on the peer's ACK).
 */
static void order_chain(struct order_bufs *b, uint64_t base, uint32_t wlen,
			bool wsig, bool rfirst, const char *what)
{
	char *sink = b->cbuf + ORD_LEN, *dst = b->sbuf + ORD_LEN;
	struct ibv_send_wr wr[3], rd, w;
	struct ibv_sge sg[3], rs;
	uint64_t ids[3];
	int i, n;

	fill(b->sbuf, ORD_LEN, base + 1);
	fill(b->cbuf, wlen, base + 2);
	memset(sink, 0, ORD_LEN);
	rs = sge(b->smr, b->sbuf + 2 * ORD_LEN, ORD_LEN);
	if (post_recv(srv.qp, base + 3, &rs, 1)) {
		ok(false, "%s: receive posted", what);
		return;
	}
	sg[0] = sge(b->cmr, sink, ORD_LEN);
	sg[1] = sge(b->cmr, b->cbuf, wlen);
	sg[2] = sge(b->cmr, b->cbuf, 100);
	chain_wr(&rd, base + 1, IBV_WR_RDMA_READ, &sg[0], IBV_SEND_SIGNALED,
		 b->smr->rkey, b->sbuf);
	chain_wr(&w, base + 2, IBV_WR_RDMA_WRITE, &sg[1],
		 wsig ? IBV_SEND_SIGNALED : 0, b->smr->rkey, dst);
	wr[0] = rfirst ? w : rd;
	wr[1] = rfirst ? rd : w;
	chain_wr(&wr[2], base + 3, IBV_WR_SEND, &sg[2], IBV_SEND_SIGNALED,
		 0, NULL);
	for (i = 0, n = 0; i < 3; i++)
		if (wr[i].send_flags & IBV_SEND_SIGNALED)
			ids[n++] = wr[i].wr_id;
	ok(!post_chain(cli.qp, wr, 3), "%s: posted as one chain", what);
	expect_order(ids, n, what);
	ok(cq_quiet(cli.scq, 100), "%s: nothing else completes", what);
	ok(diff_at(sink, b->sbuf, ORD_LEN) < 0, "%s: the Read's data", what);
	if (expect_wc(srv.rcq, base + 3, IBV_WC_SUCCESS, 100, T_WC, what))
		ok(diff_at(dst, b->cbuf, wlen) < 0, "%s: the Write's data",
		   what);
}

/*
 * An unsignaled Read and a signaled Send: the Send's completion says the
 * Read is done too, so its sink holds the data when the Send completes
 * (an application may take it so, as on RNICs).
 */
static void order_unsignaled(struct order_bufs *b, const char *what)
{
	char *sink = b->cbuf + ORD_LEN;
	struct ibv_send_wr wr[2];
	struct ibv_sge sg[2], rs;
	struct ibv_wc wc;

	fill(b->sbuf, ORD_LEN, 41);
	memset(sink, 0, ORD_LEN);
	rs = sge(b->smr, b->sbuf + 2 * ORD_LEN, ORD_LEN);
	post_recv(srv.qp, 42, &rs, 1);
	sg[0] = sge(b->cmr, sink, ORD_LEN);
	sg[1] = sge(b->cmr, b->cbuf, 100);
	chain_wr(&wr[0], 41, IBV_WR_RDMA_READ, &sg[0], 0, b->smr->rkey,
		 b->sbuf);
	chain_wr(&wr[1], 42, IBV_WR_SEND, &sg[1], IBV_SEND_SIGNALED, 0, NULL);
	ok(!post_chain(cli.qp, wr, 2), "%s: posted as one chain", what);
	if (poll_n(cli.scq, &wc, 1, T_WC) != 1) {
		ok(false, "%s: the Send completes (no completion)", what);
		return;
	}
	/* at once: nothing may still be placing the Read's data */
	ok(wc.wr_id == 42 && wc.status == IBV_WC_SUCCESS &&
	   diff_at(sink, b->sbuf, ORD_LEN) < 0,
	   "%s: at the Send's completion the Read's data is in place", what);
	if (wc.wr_id != 42 || wc.status != IBV_WC_SUCCESS)
		diag("got wr_id %" PRIu64 " %s", wc.wr_id,
		     ibv_wc_status_str(wc.status));
	ok(cq_quiet(cli.scq, 100), "%s: nothing else completes", what);
	expect_wc(srv.rcq, 42, IBV_WC_SUCCESS, 100, T_WC, what);
}

/*
 * Send queue completions come in posting order, as on RNICs, whatever
 * each WR waits for: a Read for its last Read Response, a copied Write or
 * Send for TCP to take it, one whose pages went by reference for the
 * peer's ACK.  One connection, one chain after the other.
 */
static void t_order(void)
{
	const char *what = "SQ order";
	struct order_bufs b = {
		.cbuf = big_alloc(3 * ORD_LEN),
		.sbuf = big_alloc(3 * ORD_LEN),
	};

	if (!order_open(&b))
		goto out;
	order_chain(&b, 10, 4096, true, false,
		    "SQ order: Read 64 KiB, Write 4 KiB, Send, all signaled");
	order_chain(&b, 20, 4096, false, false,
		    "SQ order: Read, unsignaled Write, Send");
	order_chain(&b, 30, ORD_LEN, true, true,
		    "SQ order: Write 64 KiB, Read 64 KiB, Send");
	order_unsignaled(&b, "SQ order: unsignaled Read, Send");
	expect_state(&cli, IBV_QPS_RTS, what);
out:
	conn_close();
	free(b.cbuf);
	free(b.sbuf);
	check_counts(what);
}

/* ---- remote access violations ------------------------------------------- */

enum acc_case {
	AC_WRITE_RO, AC_WRITE_BOUNDS, AC_WRITE_DEREG, AC_WRITE_KEY,
	AC_WRITE_INVALIDATED, AC_READ_NO_RR, AC_WRITE_BIG,
	AC_QP_NO_RW, AC_QP_NO_RR,
};

/* The responder QP's access flags, set once it is connected (RTS). */
static bool set_qp_access(struct side *s, int flags)
{
	struct ibv_qp_attr a = { .qp_access_flags = flags };
	int rv = ibv_modify_qp(s->qp, &a, IBV_QP_ACCESS_FLAGS);

	if (rv)
		diag("%s: ibv_modify_qp(IBV_QP_ACCESS_FLAGS %#x): %s", s->name,
		     flags, strerror(rv));
	return !rv;
}

static int qp_access(struct side *s)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;

	if (ibv_query_qp(s->qp, &a, IBV_QP_ACCESS_FLAGS, &ia))
		return -1;
	return a.qp_access_flags;
}

/*
 * The responder refuses with a Terminate; at the requester the oldest WR
 * still outstanding completes with IBV_WC_REM_ACCESS_ERR (the Write itself
 * completed when TCP took it, so a signaled Read behind it is what is
 * outstanding), a fenced WR behind that is flushed, and both QPs end in ERR
 * with IBV_EVENT_QP_ACCESS_ERR.  Nothing in the responder's MR changes.
 */
static void t_access(enum acc_case c)
{
	static const char * const names[] = {
		[AC_WRITE_RO] = "Write to a read-only MR",
		[AC_WRITE_BOUNDS] = "Write reaching past the MR's end",
		[AC_WRITE_DEREG] = "Write to a deregistered MR's rkey",
		[AC_WRITE_KEY] = "Write with a wrong key byte in the rkey",
		[AC_WRITE_INVALIDATED] =
			"Send with Invalidate naming a user MR, then a Write to it",
		[AC_READ_NO_RR] = "Read from an MR without remote read",
		[AC_WRITE_BIG] = "32 MiB Write (alone) to a read-only MR",
		[AC_QP_NO_RW] =
			"Write to a QP whose access flags deny remote write",
		[AC_QP_NO_RR] =
			"Read from a QP whose access flags deny remote read",
	};
	const char *what = names[c];
	size_t slen = c == AC_WRITE_BIG ? 32 * MIB : 65536;
	char *cbuf = big_alloc(slen), *sbuf = big_alloc(65536);
	char *sref = big_alloc(65536);
	struct ibv_mr *cmr, *smr, *tmr = NULL;
	struct ibv_send_wr wr[4], *bad = NULL;
	struct ibv_sge sg[4], rs;
	struct ibv_wc wc;
	uint32_t rkey = 0;
	uint64_t raddr = 0;
	uint64_t read_id = 11;
	/* kiwi refuses a Send with Invalidate of a user MR (not siw) */
	bool refused_inv = c == AC_WRITE_INVALIDATED && !peer_siw;
	enum ibv_event_type ev = refused_inv ? IBV_EVENT_QP_FATAL :
					       IBV_EVENT_QP_ACCESS_ERR;
	char msg[200];
	int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
		IBV_ACCESS_REMOTE_READ;
	int i, rv, nwr = 0;

	if (!cbuf || !sbuf || !sref || !conn_open(&qp_default))
		goto out;
	fill(sbuf, 65536, 7 + c);
	memcpy(sref, sbuf, 65536);
	fill(cbuf, slen, 100 + c);
	/* the sink of the Reads: remote write, as iWARP wants of a sink */
	cmr = side_reg(&cli, cbuf, slen, IBV_ACCESS_LOCAL_WRITE |
		       IBV_ACCESS_REMOTE_WRITE);
	/* the region the test reads from, readable by the peer */
	smr = side_reg(&srv, sbuf, 16384, access);
	if (!cmr || !smr)
		goto out;
	rs = sge(smr, sbuf + 4096, 4096);
	/* receives (flushed in the end, or taking the Send with Invalidate) */
	post_recv(srv.qp, 60, &rs, 1);
	post_recv(srv.qp, 61, &rs, 1);
	switch (c) {
	case AC_WRITE_RO:
	case AC_WRITE_BIG:
		tmr = side_reg(&srv, sbuf + 16384, 8192,
			       IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
		raddr = (uintptr_t)sbuf + 16384;
		break;
	case AC_WRITE_BOUNDS:
		tmr = side_reg(&srv, sbuf + 16384, 8192, access);
		raddr = (uintptr_t)sbuf + 16384 + 8192 - 100;
		break;
	case AC_WRITE_DEREG:
		tmr = side_reg(&srv, sbuf + 16384, 8192, access);
		if (tmr) {
			rkey = tmr->rkey;
			side_dereg(&srv, tmr);
			tmr = NULL;
		}
		raddr = (uintptr_t)sbuf + 16384;
		break;
	case AC_WRITE_KEY:
		tmr = side_reg(&srv, sbuf + 16384, 8192, access);
		if (tmr)
			rkey = tmr->rkey ^ 0x5a;
		raddr = (uintptr_t)sbuf + 16384;
		break;
	case AC_WRITE_INVALIDATED:
		tmr = side_reg(&srv, sbuf + 16384, 8192, access);
		raddr = (uintptr_t)sbuf + 16384;
		break;
	case AC_READ_NO_RR:
		tmr = side_reg(&srv, sbuf + 16384, 8192,
			       IBV_ACCESS_LOCAL_WRITE |
			       IBV_ACCESS_REMOTE_WRITE);
		raddr = (uintptr_t)sbuf + 16384;
		break;
	case AC_QP_NO_RW:
	case AC_QP_NO_RR:
		/* the MR allows everything, the QP does not */
		tmr = side_reg(&srv, sbuf + 16384, 8192, access);
		raddr = (uintptr_t)sbuf + 16384;
		if (!tmr || !set_qp_access(&srv, c == AC_QP_NO_RW ?
					   IBV_ACCESS_LOCAL_WRITE |
					   IBV_ACCESS_REMOTE_READ :
					   IBV_ACCESS_LOCAL_WRITE |
					   IBV_ACCESS_REMOTE_WRITE))
			goto out;
		break;
	}
	if (!rkey && !tmr)
		goto out;
	if (!rkey)
		rkey = tmr->rkey;

	memset(wr, 0, sizeof(wr));
	if (c == AC_WRITE_INVALIDATED) {
		/* the responder's MR invalidated by the Send's arrival */
		wr[nwr].wr_id = 10;
		wr[nwr].opcode = IBV_WR_SEND_WITH_INV;
		wr[nwr].invalidate_rkey = rkey;
		wr[nwr].send_flags = IBV_SEND_SIGNALED;
		nwr++;
	}
	if (c == AC_READ_NO_RR || c == AC_QP_NO_RR) {
		sg[nwr] = sge(cmr, cbuf, 4096);
		wr[nwr].wr_id = read_id;
		wr[nwr].opcode = IBV_WR_RDMA_READ;
		wr[nwr].send_flags = IBV_SEND_SIGNALED;
	} else {
		sg[nwr] = sge(cmr, cbuf, c == AC_WRITE_BIG ? slen : 4096);
		wr[nwr].wr_id = c == AC_WRITE_BIG ? read_id : 12;
		wr[nwr].opcode = IBV_WR_RDMA_WRITE;
		/* unsignaled: done when TCP has it, blamed or not */
		wr[nwr].send_flags = c == AC_WRITE_BIG ? IBV_SEND_SIGNALED : 0;
	}
	wr[nwr].sg_list = &sg[nwr];
	wr[nwr].num_sge = 1;
	wr[nwr].wr.rdma.rkey = rkey;
	wr[nwr].wr.rdma.remote_addr = raddr;
	nwr++;
	if (c != AC_READ_NO_RR && c != AC_QP_NO_RR && c != AC_WRITE_BIG) {
		/* a good Read behind the Write: outstanding when refused */
		sg[nwr] = sge(cmr, cbuf + 8192, 64);
		wr[nwr].wr_id = read_id;
		wr[nwr].opcode = IBV_WR_RDMA_READ;
		wr[nwr].send_flags = IBV_SEND_SIGNALED;
		wr[nwr].sg_list = &sg[nwr];
		wr[nwr].num_sge = 1;
		wr[nwr].wr.rdma.rkey = smr->rkey;
		wr[nwr].wr.rdma.remote_addr = (uintptr_t)sbuf;
		nwr++;
	}
	if (c != AC_WRITE_BIG) {
		/* fenced: waits for the Read, then is flushed */
		sg[nwr] = sge(cmr, cbuf, 16);
		wr[nwr].wr_id = 13;
		wr[nwr].opcode = IBV_WR_SEND;
		wr[nwr].send_flags = IBV_SEND_SIGNALED | IBV_SEND_FENCE;
		wr[nwr].sg_list = &sg[nwr];
		wr[nwr].num_sge = 1;
		nwr++;
	}
	for (i = 0; i + 1 < nwr; i++)
		wr[i].next = &wr[i + 1];
	rv = ibv_post_send(cli.qp, wr, &bad);
	ok(!rv, "%s: the chain is posted", what);
	if (rv)
		goto out;

	if (c == AC_WRITE_INVALIDATED) {
		expect_wc(cli.scq, 10, IBV_WC_SUCCESS, -1, T_WC,
			  "Send with Invalidate");
		rv = poll_n(srv.rcq, &wc, 1, T_WC);
		/*
		 * siw invalidates any MR; kiwi only fast-registration MRs
		 * (an ibv_reg_mr() MR could never be made valid again): the
		 * Receive fails and the requester gets RDMAP's "invalidate"
		 * Terminate.  libsiw does not report the invalidation.
		 */
		if (peer_siw)
			ok(rv == 1 && wc.wr_id == 60 &&
			   wc.status == IBV_WC_SUCCESS,
			   "Send with Invalidate: the receive completes");
		else
			ok(rv == 1 && wc.wr_id == 60 &&
			   wc.status == IBV_WC_REM_INV_REQ_ERR,
			   "Send with Invalidate naming a user MR: the receive completes with IBV_WC_REM_INV_REQ_ERR");
		if (rv == 1 && wc.wr_id != 60)
			diag("got wr_id %" PRIu64 " %s flags %#x rkey %#x",
			     wc.wr_id, ibv_wc_status_str(wc.status),
			     wc.wc_flags, wc.invalidated_rkey);
	}
	if (c == AC_WRITE_BIG) {
		/*
		 * 32 MiB cannot all be in TCP's hands when the Terminate
		 * for its first segment comes back: the Write itself is
		 * what is outstanding.
		 */
		expect_wc(cli.scq, read_id, IBV_WC_REM_ACCESS_ERR, -1, T_BIG,
			  what);
	} else {
		if (c == AC_READ_NO_RR || c == AC_QP_NO_RR)
			snprintf(msg, sizeof(msg), "%s", what);
		else
			snprintf(msg, sizeof(msg),
				 "%s: the signaled Read behind it", what);
		/* refused Send with Invalidate: not an access error */
		expect_wc(cli.scq, read_id, refused_inv ? IBV_WC_WR_FLUSH_ERR :
			  IBV_WC_REM_ACCESS_ERR, -1, T_WC, msg);
		snprintf(msg, sizeof(msg), "%s: the fenced Send", what);
		expect_wc(cli.scq, 13, IBV_WC_WR_FLUSH_ERR, -1, T_WC, msg);
	}
	ok(wait_async(&cli, ev, T_WC), "%s: %s at the requester", what,
	   ibv_event_type_str(ev));
	if (!peer_siw)
		ok(wait_async(&srv, ev, T_WC), "%s: %s at the responder", what,
		   ibv_event_type_str(ev));
	ok(wait_flag(&cli.disconnected, NULL, T_CM) &&
	   wait_flag(&srv.disconnected, NULL, T_CM),
	   "%s: both ends see RDMA_CM_EVENT_DISCONNECTED", what);
	expect_state(&cli, IBV_QPS_ERR, what);
	/* siw's query fails on a QP it has put in ERR */
	if (!peer_siw)
		expect_state(&srv, IBV_QPS_ERR, what);
	/* posted after the error: flushed */
	sg[0] = sge(cmr, cbuf, 16);
	post(cli.qp, IBV_WR_SEND, 14, sg, 1, 0, 0, IBV_SEND_SIGNALED);
	snprintf(msg, sizeof(msg), "%s: a Send posted afterwards", what);
	expect_wc(cli.scq, 14, IBV_WC_WR_FLUSH_ERR, -1, T_WC, msg);
	/*
	 * A receive posted afterwards: no system call posts it, so only the
	 * provider's doorbell on kiwi_rq_ctrl.flush completes it.  Receives
	 * posted before the error may be flushed ahead of it.
	 */
	snprintf(msg, sizeof(msg), "%s: a receive posted afterwards", what);
	sg[0] = sge(cmr, cbuf, 16);
	if (post_recv(cli.qp, 15, sg, 1)) {
		ok(false, "%s: ibv_post_recv", msg);
	} else {
		struct ibv_wc rwc = { .wr_id = 0 };
		bool all_flushed = true;

		while (poll_n(cli.rcq, &rwc, 1, T_WC) == 1) {
			if (rwc.status != IBV_WC_WR_FLUSH_ERR) {
				all_flushed = false;
				diag("receive wr_id %" PRIu64 ": %s",
				     rwc.wr_id, ibv_wc_status_str(rwc.status));
			}
			if (rwc.wr_id == 15)
				break;
		}
		if (rwc.wr_id != 15)
			diag("no completion of wr_id 15 (last %" PRIu64 ")",
			     rwc.wr_id);
		ok(rwc.wr_id == 15 && all_flushed,
		   "%s: wr_id 15 IBV_WC_WR_FLUSH_ERR", msg);
	}
	snprintf(msg, sizeof(msg), "%s: the responder's receive", what);
	if (c != AC_WRITE_INVALIDATED)
		expect_wc(srv.rcq, 60, IBV_WC_WR_FLUSH_ERR, -1, T_WC, msg);
	expect_wc(srv.rcq, 61, IBV_WC_WR_FLUSH_ERR, -1, T_WC, msg);
	ok(cq_quiet(cli.scq, 100) && cq_quiet(srv.rcq, 100),
	   "%s: nothing else completes", what);
	/* the Read's 64 bytes never came, the target is unchanged */
	ok(diff_at(sbuf, sref, 65536) < 0,
	   "%s: the responder's memory is unchanged", what);
	if (c == AC_QP_NO_RR)
		ok(memcmp(cbuf, sbuf + 16384, 4096) != 0,
		   "%s: none of the source's bytes reached the requester",
		   what);
out:
	conn_close();
	free(cbuf);
	free(sbuf);
	free(sref);
	check_counts(what);
}

/*
 * What QP access flags still allow.  The client QP keeps what rdma_cm gave
 * it (librdmacm: no remote right before the connection exists), and the
 * server still Writes to it and Reads from it, as rping's server does.
 * The server QP allows only remote read, then only remote write: each is
 * still served, bytes compared, and the connection stays up.
 */
static void t_qp_rights(void)
{
	const char *what = "QP access flags";
	char *cbuf = big_alloc(65536), *sbuf = big_alloc(65536);
	int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
		IBV_ACCESS_REMOTE_READ;
	struct ibv_mr *cmr, *smr;
	struct ibv_sge sg;
	int f;

	if (!cbuf || !sbuf || !conn_open(&qp_default))
		goto out;
	fill(cbuf, 65536, 31);
	fill(sbuf, 65536, 32);
	cmr = side_reg(&cli, cbuf, 65536, access);
	smr = side_reg(&srv, sbuf, 65536, access);
	if (!cmr || !smr)
		goto out;
	diag("client QP's access flags as rdma_cm left them: %#x",
	     qp_access(&cli));

	/* server -> client: Write [0, 4K) from sbuf, Read [8K, 12K) */
	sg = sge(smr, sbuf, 4096);
	ok(!post(srv.qp, IBV_WR_RDMA_WRITE, 1, &sg, 1, cmr->rkey,
		 (uintptr_t)cbuf, 0), "server posts a Write to the client");
	sg = sge(smr, sbuf + 16384, 4096);
	ok(!post(srv.qp, IBV_WR_RDMA_READ, 2, &sg, 1, cmr->rkey,
		 (uintptr_t)cbuf + 8192, IBV_SEND_SIGNALED),
	   "server posts a Read from the client");
	expect_wc(srv.scq, 2, IBV_WC_SUCCESS, -1, T_WC,
		  "server's Read from the client QP rdma_cm gave no remote right");
	ok(diff_at(cbuf, sbuf, 4096) < 0 &&
	   diff_at(sbuf + 16384, cbuf + 8192, 4096) < 0,
	   "%s: the server's Write landed at the client, its Read brought the client's bytes",
	   what);

	/* the server allows remote read only: the client's Read is served */
	if (!set_qp_access(&srv, IBV_ACCESS_LOCAL_WRITE |
			   IBV_ACCESS_REMOTE_READ))
		goto out;
	f = qp_access(&srv);
	ok(f == (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ),
	   "%s: the server QP reports remote read only (%#x)", what, f);
	sg = sge(cmr, cbuf + 16384, 4096);
	post(cli.qp, IBV_WR_RDMA_READ, 3, &sg, 1, smr->rkey,
	     (uintptr_t)sbuf + 32768, IBV_SEND_SIGNALED);
	expect_wc(cli.scq, 3, IBV_WC_SUCCESS, -1, T_WC,
		  "client's Read from a QP that allows remote read");
	ok(diff_at(sbuf + 32768, cbuf + 16384, 4096) < 0,
	   "%s: the Read brought the server's bytes", what);

	/* remote write only: the Write lands, the Send behind it proves it */
	if (!set_qp_access(&srv, IBV_ACCESS_LOCAL_WRITE |
			   IBV_ACCESS_REMOTE_WRITE))
		goto out;
	sg = sge(smr, sbuf + 49152, 64);
	post_recv(srv.qp, 40, &sg, 1);
	sg = sge(cmr, cbuf + 24576, 4096);
	post(cli.qp, IBV_WR_RDMA_WRITE, 4, &sg, 1, smr->rkey,
	     (uintptr_t)sbuf + 40960, 0);
	sg = sge(cmr, cbuf, 16);
	post(cli.qp, IBV_WR_SEND, 5, &sg, 1, 0, 0, IBV_SEND_SIGNALED);
	expect_wc(cli.scq, 5, IBV_WC_SUCCESS, -1, T_WC,
		  "client's Send behind its Write");
	expect_wc(srv.rcq, 40, IBV_WC_SUCCESS, 16, T_WC,
		  "the server receives it");
	ok(diff_at(cbuf + 24576, sbuf + 40960, 4096) < 0,
	   "%s: the Write to a QP that allows remote write landed", what);
	expect_state(&cli, IBV_QPS_RTS, what);
	expect_state(&srv, IBV_QPS_RTS, what);
out:
	conn_close();
	free(cbuf);
	free(sbuf);
	check_counts(what);
}

/* ---- what the iWARP RNICs refuse (Documentation/rnic-compat.md) ---------- */

/* the client device's rnic_strict file, known once the client resolved */
static char rnic_path[256];

static bool rnic_locate(void)
{
	if (!cli.id || !cli.id->verbs)
		return false;
	snprintf(rnic_path, sizeof(rnic_path),
		 "/sys/class/infiniband/%s/rnic_strict",
		 ibv_get_device_name(cli.id->verbs->device));
	return true;
}

/* the knob's value, -1 if it cannot be read */
static int rnic_get(void)
{
	char b[16] = "";
	FILE *f = fopen(rnic_path, "r");

	if (!f)
		return -1;
	if (!fgets(b, sizeof(b), f))
		b[0] = 0;
	fclose(f);
	return b[0] == '0' || b[0] == '1' ? b[0] - '0' : -1;
}

/* write val to the knob: 0 or the errno of the write */
static int rnic_put(const char *val)
{
	int fd = open(rnic_path, O_WRONLY), rv = 0;

	if (fd < 0)
		return errno;
	if (write(fd, val, strlen(val)) < 0)
		rv = errno;
	close(fd);
	return rv;
}

static bool rnic_set(int v)
{
	bool good = !rnic_put(v ? "1" : "0") && rnic_get() == v;

	if (!good)
		diag("%s: could not set %d (reads %d)", rnic_path, v,
		     rnic_get());
	return good;
}

/*
 * An RDMA Read into a sink registered without remote write.  cxgb4 and
 * irdma let a Read Response into the sink only if its STag grants
 * remote write; siw asks for local write only.  kiwi with rnic_strict 1
 * (the default) fails the Read as cxgb4 does, with a local access error
 * that takes the QP to ERR and the connection down, before a byte is
 * asked for; with 0 it reads, as siw.  A sink with remote write reads
 * either way.  A QP keeps the setting it was created with.
 */
static void t_rnic_sink(bool strict)
{
	const char *what = strict ?
		"rnic_strict 1: Read into a sink without remote write" :
		"rnic_strict 0: Read into a sink without remote write";
	char *cbuf = big_alloc(65536), *sbuf = big_alloc(65536);
	char *cref = big_alloc(16384);
	struct ibv_mr *cmr, *wmr, *smr;
	struct ibv_sge sg, rs;
	char msg[200];
	int rv, v;

	if (!cbuf || !sbuf || !cref || !conn_resolve() || !rnic_locate()) {
		ok(false, "%s: the client resolves its device", what);
		goto out;
	}
	v = rnic_get();
	if (strict) {
		ok(v == 1, "%s: %s is 1 by default (reads %d)", what,
		   rnic_path, v);
		rv = rnic_put("2");
		ok(rv == EINVAL && rnic_get() == 1,
		   "%s: writing 2 fails with EINVAL, the value stays 1 (got %s)",
		   what, rv ? strerror(rv) : "success");
	}
	ok(rnic_set(strict), "%s: %s set to %d", what, rnic_path, strict);
	if (!side_setup(&cli, &qp_default) ||
	    !conn_request(&qp_default, NULL, 0) || !conn_accept(NULL, 0)) {
		ok(false, "%s: connection established", what);
		goto out;
	}
	/* from now on the knob says the opposite: this QP keeps its rules */
	ok(rnic_set(!strict), "%s: %s set to %d after the QP was created",
	   what, rnic_path, !strict);
	fill(sbuf, 65536, 51 + strict);
	fill(cbuf, 65536, 61 + strict);
	memcpy(cref, cbuf, 16384);
	cmr = side_reg(&cli, cbuf, 16384, IBV_ACCESS_LOCAL_WRITE);
	wmr = side_reg(&cli, cbuf + 32768, 16384, IBV_ACCESS_LOCAL_WRITE |
		       IBV_ACCESS_REMOTE_WRITE);
	smr = side_reg(&srv, sbuf, 65536, IBV_ACCESS_LOCAL_WRITE |
		       IBV_ACCESS_REMOTE_READ);
	if (!cmr || !wmr || !smr)
		goto out;
	rs = sge(smr, sbuf + 49152, 64);
	post_recv(srv.qp, 70, &rs, 1);

	sg = sge(wmr, cbuf + 32768, 4096);
	ok(!post(cli.qp, IBV_WR_RDMA_READ, 1, &sg, 1, smr->rkey,
		 (uintptr_t)sbuf, IBV_SEND_SIGNALED),
	   "%s: Read into a sink with remote write posted", what);
	snprintf(msg, sizeof(msg), "%s: Read into a sink with remote write",
		 what);
	expect_wc(cli.scq, 1, IBV_WC_SUCCESS, 4096, T_WC, msg);
	ok(diff_at(cbuf + 32768, sbuf, 4096) < 0,
	   "%s: the sink with remote write holds the server's bytes", what);

	sg = sge(cmr, cbuf, 4096);
	rv = post(cli.qp, IBV_WR_RDMA_READ, 2, &sg, 1, smr->rkey,
		  (uintptr_t)sbuf + 8192, IBV_SEND_SIGNALED);
	ok(!rv, "%s: posted (a refusal shows in the completion)", what);
	if (!strict) {
		expect_wc(cli.scq, 2, IBV_WC_SUCCESS, 4096, T_WC, what);
		ok(diff_at(cbuf, sbuf + 8192, 4096) < 0,
		   "%s: the sink holds the server's bytes", what);
		expect_state(&cli, IBV_QPS_RTS, what);
		expect_state(&srv, IBV_QPS_RTS, what);
		goto out;
	}
	expect_wc(cli.scq, 2, IBV_WC_LOC_ACCESS_ERR, -1, T_WC, what);
	ok(diff_at(cbuf, cref, 16384) < 0, "%s: the sink is untouched", what);
	sg = sge(wmr, cbuf + 32768, 16);
	post(cli.qp, IBV_WR_SEND, 3, &sg, 1, 0, 0, IBV_SEND_SIGNALED);
	snprintf(msg, sizeof(msg), "%s: the next WR", what);
	expect_wc(cli.scq, 3, IBV_WC_WR_FLUSH_ERR, -1, T_WC, msg);
	ok(wait_flag(&cli.disconnected, NULL, T_CM) &&
	   wait_flag(&srv.disconnected, NULL, T_CM),
	   "%s: both ends see RDMA_CM_EVENT_DISCONNECTED", what);
	expect_state(&cli, IBV_QPS_ERR, what);
	expect_state(&srv, IBV_QPS_ERR, what);
	snprintf(msg, sizeof(msg), "%s: peer's receive", what);
	expect_wc(srv.rcq, 70, IBV_WC_WR_FLUSH_ERR, -1, T_WC, msg);
	ok(cq_quiet(srv.rcq, 100) && cq_quiet(cli.scq, 100),
	   "%s: nothing else completes", what);
out:
	conn_close();
	/* the default again, for whatever runs next */
	if (rnic_path[0])
		ok(rnic_set(1), "%s: %s back to 1", what, rnic_path);
	free(cbuf);
	free(sbuf);
	free(cref);
	check_counts(what);
}

/* ---- zero-length operations --------------------------------------------- */

static void t_zero(void)
{
	char *cbuf = big_alloc(65536), *sbuf = big_alloc(65536);
	char *cref = big_alloc(65536), *sref = big_alloc(65536);
	struct ibv_mr *cmr, *smr;
	struct ibv_sge rs, sg;
	int rv;

	if (!cbuf || !sbuf || !cref || !sref || !conn_open(&qp_default))
		goto out;
	fill(cbuf, 65536, 21);
	fill(sbuf, 65536, 22);
	memcpy(cref, cbuf, 65536);
	memcpy(sref, sbuf, 65536);
	cmr = side_reg(&cli, cbuf, 65536, IBV_ACCESS_LOCAL_WRITE |
		       IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	smr = side_reg(&srv, sbuf, 65536, IBV_ACCESS_LOCAL_WRITE |
		       IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	if (!cmr || !smr)
		goto out;
	rs = sge(smr, sbuf, 64);
	post_recv(srv.qp, 70, &rs, 1);
	post_recv(srv.qp, 71, NULL, 0);
	rv = post(cli.qp, IBV_WR_SEND, 1, NULL, 0, 0, 0, IBV_SEND_SIGNALED);
	ok(!rv, "zero-length Send posted (num_sge 0)");
	expect_wc(cli.scq, 1, IBV_WC_SUCCESS, -1, T_WC, "zero-length Send");
	expect_wc(srv.rcq, 70, IBV_WC_SUCCESS, 0, T_WC,
		  "zero-length Send into a 64-byte receive");
	sg = sge(cmr, cbuf, 0);
	post(cli.qp, IBV_WR_SEND, 2, &sg, 1, 0, 0, IBV_SEND_SIGNALED);
	expect_wc(cli.scq, 2, IBV_WC_SUCCESS, -1, T_WC,
		  "Send of one 0-byte SGE");
	expect_wc(srv.rcq, 71, IBV_WC_SUCCESS, 0, T_WC,
		  "it lands in a receive without SGEs");
	rv = post(cli.qp, IBV_WR_RDMA_WRITE, 3, NULL, 0, smr->rkey,
		  (uintptr_t)sbuf + 100, IBV_SEND_SIGNALED);
	expect_wc(cli.scq, 3, IBV_WC_SUCCESS, -1, T_WC, "zero-length Write");
	rv = post(cli.qp, IBV_WR_RDMA_READ, 4, NULL, 0, smr->rkey,
		  (uintptr_t)sbuf + 200, IBV_SEND_SIGNALED);
	expect_wc(cli.scq, 4, IBV_WC_SUCCESS, 0, T_WC, "zero-length Read");
	sg = sge(cmr, cbuf + 300, 0);
	rv = post(cli.qp, IBV_WR_RDMA_READ, 5, &sg, 1, smr->rkey,
		  (uintptr_t)sbuf + 300, IBV_SEND_SIGNALED);
	expect_wc(cli.scq, 5, IBV_WC_SUCCESS, 0, T_WC,
		  "Read into one 0-byte SGE");
	ok(diff_at(cbuf, cref, 65536) < 0 && diff_at(sbuf, sref, 65536) < 0,
	   "zero-length operations touch no byte at either end");
	ok(cq_quiet(cli.scq, 100) && cq_quiet(srv.rcq, 100),
	   "zero-length operations: nothing else completes");
	expect_state(&cli, IBV_QPS_RTS, "after zero-length operations");
	expect_state(&srv, IBV_QPS_RTS, "after zero-length operations");
out:
	conn_close();
	free(cbuf);
	free(sbuf);
	free(cref);
	free(sref);
	check_counts("zero-length operations");
}

/* ---- a process scribbling on its own rings -------------------------------- */

/*
 * Seeded fuzzing of the mapped rings: while both ends post and poll, this
 * process overwrites random fields of every ring and control block it has
 * mapped from /dev/infiniband/uverbs* (indices, lengths, opcodes, SGE
 * counts, flags: values at 1, 2, 4 or 8-byte positions, extremes and
 * small numbers first).  Only this process's QPs may break: the kernel
 * must stay well (the bench checks dmesg), every call must return, and
 * once the connections are gone every object count is back.  A broken
 * connection is replaced by a new one.
 */
static unsigned long fuzz_seed = 1;
static int fuzz_secs = 20;

struct fuzz_map {
	uint8_t *p;
	size_t len;
};

static uint64_t fuzz_rand(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

/* this process's mappings of the uverbs device: its rings */
static int fuzz_maps(struct fuzz_map *m, int max)
{
	char line[512];
	unsigned long a, b;
	FILE *f = fopen("/proc/self/maps", "r");
	int n = 0;

	if (!f)
		return 0;
	while (n < max && fgets(line, sizeof(line), f)) {
		if (!strstr(line, "/dev/infiniband/uverbs") ||
		    sscanf(line, "%lx-%lx", &a, &b) != 2)
			continue;
		m[n].p = (uint8_t *)a;
		m[n].len = b - a;
		n++;
	}
	fclose(f);
	return n;
}

static void fuzz_poke(struct fuzz_map *m, int n, uint64_t *x)
{
	static const uint64_t vals[] = {
		0, 1, 2, 0x7f, 0x80, 0xff, 0xffff, 0x7fffffff, 0x80000000,
		0xffffffff, 0x100000000ULL, ~0ULL, 64, 128, 4096, 65535,
	};
	struct fuzz_map *r = &m[fuzz_rand(x) % n];
	int w = 1 << (fuzz_rand(x) % 4);
	size_t off = (fuzz_rand(x) % r->len) & ~(size_t)(w - 1);
	uint64_t v = fuzz_rand(x) % 3 ? vals[fuzz_rand(x) % 16] :
		fuzz_rand(x);

	memcpy(r->p + off, &v, w);	/* little-endian: the low bytes */
}

/*
 * Caps below what a slot holds, so that the small SGE counts and inline
 * lengths the pokes write also land beyond the QP's caps.
 */
static const struct qp_opts qp_fuzz = {
	.send_wr = 16, .recv_wr = 16, .send_sge = 2, .recv_sge = 2,
	.inline_data = 32,
};

static void t_ringfuzz(void)
{
	char *cbuf = big_alloc(65536), *sbuf = big_alloc(65536);
	uint64_t x = fuzz_seed * 0x9e3779b97f4a7c15ULL | 1;
	long long end = kiwi_now_ms() + fuzz_secs * 1000L;
	unsigned long pokes = 0, posts = 0, wcs = 0, conns = 0;
	struct ibv_mr *cmr = NULL, *smr = NULL;
	struct fuzz_map maps[32];
	struct ibv_wc wc[16];
	struct ibv_sge sg;
	int nmaps = 0, i, r;

	diag("ringfuzz: seed %lu, %d s", fuzz_seed, fuzz_secs);
	while (cbuf && sbuf && kiwi_now_ms() < end) {
		if (!cli.qp || (conns && (qp_state(cli.qp) == IBV_QPS_ERR ||
					  qp_state(srv.qp) == IBV_QPS_ERR ||
					  cli.disconnected || srv.disconnected ||
					  fuzz_rand(&x) % 4000 == 0))) {
			conn_close();
			cmr = smr = NULL;
			if (!conn_open(&qp_fuzz))
				break;
			conns++;
			cmr = side_reg(&cli, cbuf, 65536,
				       IBV_ACCESS_LOCAL_WRITE |
				       IBV_ACCESS_REMOTE_WRITE |
				       IBV_ACCESS_REMOTE_READ);
			smr = side_reg(&srv, sbuf, 65536,
				       IBV_ACCESS_LOCAL_WRITE |
				       IBV_ACCESS_REMOTE_WRITE |
				       IBV_ACCESS_REMOTE_READ);
			if (!cmr || !smr)
				break;
			nmaps = fuzz_maps(maps, 32);
		}
		switch (fuzz_rand(&x) % 6) {
		case 0:
			sg = sge(smr, sbuf + fuzz_rand(&x) % 32768, 1024);
			post_recv(srv.qp, posts++, &sg, 1);
			break;
		case 1:
			sg = sge(cmr, cbuf, fuzz_rand(&x) % 1024);
			post(cli.qp, IBV_WR_SEND, posts++, &sg, 1, 0, 0,
			     IBV_SEND_SIGNALED);
			break;
		case 2:
			sg = sge(cmr, cbuf + fuzz_rand(&x) % 32768, 4096);
			post(cli.qp, fuzz_rand(&x) % 2 ? IBV_WR_RDMA_WRITE :
			     IBV_WR_RDMA_READ, posts++, &sg, 1, smr->rkey,
			     (uintptr_t)sbuf + fuzz_rand(&x) % 32768,
			     IBV_SEND_SIGNALED);
			break;
		case 3:
			ibv_req_notify_cq(fuzz_rand(&x) % 2 ? cli.scq :
					  srv.rcq, fuzz_rand(&x) % 2);
			break;
		default:
			if (nmaps) {
				fuzz_poke(maps, nmaps, &x);
				pokes++;
			}
			break;
		}
		for (i = 0; i < 4; i++) {
			struct ibv_cq *cq = i == 0 ? cli.scq : i == 1 ?
				cli.rcq : i == 2 ? srv.scq : srv.rcq;

			r = ibv_poll_cq(cq, 16, wc);
			if (r > 0)
				wcs += r;
		}
		if (posts % 64 == 0)
			pump(0);
	}
	ok(conns > 0 && kiwi_now_ms() >= end,
	   "ringfuzz: %d s of posting and polling with %lu writes to the rings: %lu posts, %lu completions polled, %lu connections",
	   fuzz_secs, pokes, posts, wcs, conns);
	conn_close();
	free(cbuf);
	free(sbuf);
	check_counts("scribbling on the rings");
}

/* ---- QPs of other processes ---------------------------------------------- */

static pid_t spawn_child(const char *mode);

/*
 * A process may not bind another process's QP to a connection by naming
 * its number: a child's rdma_connect() with our QP's number fails with
 * EINVAL, no connection request reaches the listener, and our QP stays in
 * the state it was in.
 */
static void t_steal(void)
{
	enum ibv_qp_state before;
	char mode[32];
	int status = -1;
	pid_t pid;

	if (!conn_prepare(&qp_default)) {
		ok(false, "steal: client QP created");
		conn_close();
		return;
	}
	before = qp_state(cli.qp);
	snprintf(mode, sizeof(mode), "steal:%u", cli.qp->qp_num);
	pid = spawn_child(mode);
	while (pid > 0 && waitpid(pid, &status, WNOHANG) == 0)
		pump(50);
	ok(pid > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0,
	   "steal: another process's rdma_connect() naming our QP %u fails with EINVAL (child status %d)",
	   cli.qp->qp_num, WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	pump(500);
	ok(!srv.requested, "steal: no connection request reached the listener");
	ok(qp_state(cli.qp) == before,
	   "steal: our QP stays in %s (ibv_query_qp: %s)", state_str(before),
	   state_str(qp_state(cli.qp)));
	conn_close();
	check_counts("a foreign rdma_connect");
}

/* ---- memory operations on the SQ ------------------------------------------ */

/*
 * Signaled local invalidations complete on their own, whether data
 * follows them or not: one alone, more of them in one post than the
 * engine parks completions for (16), and a Send behind such a run, which
 * must still go out and complete after them.  Each completes in SQ order
 * with IBV_WC_LOCAL_INV.
 */
#define MEMOPS_N	40

static void t_memops(void)
{
	struct ibv_send_wr wr[MEMOPS_N + 1], *bad = NULL;
	char *cbuf = big_alloc(4096), *sbuf = big_alloc(4096);
	char *ibuf = big_alloc(4096);
	struct ibv_wc wc[MEMOPS_N + 1];
	struct ibv_mr *cmr, *smr, *imr;
	struct ibv_sge sg, rs;
	int i, got, inorder;

	if (!cbuf || !sbuf || !ibuf ||
	    !conn_open(&(struct qp_opts){ .send_wr = 64, .recv_wr = 16 }))
		goto out;
	cmr = side_reg(&cli, cbuf, 4096, IBV_ACCESS_LOCAL_WRITE);
	imr = side_reg(&cli, ibuf, 4096, IBV_ACCESS_LOCAL_WRITE |
		       IBV_ACCESS_REMOTE_WRITE);
	smr = side_reg(&srv, sbuf, 4096, IBV_ACCESS_LOCAL_WRITE);
	if (!cmr || !imr || !smr)
		goto out;

	memset(wr, 0, sizeof(wr));
	wr[0].wr_id = 100;
	wr[0].opcode = IBV_WR_LOCAL_INV;
	wr[0].invalidate_rkey = imr->rkey;
	wr[0].send_flags = IBV_SEND_SIGNALED;
	ok(!ibv_post_send(cli.qp, &wr[0], &bad),
	   "memops: one signaled LOCAL_INV posted alone");
	expect_wc(cli.scq, 100, IBV_WC_SUCCESS, -1, T_WC,
		  "memops: the lone LOCAL_INV completes");

	fill(cbuf, 4096, 31);
	rs = sge(smr, sbuf, 4096);
	post_recv(srv.qp, 200, &rs, 1);
	for (i = 0; i < MEMOPS_N; i++) {
		wr[i].wr_id = 101 + i;
		wr[i].opcode = IBV_WR_LOCAL_INV;
		wr[i].invalidate_rkey = imr->rkey;
		wr[i].send_flags = IBV_SEND_SIGNALED;
		wr[i].next = &wr[i + 1];
	}
	sg = sge(cmr, cbuf, 3000);
	wr[MEMOPS_N].wr_id = 300;
	wr[MEMOPS_N].opcode = IBV_WR_SEND;
	wr[MEMOPS_N].sg_list = &sg;
	wr[MEMOPS_N].num_sge = 1;
	wr[MEMOPS_N].send_flags = IBV_SEND_SIGNALED;
	ok(!ibv_post_send(cli.qp, &wr[0], &bad),
	   "memops: %d signaled LOCAL_INV and a Send posted in one chain",
	   MEMOPS_N);
	got = poll_n(cli.scq, wc, MEMOPS_N + 1, T_WC);
	inorder = 0;
	for (i = 0; i < got; i++) {
		bool last = i == MEMOPS_N;

		if (wc[i].status != IBV_WC_SUCCESS ||
		    wc[i].wr_id != (last ? 300u : 101u + i) ||
		    wc[i].opcode != (last ? IBV_WC_SEND : IBV_WC_LOCAL_INV)) {
			diag("completion %d: wr_id %" PRIu64 " opcode %d %s", i,
			     wc[i].wr_id, wc[i].opcode,
			     ibv_wc_status_str(wc[i].status));
			break;
		}
		inorder++;
	}
	ok(got == MEMOPS_N + 1 && inorder == got,
	   "memops: all %d complete successfully in SQ order (got %d, %d in order)",
	   MEMOPS_N + 1, got, inorder);
	expect_wc(srv.rcq, 200, IBV_WC_SUCCESS, 3000, T_WC,
		  "memops: the Send behind them arrives");
	ok(diff_at(sbuf, cbuf, 3000) < 0, "memops: its 3000 bytes compare equal");
	expect_state(&cli, IBV_QPS_RTS, "after the memory operations");
out:
	conn_close();
	free(cbuf);
	free(sbuf);
	free(ibuf);
	check_counts("memory operations");
}

/* ---- SGE counts --------------------------------------------------------- */

static void t_sge(void)
{
	/* odd lengths at odd offsets, spread over two MRs */
	static const uint32_t slen[] = { 1, 4095, 7, 65537, 300, 2 };
	static const uint32_t rlen[] = { 50, 51, 4000, 20000, 40000, 5000 };
	char *cbuf = big_alloc(4 * MIB), *sbuf = big_alloc(4 * MIB);
	char *gather = big_alloc(MIB);
	struct ibv_mr *cmr[2], *smr[2];
	struct ibv_sge sg[8], rs[8];
	struct ibv_send_wr wr, *bad = NULL;
	struct ibv_recv_wr rw, *rbad = NULL;
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;
	struct ibv_device_attr da;
	uint32_t i, nsge, nrsge, total = 0, off;
	int rv, access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
		IBV_ACCESS_REMOTE_READ;
	bool same;

	if (!cbuf || !sbuf || !gather || !conn_open(&qp_default))
		goto out;
	ibv_query_qp(cli.qp, &a, IBV_QP_CAP, &ia);
	nsge = ia.cap.max_send_sge;
	ibv_query_qp(srv.qp, &a, IBV_QP_CAP, &ia);
	nrsge = ia.cap.max_recv_sge;
	ibv_query_device(cli.id->verbs, &da);
	ok(nsge >= 2 && nsge <= 6 && nrsge >= 2 && nrsge <= 6,
	   "max_send_sge %u, max_recv_sge %u, max_sge_rd %d", nsge, nrsge,
	   da.max_sge_rd);
	if (nsge < 2 || nsge > 6 || nrsge < 2 || nrsge > 6)
		goto out;
	fill(cbuf, 4 * MIB, 31);
	cmr[0] = side_reg(&cli, cbuf, 2 * MIB, access);
	cmr[1] = side_reg(&cli, cbuf + 2 * MIB, 2 * MIB, access);
	smr[0] = side_reg(&srv, sbuf, 2 * MIB, access);
	smr[1] = side_reg(&srv, sbuf + 2 * MIB, 2 * MIB, access);
	if (!cmr[0] || !cmr[1] || !smr[0] || !smr[1])
		goto out;

	/* gather list: SGE i from MR i % 2 at an odd offset */
	for (i = 0, off = 3; i < nsge; i++) {
		char *p = cbuf + (i % 2) * 2 * MIB + off;

		sg[i] = sge(cmr[i % 2], p, slen[i]);
		memcpy(gather + total, p, slen[i]);
		total += slen[i];
		off += slen[i] + 4097;
	}
	/* scatter list of the same total, cut elsewhere */
	for (i = 0, off = 0; i < nrsge; i++) {
		uint32_t n = i + 1 < nrsge ? rlen[i] : total - off;
		char *p = sbuf + (i % 2) * 2 * MIB + 5 + i * 70001;

		rs[i] = sge(smr[i % 2], p, n);
		off += n;
	}
	memset(&rw, 0, sizeof(rw));
	rw.wr_id = 80;
	rw.sg_list = rs;
	rw.num_sge = nrsge;
	rv = ibv_post_recv(srv.qp, &rw, &rbad);
	ok(!rv, "receive with max_recv_sge (%u) SGEs posted", nrsge);
	rv = post(cli.qp, IBV_WR_SEND, 1, sg, nsge, 0, 0, IBV_SEND_SIGNALED);
	ok(!rv, "Send with max_send_sge (%u) SGEs posted", nsge);
	expect_wc(cli.scq, 1, IBV_WC_SUCCESS, -1, T_WC,
		  "Send gathered from max_send_sge SGEs");
	expect_wc(srv.rcq, 80, IBV_WC_SUCCESS, total, T_WC,
		  "receive scattered into max_recv_sge SGEs");
	for (i = 0, off = 0, same = true; i < nrsge; i++) {
		if (diff_at((void *)(uintptr_t)rs[i].addr, gather + off,
			    rs[i].length) >= 0)
			same = false;
		off += rs[i].length;
	}
	ok(same, "Send: the %u bytes scattered are the bytes gathered",
	   total);

	/* Write gathered from max_send_sge SGEs into one remote range */
	rv = post(cli.qp, IBV_WR_RDMA_WRITE, 2, sg, nsge, smr[1]->rkey,
		  (uintptr_t)sbuf + 2 * MIB + 1000001, IBV_SEND_SIGNALED);
	expect_wc(cli.scq, 2, IBV_WC_SUCCESS, -1, T_WC,
		  "Write gathered from max_send_sge SGEs");
	/* a Read behind it returns when the Write is placed */
	sg[6] = sge(cmr[1], cbuf + 3 * MIB + 1, total);
	rv = post(cli.qp, IBV_WR_RDMA_READ, 3, &sg[6], 1, smr[1]->rkey,
		  (uintptr_t)sbuf + 2 * MIB + 1000001, IBV_SEND_SIGNALED);
	expect_wc(cli.scq, 3, IBV_WC_SUCCESS, total, T_WC,
		  "Read of it back into one SGE");
	ok(diff_at(sbuf + 2 * MIB + 1000001, gather, total) < 0,
	   "Write: the remote range holds the gathered bytes");
	ok(diff_at(cbuf + 3 * MIB + 1, gather, total) < 0,
	   "Read: the bytes read back are the gathered bytes");

	/* one SGE too many: refused at post time, nothing posted */
	memset(&wr, 0, sizeof(wr));
	sg[nsge] = sge(cmr[0], cbuf, 8);
	wr.wr_id = 4;
	wr.opcode = IBV_WR_SEND;
	wr.sg_list = sg;
	wr.num_sge = nsge + 1;
	wr.send_flags = IBV_SEND_SIGNALED;
	rv = ibv_post_send(cli.qp, &wr, &bad);
	ok(rv == EINVAL && bad == &wr,
	   "Send with max_send_sge + 1 SGEs fails with EINVAL, bad_wr set (got %s)",
	   rv ? strerror(rv) : "success");
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.wr.rdma.rkey = smr[0]->rkey;
	wr.wr.rdma.remote_addr = (uintptr_t)sbuf;
	bad = NULL;
	rv = ibv_post_send(cli.qp, &wr, &bad);
	ok(rv == EINVAL && bad == &wr,
	   "Write with max_send_sge + 1 SGEs fails with EINVAL (got %s)",
	   rv ? strerror(rv) : "success");
	if (da.max_sge_rd >= 1 && (uint32_t)da.max_sge_rd < nsge) {
		wr.opcode = IBV_WR_RDMA_READ;
		wr.num_sge = da.max_sge_rd + 1;
		bad = NULL;
		rv = ibv_post_send(cli.qp, &wr, &bad);
		ok(rv == EINVAL && bad == &wr,
		   "Read with max_sge_rd + 1 SGEs fails with EINVAL (got %s)",
		   rv ? strerror(rv) : "success");
	}
	rs[nrsge] = sge(smr[0], sbuf, 8);
	rw.num_sge = nrsge + 1;
	rw.wr_id = 81;
	rbad = NULL;
	rv = ibv_post_recv(srv.qp, &rw, &rbad);
	ok(rv == EINVAL && rbad == &rw,
	   "receive with max_recv_sge + 1 SGEs fails with EINVAL (got %s)",
	   rv ? strerror(rv) : "success");
	ok(cq_quiet(cli.scq, 100) && cq_quiet(srv.rcq, 100),
	   "refused WRs leave no completion");
	expect_state(&cli, IBV_QPS_RTS, "after refused WRs");
	/* and the QP still works */
	post_recv(srv.qp, 82, rs, 1);
	post(cli.qp, IBV_WR_SEND, 5, sg, 1, 0, 0, IBV_SEND_SIGNALED);
	expect_wc(cli.scq, 5, IBV_WC_SUCCESS, -1, T_WC,
		  "a Send after the refused WRs");
	expect_wc(srv.rcq, 82, IBV_WC_SUCCESS, slen[0], T_WC,
		  "its receive");
out:
	conn_close();
	free(cbuf);
	free(sbuf);
	free(gather);
	check_counts("SGE counts");
}

/* ---- what the kernel's storage protocols ask of the device -------------- */

#define CAPS_SQ		840	/* ksmbd's send queue (6.1 and 6.12) */
#define CAPS_SGE	6	/* cifs's and ksmbd's max_send_sge */
#define CAPS_CHUNK	8	/* bytes per SGE of the Writes */

/*
 * Documentation/storage.md, "What the protocols ask of the device": the
 * device's limits as ibv_query_device() reports them; the IRD and ORD the
 * initiator offered, as rdma_cm hands them to the listener with the
 * connect request (svcrdma refuses a connection whose initiator_depth is
 * 0 there; ksmbd compares them with cifs's IRD/ORD private data); a QP
 * with ksmbd's 840 send WRs and 6 send SGEs: 6-SGE Sends, and the whole
 * send queue posted at once as one chain of 6-SGE Writes.
 */
static void t_caps(void)
{
	const struct qp_opts o = { .send_wr = CAPS_SQ, .recv_wr = 64 };
	struct rdma_conn_param p = conn_param;
	const size_t wlen = CAPS_SQ * CAPS_SGE * CAPS_CHUNK;
	char *cbuf = big_alloc(MIB), *sbuf = big_alloc(MIB);
	char *ref = big_alloc(wlen);
	struct ibv_send_wr *wr = calloc(CAPS_SQ, sizeof(*wr)), *bad = NULL;
	struct ibv_sge *sg = calloc(CAPS_SQ * CAPS_SGE, sizeof(*sg));
	struct ibv_wc wc[64];
	struct ibv_device_attr da;
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;
	struct ibv_mr *cmr, *smr;
	struct ibv_sge rs;
	uint32_t i, j, csge, ssge, cwr, swr;
	int got, good;

	if (!cbuf || !sbuf || !ref || !wr || !sg)
		goto out;
	if (!conn_resolve()) {
		ok(false, "caps: address and route resolved");
		goto out;
	}
	if (ibv_query_device(cli.id->verbs, &da)) {
		ok(false, "caps: ibv_query_device: %s", strerror(errno));
		goto out;
	}
	ok(da.device_cap_flags & IBV_DEVICE_MEM_MGT_EXTENSIONS,
	   "caps: IBV_DEVICE_MEM_MGT_EXTENSIONS (fast registration; flags %#x)",
	   da.device_cap_flags);
	ok(da.max_sge >= CAPS_SGE, "caps: max_sge %d >= %d", da.max_sge,
	   CAPS_SGE);
	ok(da.max_qp_wr >= CAPS_SQ && da.max_cqe >= CAPS_SQ,
	   "caps: max_qp_wr %d, max_cqe %d >= %d", da.max_qp_wr, da.max_cqe,
	   CAPS_SQ);
	ok(da.max_qp_rd_atom >= 1 && da.max_qp_init_rd_atom >= 1,
	   "caps: max_qp_rd_atom %d, max_qp_init_rd_atom %d >= 1",
	   da.max_qp_rd_atom, da.max_qp_init_rd_atom);
	diag("caps: max_sge_rd %d, max_mr %d, max_mr_size %" PRIu64,
	     da.max_sge_rd, da.max_mr, (uint64_t)da.max_mr_size);
	if (!side_setup(&cli, &o)) {
		ok(false, "caps: the client's QP with %d send WRs", CAPS_SQ);
		goto out;
	}
	/* distinct values, so that swapping them shows */
	p.initiator_depth = 3;
	p.responder_resources = 5;
	if (rdma_connect(cli.id, &p) || !wait_flag(&srv.requested, NULL, T_CM)) {
		ok(false, "caps: connect request at the server");
		goto out;
	}
	/*
	 * rdma_cm on iWARP: initiator_depth = the event's IRD, which kiwi
	 * takes from the initiator's MPA v2 IRD (cxgb4 does the same); siw
	 * reports its own limits.
	 */
	ok(srv.init_depth > 0 && srv.resp_res > 0,
	   "caps: the connect request's initiator_depth %u and responder_resources %u are > 0",
	   srv.init_depth, srv.resp_res);
	if (!peer_siw)
		ok(srv.init_depth == 5 && srv.resp_res == 3,
		   "caps: they are the initiator's IRD (5) and ORD (3) (got %u, %u)",
		   srv.init_depth, srv.resp_res);
	if (!side_setup(&srv, &o) || !conn_accept(NULL, 0)) {
		ok(false, "caps: connection established");
		goto out;
	}
	diag("caps: client's ESTABLISHED: initiator_depth %u responder_resources %u",
	     cli.init_depth, cli.resp_res);
	ibv_query_qp(cli.qp, &a, IBV_QP_CAP, &ia);
	csge = ia.cap.max_send_sge;
	cwr = ia.cap.max_send_wr;
	ibv_query_qp(srv.qp, &a, IBV_QP_CAP, &ia);
	ssge = ia.cap.max_send_sge;
	swr = ia.cap.max_send_wr;
	ok(csge >= CAPS_SGE && ssge >= CAPS_SGE && cwr >= CAPS_SQ &&
	   swr >= CAPS_SQ,
	   "caps: both QPs have >= %d send WRs and >= %d send SGEs (%u/%u, %u/%u)",
	   CAPS_SQ, CAPS_SGE, cwr, csge, swr, ssge);
	if (csge < CAPS_SGE || cwr < CAPS_SQ)
		goto out;
	cmr = side_reg(&cli, cbuf, MIB, IBV_ACCESS_LOCAL_WRITE);
	smr = side_reg(&srv, sbuf, MIB, IBV_ACCESS_LOCAL_WRITE |
		       IBV_ACCESS_REMOTE_WRITE);
	if (!cmr || !smr)
		goto out;
	fill(cbuf, MIB, 840);

	/* 64 Sends of 6 SGEs each (100 bytes from 6 places) */
	for (i = 0; i < 64; i++) {
		rs = sge(smr, sbuf + i * 1024, 1024);
		post_recv(srv.qp, 1000 + i, &rs, 1);
	}
	for (i = 0; i < 64; i++) {
		for (j = 0; j < CAPS_SGE; j++)
			sg[i * CAPS_SGE + j] = sge(cmr, cbuf + 65536 * j +
						   i * 100, 100);
		wr[i] = (struct ibv_send_wr){
			.wr_id = 2000 + i, .opcode = IBV_WR_SEND,
			.sg_list = &sg[i * CAPS_SGE], .num_sge = CAPS_SGE,
			.send_flags = IBV_SEND_SIGNALED,
			.next = i + 1 < 64 ? &wr[i + 1] : NULL,
		};
	}
	ok(!ibv_post_send(cli.qp, wr, &bad),
	   "caps: 64 Sends of %d SGEs posted in one chain", CAPS_SGE);
	got = poll_n(cli.scq, wc, 64, T_WC);
	for (i = 0, good = 0; i < (uint32_t)got; i++)
		good += wc[i].status == IBV_WC_SUCCESS;
	ok(got == 64 && good == 64, "caps: the 64 Sends complete (%d, %d good)",
	   got, good);
	got = poll_n(srv.rcq, wc, 64, T_WC);
	for (i = 0, good = 0; i < (uint32_t)got; i++) {
		char *r = sbuf + (wc[i].wr_id - 1000) * 1024;

		for (j = 0; j < CAPS_SGE; j++)
			if (memcmp(r + 100 * j, cbuf + 65536 * j +
				   (wc[i].wr_id - 1000) * 100, 100))
				break;
		good += wc[i].status == IBV_WC_SUCCESS &&
			wc[i].byte_len == 100 * CAPS_SGE && j == CAPS_SGE;
	}
	ok(got == 64 && good == 64,
	   "caps: 64 receives of 600 bytes, each the 6 pieces in order (%d, %d good)",
	   got, good);

	/*
	 * The whole send queue at once: 840 Writes, 6 SGEs each taken in
	 * reverse order, only the last signaled.
	 */
	for (i = 0; i < CAPS_SQ; i++) {
		for (j = 0; j < CAPS_SGE; j++) {
			char *src = cbuf + ((i * CAPS_SGE + CAPS_SGE - 1 - j) *
					    CAPS_CHUNK);

			sg[i * CAPS_SGE + j] = sge(cmr, src, CAPS_CHUNK);
			memcpy(ref + (i * CAPS_SGE + j) * CAPS_CHUNK, src,
			       CAPS_CHUNK);
		}
		wr[i] = (struct ibv_send_wr){
			.wr_id = 3000 + i, .opcode = IBV_WR_RDMA_WRITE,
			.sg_list = &sg[i * CAPS_SGE], .num_sge = CAPS_SGE,
			.send_flags = i + 1 < CAPS_SQ ? 0 : IBV_SEND_SIGNALED,
			.next = i + 1 < CAPS_SQ ? &wr[i + 1] : NULL,
		};
		wr[i].wr.rdma.rkey = smr->rkey;
		wr[i].wr.rdma.remote_addr = (uintptr_t)sbuf + 131072 +
			i * CAPS_SGE * CAPS_CHUNK;
	}
	ok(!ibv_post_send(cli.qp, wr, &bad),
	   "caps: %d Writes of %d SGEs posted in one chain", CAPS_SQ,
	   CAPS_SGE);
	expect_wc(cli.scq, 3000 + CAPS_SQ - 1, IBV_WC_SUCCESS, -1, T_WC,
		  "caps: the last (signaled) Write");
	ok(diff_at(sbuf + 131072, ref, wlen) < 0,
	   "caps: the %zu bytes written are the gathered bytes", wlen);
	ok(cq_quiet(cli.scq, 100), "caps: nothing else completes");
	expect_state(&cli, IBV_QPS_RTS, "after the full send queue");
out:
	conn_close();
	free(cbuf);
	free(sbuf);
	free(ref);
	free(wr);
	free(sg);
	check_counts("device capabilities");
}

/* ---- a QP's own caps, as RNICs hold posts to them ----------------------- */

#define QC_SGE		1
#define QC_INLINE	16

/*
 * Documentation/rnic-compat.md: irdma refuses at post time a WR with more
 * SGEs than the QP was created with, and inline data beyond the QP's
 * max_inline_data; kiwi reports the caps asked for and holds posts to them.
 */
static const struct qp_opts qp_small = {
	.send_wr = 16, .recv_wr = 16, .send_sge = QC_SGE, .recv_sge = QC_SGE,
	.inline_data = QC_INLINE,
};

static void qc_wr(struct ibv_send_wr *wr, uint64_t id, struct ibv_sge *sg,
		  int nsge, unsigned int flags)
{
	memset(wr, 0, sizeof(*wr));
	wr->wr_id = id;
	wr->opcode = IBV_WR_SEND;
	wr->sg_list = sg;
	wr->num_sge = nsge;
	wr->send_flags = flags | IBV_SEND_SIGNALED;
}

/* what rdma_create_qp() returned and ibv_query_qp() reports: as asked */
static void qc_caps_exact(struct side *s)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;
	int rv;

	ok(s->cap.max_send_sge == QC_SGE && s->cap.max_recv_sge == QC_SGE &&
	   s->cap.max_inline_data == QC_INLINE,
	   "qpcaps: %s QP created with %d send SGE, %d receive SGE, %d inline bytes: the caps returned are those (%u, %u, %u)",
	   s->name, QC_SGE, QC_SGE, QC_INLINE, s->cap.max_send_sge,
	   s->cap.max_recv_sge, s->cap.max_inline_data);
	memset(&a, 0, sizeof(a));
	rv = ibv_query_qp(s->qp, &a, IBV_QP_CAP, &ia);
	ok(!rv && a.cap.max_send_sge == QC_SGE &&
	   a.cap.max_recv_sge == QC_SGE && a.cap.max_inline_data == QC_INLINE,
	   "qpcaps: %s QP: ibv_query_qp reports them (%u, %u, %u)", s->name,
	   a.cap.max_send_sge, a.cap.max_recv_sge, a.cap.max_inline_data);
}

/* an SRQ holds its receives to the max_sge it was created with */
static void qc_srq(struct ibv_pd *pd, char *buf, struct ibv_mr *mr)
{
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 4,
						   .max_sge = QC_SGE } };
	struct ibv_recv_wr rw = { .wr_id = 120 }, *bad = NULL;
	struct ibv_sge rs[2];
	struct ibv_srq_attr q;
	struct ibv_srq *srq = ibv_create_srq(pd, &sa);
	int rv;

	ok(srq && sa.attr.max_sge == QC_SGE,
	   "qpcaps: SRQ created with max_sge %d returns it (%u)", QC_SGE,
	   sa.attr.max_sge);
	if (!srq)
		return;
	memset(&q, 0, sizeof(q));
	rv = ibv_query_srq(srq, &q);
	ok(!rv && q.max_sge == QC_SGE, "qpcaps: ibv_query_srq reports it (%u)",
	   q.max_sge);
	rs[0] = sge(mr, buf + 16384, 100);
	rs[1] = sge(mr, buf + 20480, 100);
	rw.sg_list = rs;
	rw.num_sge = 2;
	rv = ibv_post_srq_recv(srq, &rw, &bad);
	ok(rv == EINVAL && bad == &rw,
	   "qpcaps: an SRQ receive of 2 SGEs beyond its max_sge %d fails with EINVAL, bad_wr at it (got %s)",
	   QC_SGE, rv ? strerror(rv) : "success");
	rw.num_sge = 1;
	bad = NULL;
	rv = ibv_post_srq_recv(srq, &rw, &bad);
	ok(!rv, "qpcaps: an SRQ receive of 1 SGE is posted (%s)",
	   rv ? strerror(rv) : "ok");
	ibv_destroy_srq(srq);
}

/* Send and receive posts beyond the caps, refused; the QP unharmed. */
static void t_qpcaps(void)
{
	char *cbuf = big_alloc(65536), *sbuf = big_alloc(65536);
	struct ibv_send_wr w[2], *bad;
	struct ibv_recv_wr rw, *rbad = NULL;
	struct ibv_sge sg[2], rs[2];
	struct ibv_mr *cmr, *smr;
	int rv, i;

	if (!cbuf || !sbuf || !conn_open(&qp_small))
		goto out;
	qc_caps_exact(&cli);
	qc_caps_exact(&srv);
	cmr = side_reg(&cli, cbuf, 65536, IBV_ACCESS_LOCAL_WRITE);
	smr = side_reg(&srv, sbuf, 65536, IBV_ACCESS_LOCAL_WRITE);
	if (!cmr || !smr)
		goto out;
	fill(cbuf, 65536, 62);
	for (i = 0; i < 4; i++) {
		rs[0] = sge(smr, sbuf + i * 1024, 1024);
		post_recv(srv.qp, 100 + i, rs, 1);
	}
	sg[0] = sge(cmr, cbuf, 10);
	sg[1] = sge(cmr, cbuf + 100, 10);

	qc_wr(&w[0], 1, sg, 2, 0);
	bad = NULL;
	rv = ibv_post_send(cli.qp, &w[0], &bad);
	ok(rv == EINVAL && bad == &w[0],
	   "qpcaps: a Send of 2 SGEs on a QP of max_send_sge %d fails with EINVAL, bad_wr at it (got %s)",
	   QC_SGE, rv ? strerror(rv) : "success");
	qc_wr(&w[0], 2, sg, 1, 0);
	qc_wr(&w[1], 3, sg, 2, 0);
	w[0].next = &w[1];
	bad = NULL;
	rv = ibv_post_send(cli.qp, &w[0], &bad);
	ok(rv == EINVAL && bad == &w[1],
	   "qpcaps: a chain [1 SGE, 2 SGEs] fails with EINVAL, bad_wr at the second (got %s, bad_wr %s)",
	   rv ? strerror(rv) : "success",
	   bad == &w[1] ? "second" : bad == &w[0] ? "first" : "other");
	expect_wc(cli.scq, 2, IBV_WC_SUCCESS, -1, T_WC,
		  "qpcaps: the chain's first Send");
	expect_wc(srv.rcq, 100, IBV_WC_SUCCESS, 10, T_WC,
		  "qpcaps: its receive");

	sg[0].length = QC_INLINE + 1;
	qc_wr(&w[0], 4, sg, 1, IBV_SEND_INLINE);
	bad = NULL;
	rv = ibv_post_send(cli.qp, &w[0], &bad);
	ok(rv == EINVAL && bad == &w[0],
	   "qpcaps: an inline Send of %d bytes on a QP of max_inline_data %d fails with EINVAL, bad_wr at it (got %s)",
	   QC_INLINE + 1, QC_INLINE, rv ? strerror(rv) : "success");
	sg[0].length = QC_INLINE;
	qc_wr(&w[0], 5, sg, 1, IBV_SEND_INLINE);
	rv = ibv_post_send(cli.qp, &w[0], &bad);
	ok(!rv, "qpcaps: an inline Send of %d bytes is posted (%s)", QC_INLINE,
	   rv ? strerror(rv) : "ok");
	expect_wc(cli.scq, 5, IBV_WC_SUCCESS, -1, T_WC,
		  "qpcaps: the inline Send");
	expect_wc(srv.rcq, 101, IBV_WC_SUCCESS, QC_INLINE, T_WC,
		  "qpcaps: its receive");

	rs[0] = sge(smr, sbuf + 8192, 100);
	rs[1] = sge(smr, sbuf + 9216, 100);
	memset(&rw, 0, sizeof(rw));
	rw.wr_id = 110;
	rw.sg_list = rs;
	rw.num_sge = 2;
	rv = ibv_post_recv(srv.qp, &rw, &rbad);
	ok(rv == EINVAL && rbad == &rw,
	   "qpcaps: a receive of 2 SGEs on a QP of max_recv_sge %d fails with EINVAL, bad_wr at it (got %s)",
	   QC_SGE, rv ? strerror(rv) : "success");
	qc_srq(cli.pd, cbuf, cmr);
	ok(cq_quiet(cli.scq, 100) && cq_quiet(srv.rcq, 100),
	   "qpcaps: the refused WRs leave no completion");
	expect_state(&cli, IBV_QPS_RTS, "qpcaps: after the refused WRs");
	expect_state(&srv, IBV_QPS_RTS, "qpcaps: after the refused receive");

	/* the QP is not broken by them */
	sg[0].length = 10;
	qc_wr(&w[0], 6, sg, 1, 0);
	rv = ibv_post_send(cli.qp, &w[0], &bad);
	ok(!rv, "qpcaps: a Send of 1 SGE after them is posted (%s)",
	   rv ? strerror(rv) : "ok");
	expect_wc(cli.scq, 6, IBV_WC_SUCCESS, -1, T_WC,
		  "qpcaps: the Send after the refused WRs");
	expect_wc(srv.rcq, 102, IBV_WC_SUCCESS, 10, T_WC,
		  "qpcaps: its receive");
out:
	conn_close();
	free(cbuf);
	free(sbuf);
	check_counts("posts beyond the QP's caps");
}

/*
 * A process may write into its ring what the provider would refuse: a WQE
 * beyond the QP's caps (within what the slot can hold) completes in error
 * when the kernel takes it, and the QP goes to ERR (security.md).
 */
enum qc_ring { QC_SQE_SGE, QC_SQE_INLINE, QC_RQE_SGE };

/* the slot after the published WQE wr_id, in a ring of num 128-byte slots */
static void *qc_next_slot(uint64_t id, uint32_t num)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t ring = (size_t)num * 128, len = (ring + 64 + page - 1) &
		~(page - 1);
	struct fuzz_map m[32];
	int n = fuzz_maps(m, 32), i;
	size_t off;

	for (i = 0; i < n; i++) {
		if (m[i].len != len)
			continue;
		for (off = 0; off < ring; off += 128) {
			struct kiwi_rqe *r = (struct kiwi_rqe *)(m[i].p + off);

			if (r->id == id &&
			    (__atomic_load_n(&r->flags, __ATOMIC_ACQUIRE) &
			     KIWI_WQE_VALID))
				return m[i].p + (off + 128) % ring;
		}
	}
	return NULL;
}

/* writes WQE 201 beyond the caps into slot, VALID last */
static void qc_scribble(void *slot, enum qc_ring k, char *buf,
			struct ibv_mr *mr)
{
	struct kiwi_sqe *s = slot;
	struct kiwi_rqe *r = slot;
	uint16_t fl = KIWI_WQE_VALID;
	struct kiwi_sge *sg;
	int i;

	memset(slot, 0, 128);
	if (k == QC_RQE_SGE) {
		r->id = 201;
		r->num_sge = QC_SGE + 1;
		sg = r->sge;
	} else {
		s->id = 201;
		s->opcode = KIWI_OP_SEND;
		fl |= KIWI_WQE_SIGNALED;
		sg = s->sge;
		if (k == QC_SQE_INLINE) {
			fl |= KIWI_WQE_INLINE;
			s->inline_len = QC_INLINE + 1;
			memset(s->inline_data, 0x5a, QC_INLINE + 1);
		} else {
			s->num_sge = QC_SGE + 1;
		}
	}
	for (i = 0; k != QC_SQE_INLINE && i < QC_SGE + 1; i++) {
		sg[i].addr = (uintptr_t)buf + 4096 * (i + 1);
		sg[i].length = 512;
		sg[i].lkey = mr->lkey;
	}
	__atomic_store_n(k == QC_RQE_SGE ? &r->flags : &s->flags, fl,
			 __ATOMIC_RELEASE);
}

static bool qc_wait_err(struct side *s, int ms)
{
	long long end = kiwi_now_ms() + ms;

	while (qp_state(s->qp) != IBV_QPS_ERR && kiwi_now_ms() < end)
		pump(50);
	return qp_state(s->qp) == IBV_QPS_ERR;
}

static void t_qpcaps_ring(enum qc_ring k)
{
	static const char *const what[] = {
		"an SQE of 2 SGEs", "an inline SQE of 17 bytes",
		"an RQE of 2 SGEs",
	};
	static const char *const cap[] = {
		"max_send_sge 1", "max_inline_data 16", "max_recv_sge 1",
	};
	static const enum ibv_wc_status st[] = {
		IBV_WC_LOC_QP_OP_ERR, IBV_WC_LOC_LEN_ERR, IBV_WC_LOC_PROT_ERR,
	};
	char *cbuf = big_alloc(65536), *sbuf = big_alloc(65536);
	bool rq = k == QC_RQE_SGE;
	struct ibv_mr *cmr, *smr;
	struct ibv_sge sg;
	char label[160];
	void *slot;
	int i;

	if (!cbuf || !sbuf || !conn_prepare(&qp_small)) {
		ok(false, "qpcaps ring: %s: the client's QP", what[k]);
		goto out;
	}
	cmr = side_reg(&cli, cbuf, 65536, IBV_ACCESS_LOCAL_WRITE);
	if (!cmr)
		goto out;
	/* in INIT the WRs wait for the connection: write behind one */
	sg = sge(cmr, cbuf, 8);
	if (rq)
		post_recv(cli.qp, 200, &sg, 1);
	else
		post(cli.qp, IBV_WR_SEND, 200, &sg, 1, 0, 0, IBV_SEND_SIGNALED);
	slot = qc_next_slot(200, rq ? cli.cap.max_recv_wr :
			    cli.cap.max_send_wr);
	ok(slot != NULL,
	   "qpcaps ring: %s written into the mapped %s behind a posted WR",
	   what[k], rq ? "RQ" : "SQ");
	if (!slot)
		goto out;
	qc_scribble(slot, k, cbuf, cmr);
	if (!conn_request(&qp_small, NULL, 0))
		goto out;
	smr = side_reg(&srv, sbuf, 65536, IBV_ACCESS_LOCAL_WRITE);
	for (i = 0; smr && i < 2; i++) {
		sg = sge(smr, sbuf + i * 1024, 1024);
		post_recv(srv.qp, 300 + i, &sg, 1);
	}
	if (!smr || !conn_accept(NULL, 0)) {
		ok(false, "qpcaps ring: %s: connection established", what[k]);
		goto out;
	}
	for (i = 0; rq && i < 2; i++) {
		sg = sge(smr, sbuf + 8192, 8);
		post(srv.qp, IBV_WR_SEND, 400 + i, &sg, 1, 0, 0,
		     IBV_SEND_SIGNALED);
	}
	snprintf(label, sizeof(label), "qpcaps ring: %s: the WR before it",
		 what[k]);
	expect_wc(rq ? cli.rcq : cli.scq, 200, IBV_WC_SUCCESS, rq ? 8 : -1,
		  T_WC, label);
	snprintf(label, sizeof(label),
		 "qpcaps ring: %s on a QP of %s completes in error", what[k],
		 cap[k]);
	expect_wc(rq ? cli.rcq : cli.scq, 201, st[k], -1, T_WC, label);
	ok(qc_wait_err(&cli, T_WC),
	   "qpcaps ring: %s: the client QP goes to ERR", what[k]);
out:
	conn_close();
	free(cbuf);
	free(sbuf);
	check_counts("a WQE beyond the QP's caps in its ring");
}

/* ---- large and odd sizes ------------------------------------------------ */

static void t_large(void)
{
	static const size_t odd[] = { 1, 4097, 1000003 };
	const size_t big = 64 * MIB;
	size_t len = big + 8192;
	char *cbuf = big_alloc(len), *sbuf = big_alloc(len);
	struct ibv_mr *cmr, *smr;
	struct ibv_sge sg, rs;
	int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
		IBV_ACCESS_REMOTE_READ;
	unsigned int k;
	long long t0;

	if (!cbuf || !sbuf || !conn_open(&qp_default))
		goto out;
	cmr = side_reg(&cli, cbuf, len, access);
	smr = side_reg(&srv, sbuf, len, access);
	if (!cmr || !smr)
		goto out;
	for (k = 0; k < 4; k++) {
		size_t n = k < 3 ? odd[k] : big;
		size_t co = k < 3 ? 4093 + k : 0, so = k < 3 ? 13 * k + 1 : 0;
		char name[64];

		snprintf(name, sizeof(name), "%zu bytes", n);
		t0 = kiwi_now_ms();
		/* Send */
		fill(cbuf + co, n, 40 + k);
		memset(sbuf, 0, len);
		rs = sge(smr, sbuf + so, n);
		post_recv(srv.qp, 90 + k, &rs, 1);
		sg = sge(cmr, cbuf + co, n);
		post(cli.qp, IBV_WR_SEND, 1, &sg, 1, 0, 0, IBV_SEND_SIGNALED);
		expect_wc(cli.scq, 1, IBV_WC_SUCCESS, -1, T_BIG, "Send");
		expect_wc(srv.rcq, 90 + k, IBV_WC_SUCCESS, n, T_BIG, name);
		ok(diff_at(sbuf + so, cbuf + co, n) < 0 &&
		   !sbuf[so + n] && (!so || !sbuf[so - 1]),
		   "Send of %s: bytes compared, nothing beyond", name);
		/* Write */
		fill(cbuf + co, n, 50 + k);
		memset(sbuf, 0, len);
		post(cli.qp, IBV_WR_RDMA_WRITE, 2, &sg, 1, smr->rkey,
		     (uintptr_t)sbuf + so, IBV_SEND_SIGNALED);
		expect_wc(cli.scq, 2, IBV_WC_SUCCESS, -1, T_BIG, "Write");
		/* a 1-byte Read behind it: the Write is placed when it returns */
		rs = sge(cmr, cbuf + len - 1, 1);
		post(cli.qp, IBV_WR_RDMA_READ, 3, &rs, 1, smr->rkey,
		     (uintptr_t)sbuf, IBV_SEND_SIGNALED);
		expect_wc(cli.scq, 3, IBV_WC_SUCCESS, 1, T_BIG,
			  "1-byte Read behind the Write");
		ok(diff_at(sbuf + so, cbuf + co, n) < 0 && !sbuf[so + n] &&
		   (!so || !sbuf[so - 1]),
		   "Write of %s: bytes compared, nothing beyond", name);
		/* Read */
		fill(sbuf + so, n, 60 + k);
		memset(cbuf, 0, len);
		post(cli.qp, IBV_WR_RDMA_READ, 4, &sg, 1, smr->rkey,
		     (uintptr_t)sbuf + so, IBV_SEND_SIGNALED);
		expect_wc(cli.scq, 4, IBV_WC_SUCCESS, n, T_BIG, "Read");
		ok(diff_at(cbuf + co, sbuf + so, n) < 0 && !cbuf[co + n] &&
		   (!co || !cbuf[co - 1]),
		   "Read of %s: bytes compared, nothing beyond", name);
		diag("%s: Send, Write, Read in %lld ms", name,
		     kiwi_now_ms() - t0);
	}
	ok(cq_quiet(cli.scq, 100) && cq_quiet(srv.rcq, 100),
	   "large messages: nothing else completes");
out:
	conn_close();
	free(cbuf);
	free(sbuf);
	check_counts("large messages");
}

/* ---- a process killed in the middle of a stream -------------------------- */

struct remote {
	uint64_t addr;
	uint32_t rkey;
	uint32_t len;
};

#define K_SEND		(128 * 1024)	/* Send size in the stream */
#define K_WRITE		MIB		/* Write size */
#define K_RECVS		64		/* receives kept posted */

/*
 * The child: the client end, in its own process.  "send": streams Writes
 * and Sends to the server until killed.  "recv": posts receives, names a
 * Write (or Read) target in its private data and takes what comes until
 * killed.  "read": streams RDMA Reads from the server until killed, so that it
 * dies with Read Responses half placed.
 */
/*
 * The child of t_steal(): connect an rdma_cm_id that has no QP, naming
 * the parent's QP by number.  Exit 0 if rdma_connect() refused it with
 * EINVAL, 1 if it went ahead, 2 if the set-up failed.
 */
static int child_steal(uint32_t qpn)
{
	struct rdma_conn_param p = {
		.initiator_depth = 1,
		.responder_resources = 1,
		.qp_num = qpn,
	};
	int rv;

	cch = rdma_create_event_channel();
	lch = rdma_create_event_channel();	/* unused: pump polls it */
	if (!cch || !lch || !conn_resolve())
		return 2;
	rv = rdma_connect(cli.id, &p);
	if (rv && errno == EINVAL)
		return 0;
	fprintf(stderr, "child: rdma_connect with another process's QP %u: %d (%s)\n",
		qpn, rv, rv ? strerror(errno) : "accepted");
	return 1;
}

static int child_main(const char *mode)
{
	struct qp_opts o = { .send_wr = 32, .recv_wr = K_RECVS };
	bool sender = !strcmp(mode, "send");
	bool reader = !strcmp(mode, "read");
	size_t len = 16 * MIB;
	char *buf;
	struct remote r = { 0 }, me;
	struct ibv_mr *mr;
	struct ibv_sge sg;
	struct ibv_wc wc[16];
	uint64_t id = 0;
	int i, n, out = 0;

	if (!strncmp(mode, "steal:", 6))
		return child_steal(strtoul(mode + 6, NULL, 0));
	buf = big_alloc(len);
	cch = rdma_create_event_channel();
	lch = rdma_create_event_channel();	/* unused: pump polls it */
	if (!buf || !cch || !lch || !conn_prepare(&o)) {
		fprintf(stderr, "child: no client QP\n");
		return 2;
	}
	mr = side_reg(&cli, buf, len, IBV_ACCESS_LOCAL_WRITE |
		      IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	if (!mr)
		return 2;
	if (!sender && !reader)
		for (i = 0; i < K_RECVS; i++) {
			sg = sge(mr, buf + (size_t)i * K_SEND, K_SEND);
			post_recv(cli.qp, i, &sg, 1);
		}
	me.addr = (uintptr_t)buf + 8 * MIB;
	me.rkey = mr->rkey;
	me.len = 8 * MIB;
	if (rdma_connect(cli.id, &(struct rdma_conn_param){
			.initiator_depth = 8, .responder_resources = 8,
			.private_data = &me, .private_data_len = sizeof(me) }))
		return 2;
	if (!wait_flag(&cli.established, &cli.failed, T_CM)) {
		fprintf(stderr, "child: not established\n");
		return 2;
	}
	memcpy(&r, cli.pdata, sizeof(r));
	for (;;) {
		if (reader) {
			while (out < 8) {
				sg = sge(mr, buf + (id % 8) * K_WRITE, K_WRITE);
				if (post(cli.qp, IBV_WR_RDMA_READ, id, &sg, 1,
					 r.rkey, r.addr, IBV_SEND_SIGNALED))
					return 3;
				id++;
				out++;
			}
			n = ibv_poll_cq(cli.scq, 16, wc);
		} else if (sender) {
			while (out < 16) {
				bool w = id % 2;

				sg = sge(mr, buf, w ? K_WRITE : K_SEND);
				if (post(cli.qp, w ? IBV_WR_RDMA_WRITE :
					 IBV_WR_SEND, id, &sg, 1, r.rkey,
					 r.addr, IBV_SEND_SIGNALED))
					return 3;
				id++;
				out++;
			}
			n = ibv_poll_cq(cli.scq, 16, wc);
		} else {
			n = ibv_poll_cq(cli.rcq, 16, wc);
		}
		for (i = 0; i < n; i++) {
			if (wc[i].status != IBV_WC_SUCCESS)
				return 4;
			if (sender || reader) {
				out--;
			} else {
				sg = sge(mr, buf + wc[i].wr_id * K_SEND,
					 K_SEND);
				post_recv(cli.qp, wc[i].wr_id, &sg, 1);
			}
		}
		if (!n)
			usleep(200);
	}
}

static pid_t spawn_child(const char *mode)
{
	char p[16];
	pid_t pid;

	snprintf(p, sizeof(p), "%d", port);
	pid = fork();
	if (pid)
		return pid;
	execl("/proc/self/exe", "semantics", "--child", mode, "-c", cli_ip,
	      "-s", srv_ip, "-p", p, (char *)NULL);
	_exit(127);
}

/* Wait for the connection request of the child; accept it. */
static bool accept_child(const struct qp_opts *o, const void *pd,
			 uint8_t len, void (*before)(void))
{
	if (!wait_flag(&srv.requested, NULL, T_CM)) {
		diag("no connect request from the child");
		return false;
	}
	if (!side_setup(&srv, o))
		return false;
	if (before)
		before();
	if (rdma_accept(srv.id, &(struct rdma_conn_param){
			.initiator_depth = 8, .responder_resources = 8,
			.private_data = pd, .private_data_len = len })) {
		diag("rdma_accept: %s", strerror(errno));
		return false;
	}
	if (!wait_flag(&srv.established, &srv.failed, T_CM)) {
		diag("the child's connection is not established");
		return false;
	}
	return true;
}

static char *kbuf;
static struct ibv_mr *kmr;
static struct remote kme;	/* kmr's part the child targets */

/* for a child that sends: receives posted, Writes allowed */
static void kill_recv_setup(void)
{
	struct ibv_sge sg;
	int i;

	kmr = side_reg(&srv, kbuf, 16 * MIB, IBV_ACCESS_LOCAL_WRITE |
		       IBV_ACCESS_REMOTE_WRITE);
	for (i = 0; kmr && i < K_RECVS; i++) {
		sg = sge(kmr, kbuf + (size_t)i * K_SEND, K_SEND);
		post_recv(srv.qp, i, &sg, 1);
	}
	kme.rkey = kmr ? kmr->rkey : 0;
}

/* for a child that reads */
static void kill_read_setup(void)
{
	kmr = side_reg(&srv, kbuf, 16 * MIB, IBV_ACCESS_LOCAL_WRITE |
		       IBV_ACCESS_REMOTE_READ);
	kme.rkey = kmr ? kmr->rkey : 0;
}

/*
 * Accept the child's request with kme (filled in by setup, which
 * registers kmr once our QP exists) as private data.
 */
static bool accept_child_kmr(pid_t pid, const char *what, int recvs,
			     void (*setup)(void))
{
	bool up = accept_child(&(struct qp_opts){ .send_wr = 16,
						  .recv_wr = recvs },
			       &kme, sizeof(kme), setup) && kmr;

	ok(up, "%s: the child connects", what);
	if (!up) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
	return up;
}

static bool reap_child(pid_t pid, const char *what)
{
	int status = 0;
	pid_t w = waitpid(pid, &status, 0);
	bool killed = w == pid && WIFSIGNALED(status) &&
		WTERMSIG(status) == SIGKILL;

	ok(killed, "%s: the child died of SIGKILL (status %#x)", what,
	   status);
	return killed;
}

/* uverbs contexts back to what this process holds */
static void check_contexts(long base, const char *what)
{
	long v = -1;
	int tries;

	for (tries = 0; tries < 100; tries++) {
		v = kiwi_count("ucontexts");
		if (v == base)
			break;
		usleep(100000);
	}
	ok(v == base, "%s: the child's verbs context is released (ucontexts %ld, want %ld)",
	   what, v, base);
}

/* after a kill scenario: everything gone, the child's context too */
static void kill_done(long base, const char *what)
{
	conn_close();
	check_contexts(base, what);
	check_counts(what);
	free(kbuf);
	kbuf = NULL;
	kmr = NULL;
}

/* The child streams Sends and Writes to us and is killed. */
static void t_kill_sender(void)
{
	const char *what = "killed sender";
	struct ibv_wc wc[16];
	struct ibv_sge sg;
	long base = kiwi_count("ucontexts"), end;
	int got = 0, flushed = 0, other = 0, posted = K_RECVS, n, i;
	pid_t pid;

	kbuf = big_alloc(16 * MIB);
	if (!kbuf)
		return;
	pid = spawn_child("send");
	kme.addr = (uintptr_t)kbuf + 8 * MIB;
	kme.len = 8 * MIB;
	if (!accept_child_kmr(pid, what, K_RECVS, kill_recv_setup))
		goto out;
	/* take 8 Sends, reposting, then kill the child mid-stream */
	end = kiwi_now_ms() + T_BIG;
	while (got < 8 && kiwi_now_ms() < end) {
		n = ibv_poll_cq(srv.rcq, 16, wc);
		for (i = 0; i < n; i++) {
			if (wc[i].status != IBV_WC_SUCCESS) {
				other++;
				continue;
			}
			got++;
			sg = sge(kmr, kbuf + wc[i].wr_id * K_SEND, K_SEND);
			post_recv(srv.qp, wc[i].wr_id, &sg, 1);
			posted++;
		}
		if (!n)
			pump(1);
	}
	/* one poll may bring more than the 8 waited for */
	ok(got >= 8 && !other, "%s: %d (>= 8) Sends of %d KiB received while Writes stream in",
	   what, got, K_SEND / 1024);
	kill(pid, SIGKILL);
	ok(wait_flag(&srv.disconnected, NULL, T_CM),
	   "%s: RDMA_CM_EVENT_DISCONNECTED at the survivor", what);
	/* every receive still posted completes: taken or flushed */
	end = kiwi_now_ms() + T_WC;
	while (got + flushed + other < posted && kiwi_now_ms() < end) {
		n = ibv_poll_cq(srv.rcq, 16, wc);
		for (i = 0; i < n; i++) {
			if (wc[i].status == IBV_WC_SUCCESS)
				got++;
			else if (wc[i].status == IBV_WC_WR_FLUSH_ERR)
				flushed++;
			else
				other++;
		}
		if (!n)
			pump(1);
	}
	ok(got + flushed == posted && !other && flushed > 0,
	   "%s: all %d receives complete, %d flushed, %d taken, %d other",
	   what, posted, flushed, got, other);
	expect_state(&srv, IBV_QPS_ERR, what);
	reap_child(pid, what);
out:
	kill_done(base, what);
}

/*
 * The child streams RDMA Reads from us and is killed with Read Responses
 * in flight: its QP is flushed in the middle of placing one (kiwi once
 * dropped the sink MR's reference twice there).
 */
static void t_kill_reader(void)
{
	const char *what = "killed reader";
	long base = kiwi_count("ucontexts"), end;
	pid_t pid;

	kbuf = big_alloc(16 * MIB);
	if (!kbuf)
		return;
	pid = spawn_child("read");
	kme.addr = (uintptr_t)kbuf;
	kme.len = 16 * MIB;
	if (!accept_child_kmr(pid, what, 4, kill_read_setup))
		goto out;
	/* let Reads of 1 MiB stream (a few hundred ms of them), then kill */
	end = kiwi_now_ms() + 1500;
	while (kiwi_now_ms() < end && !srv.disconnected)
		pump(10);
	ok(!srv.disconnected, "%s: the child still reads after 1.5 s", what);
	kill(pid, SIGKILL);
	ok(wait_flag(&srv.disconnected, NULL, T_CM),
	   "%s: RDMA_CM_EVENT_DISCONNECTED at the survivor", what);
	expect_state(&srv, IBV_QPS_ERR, what);
	reap_child(pid, what);
out:
	kill_done(base, what);
}

/*
 * We stream Writes and Sends to the child, which is killed; or, reads,
 * RDMA Reads from it, so that we lose the peer with Read Responses half
 * placed (kiwi once dropped the sink MR's reference twice there).
 */
static void t_kill_receiver(bool reads)
{
	const char *what = reads ? "killed responder" : "killed receiver";
	struct remote r;
	struct ibv_wc wc[16];
	struct ibv_sge sg;
	struct ibv_mr *mr;
	long base = kiwi_count("ucontexts"), end;
	int done = 0, flushed = 0, other = 0, posted = 0, acc = 0, n, i;
	uint64_t id = 0;
	pid_t pid;

	kbuf = big_alloc(2 * MIB);
	if (!kbuf)
		return;
	pid = spawn_child("recv");
	if (!accept_child(&(struct qp_opts){ .send_wr = 32, .recv_wr = 16 }, NULL, 0, NULL) ||
	    srv.pdlen < sizeof(r)) {
		diag("private data: %u bytes", srv.pdlen);
		ok(false, "%s: the child connects", what);
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		goto out;
	}
	ok(true, "%s: the child connects", what);
	memcpy(&r, srv.pdata, sizeof(r));
	/* the Reads' sink needs remote write (rnic-compat.md) */
	mr = side_reg(&srv, kbuf, 2 * MIB, IBV_ACCESS_LOCAL_WRITE |
		      (reads ? IBV_ACCESS_REMOTE_WRITE : 0));
	if (!mr)
		goto out;
	end = kiwi_now_ms() + T_BIG;
	while (done < 8 && kiwi_now_ms() < end && !other) {
		while (posted - done - flushed - other < 16) {
			bool w = id % 2;
			enum ibv_wr_opcode op = reads ? IBV_WR_RDMA_READ :
				w ? IBV_WR_RDMA_WRITE : IBV_WR_SEND;

			sg = sge(mr, kbuf, w || reads ? K_WRITE : K_SEND);
			if (post(srv.qp, op, id++, &sg, 1, r.rkey, r.addr,
				 IBV_SEND_SIGNALED))
				break;
			posted++;
		}
		n = ibv_poll_cq(srv.scq, 16, wc);
		for (i = 0; i < n; i++) {
			if (wc[i].status == IBV_WC_SUCCESS)
				done++;
			else
				other++;
		}
		if (!n)
			pump(1);
	}
	ok(done >= 8 && !other, "%s: 8 %s done, %d outstanding", what,
	   reads ? "Reads" : "Writes and Sends", posted - done);
	kill(pid, SIGKILL);
	ok(wait_flag(&srv.disconnected, NULL, T_CM),
	   "%s: RDMA_CM_EVENT_DISCONNECTED at the survivor", what);
	/*
	 * The dying process's MRs may go before its QP (uverbs frees the
	 * newest objects first): a Write arriving in between is refused
	 * with a Terminate, and the oldest WR still outstanding here
	 * completes with IBV_WC_REM_ACCESS_ERR.
	 */
	end = kiwi_now_ms() + T_WC;
	while (done + flushed + acc + other < posted && kiwi_now_ms() < end) {
		n = ibv_poll_cq(srv.scq, 16, wc);
		for (i = 0; i < n; i++) {
			if (wc[i].status == IBV_WC_SUCCESS)
				done++;
			else if (wc[i].status == IBV_WC_WR_FLUSH_ERR)
				flushed++;
			else if (wc[i].status == IBV_WC_REM_ACCESS_ERR)
				acc++;
			else
				other++;
			if (wc[i].status != IBV_WC_SUCCESS &&
			    wc[i].status != IBV_WC_WR_FLUSH_ERR)
				diag("wr_id %" PRIu64 ": %s", wc[i].wr_id,
				     ibv_wc_status_str(wc[i].status));
		}
		if (!n)
			pump(1);
	}
	ok(done + flushed + acc == posted && !other && acc <= 1,
	   "%s: all %d WRs complete once: %d done, %d flushed, %d remote access error, %d other",
	   what, posted, done, flushed, acc, other);
	expect_state(&srv, IBV_QPS_ERR, what);
	sg = sge(mr, kbuf, 100);
	post(srv.qp, IBV_WR_SEND, 999, &sg, 1, 0, 0, IBV_SEND_SIGNALED);
	expect_wc(srv.scq, 999, IBV_WC_WR_FLUSH_ERR, -1, T_WC, reads ?
		  "killed responder: a Send posted afterwards" :
		  "killed receiver: a Send posted afterwards");
	reap_child(pid, what);
out:
	kill_done(base, what);
}

/* ---- main ----------------------------------------------------------------- */

int main(int argc, char **argv)
{
	struct sockaddr_in sa;
	const char *child = NULL;
	int opt;

	if (argc > 2 && !strcmp(argv[1], "--child")) {
		child = argv[2];
		argv += 2;
		argc -= 2;
	}
	while ((opt = getopt(argc, argv, "c:s:n:p:t:P:LS:D:")) != -1) {
		switch (opt) {
		case 'c':
			cli_ip = optarg;
			break;
		case 's':
			srv_ip = optarg;
			break;
		case 'n':
			ns_path = optarg;
			break;
		case 'p':
			port = atoi(optarg);
			break;
		case 't':
			tests = optarg;
			break;
		case 'P':
			peer_siw = !strcmp(optarg, "siw");
			break;
		case 'L':
			long_sizes = true;
			break;
		case 'S':
			fuzz_seed = strtoul(optarg, NULL, 0);
			break;
		case 'D':
			fuzz_secs = atoi(optarg);
			break;
		default:
			fprintf(stderr, "usage: %s [-c IP] [-s IP] [-n NETNS] [-p PORT] [-t GROUPS] [-P siw] [-L] [-S SEED] [-D SECS]\n",
				argv[0]);
			return 2;
		}
	}
	/*
	 * Both ends pin their MRs in this one process: siw counts the pages
	 * kiwi pinned against RLIMIT_MEMLOCK too (we are root: lift it).
	 */
	setrlimit(RLIMIT_MEMLOCK, &(struct rlimit){ RLIM_INFINITY,
						   RLIM_INFINITY });
	if (child)
		return child_main(child);

	signal(SIGPIPE, SIG_IGN);
	cch = rdma_create_event_channel();
	lch = rdma_create_event_channel();
	if (!cch || !lch || kiwi_sockaddr_in(&sa, srv_ip, port) ||
	    kiwi_cm_listen(lch, (struct sockaddr *)&sa, 8, ns_path,
			   &listen_id)) {
		ok(false, "listener on %s:%d in %s", srv_ip, port,
		   ns_path ? ns_path : "this namespace");
		return tap_end();
	}
	ok(true, "listener on %s:%d in %s", srv_ip, port,
	   ns_path ? ns_path : "this namespace");
	/* open every device now: the contexts this process holds stay put */
	rdma_free_devices(rdma_get_devices(NULL));
	/* librdmacm keeps a PD per device while an id (the listener) uses it */
	base_count[0] = kiwi_count("qps");
	base_count[1] = kiwi_count("mrs");
	base_count[2] = kiwi_count("cqs");
	base_count[3] = kiwi_count("pds");
	diag("baseline: qps %ld mrs %ld cqs %ld pds %ld", base_count[0],
	     base_count[1], base_count[2], base_count[3]);

	if (want("sqfull"))
		t_sq_full();
	if (want("lkey")) {
		t_lkey(LK_BAD_INDEX);
		t_lkey(LK_OTHER_PD);
		t_lkey(LK_OUTSIDE);
		t_lkey(LK_READ_NO_LW);
		t_lkey_chain();
		t_read_lkey_chain();
	}
	if (want("order"))
		t_order();
	if (want("access")) {
		t_access(AC_WRITE_RO);
		t_access(AC_WRITE_BOUNDS);
		t_access(AC_WRITE_DEREG);
		t_access(AC_WRITE_KEY);
		t_access(AC_WRITE_INVALIDATED);
		/*
		 * siw (6.1) answers Read Requests without checking the
		 * source MR's remote read right (siw_qp_tx.c references the
		 * Read Response's source with no rights asked for).
		 */
		if (!peer_siw)
			t_access(AC_READ_NO_RR);
		else
			diag("skipped against siw: it does not check remote read rights");
		if (long_sizes)
			t_access(AC_WRITE_BIG);
	}
	/* siw (6.1) keeps a QP's access flags but never checks them */
	if (want("qpaccess") && !peer_siw) {
		t_qp_rights();
		t_access(AC_QP_NO_RW);
		t_access(AC_QP_NO_RR);
	}
	if (want("steal"))
		t_steal();
	/* only when asked for: it breaks connections on purpose */
	if (strstr(tests, "ringfuzz"))
		t_ringfuzz();
	if (want("memops"))
		t_memops();
	if (want("rnic")) {
		t_rnic_sink(true);
		t_rnic_sink(false);
	}
	if (want("zero"))
		t_zero();
	if (want("sge"))
		t_sge();
	if (want("caps"))
		t_caps();
	if (want("qpcaps")) {
		t_qpcaps();
		t_qpcaps_ring(QC_SQE_SGE);
		t_qpcaps_ring(QC_SQE_INLINE);
		t_qpcaps_ring(QC_RQE_SGE);
	}
	if (want("large"))
		t_large();
	if (want("kill")) {
		t_kill_sender();
		t_kill_receiver(false);
		t_kill_receiver(true);
		t_kill_reader();
	}

	/*
	 * siw's race is rare (about one connection in forty under TCG); the
	 * same symptom, often, would mean kiwi sent its RTR before the
	 * Reply arrived (the case checks that order in kiwi's trace too).
	 */
	if (peer_siw)
		ok(siw_rtr_fixes <= 1,
		   "siw's unread RTR worked around at most once (%d times)",
		   siw_rtr_fixes);

	rdma_destroy_id(listen_id);
	rdma_destroy_event_channel(cch);
	rdma_destroy_event_channel(lch);
	return tap_end();
}
