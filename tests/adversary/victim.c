// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The adversary's victim: an ordinary librdmacm/libibverbs server on a
 * kiwi device (through the kiwi provider, so the user-space rings are
 * exercised too).  It listens on ADDR:PORT; every connection gets a fresh
 * CQ, QP and receive buffers, and is accepted.  One writable and one
 * read-only MR, registered once, are announced in a "victim-info" line
 * for the adversary.  It prints what a consumer observes: CM events,
 * completions, async events, and when a connection is gone a "done" line
 * with its receive counts.  Every object is released; on SIGTERM or
 * SIGINT it tears everything down and prints "victim-exit".  SIGUSR1
 * deregisters every MR at once (receive buffers of the live connections,
 * the writable and the read-only MR) and prints how long each
 * ibv_dereg_mr() took: "victim-dereg WHAT ms=N", then "victim-dereg done".
 * A connection whose private data asks for "sends=N reads=N" is also a
 * requester: once established, the victim posts N signaled Sends and N
 * signaled Reads (into a sink MR of the connection's own, deregistered
 * with it) and reports how they completed in its "done" line.
 * Before it exits it prints how many bytes of the writable MR's memory
 * are not zero ("victim-mem nonzero=N").
 *
 *   victim -a ADDR -p PORT [-d DEV] [--info FILE] [--recvs N]
 *          [--recv-len N] [--mr-len N] [--ro-len N] [--ird N] [--ord N]
 *          [--own-qp]
 */
#include <errno.h>
#include <getopt.h>
#include <infiniband/verbs.h>
#include <poll.h>
#include <pthread.h>
#include <rdma/rdma_cma.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "common.h"
#include "../verbs/common.h"

static pthread_mutex_t out_lock = PTHREAD_MUTEX_INITIALIZER;
static volatile sig_atomic_t stopping, dereg_asked;
static int failures;

static void __attribute__((format(printf, 1, 2))) say(const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&out_lock);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
	pthread_mutex_unlock(&out_lock);
}

static void __attribute__((format(printf, 1, 2))) fail(const char *fmt, ...)
{
	va_list ap;

	failures++;
	pthread_mutex_lock(&out_lock);
	printf("victim-error ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf(": %s\n", strerror(errno));
	fflush(stdout);
	pthread_mutex_unlock(&out_lock);
}

struct conn {
	struct conn *next;
	struct rdma_cm_id *id;
	struct ibv_qp *qp;
	bool own_qp;		/* ibv_create_qp, not rdma_create_qp */
	struct ibv_cq *cq;
	struct ibv_mr *rmr;
	char *rbuf;
	char name[64];
	unsigned int qp_num;
	unsigned int posted, ok, flushed, errs;
	/* requester: Sends and Reads posted once established */
	unsigned int sends, reads, sq_posted, sq_done, reads_ok;
	struct ibv_mr *smr;	/* the Reads' sink, the Sends' source */
	char *sbuf;
	bool closing;
	long long closed_at;
	long long close_by;
};

static struct {
	unsigned int recvs, recv_len, mr_len, ro_len, ird, ord;
	struct ibv_pd *pd;
	struct ibv_comp_channel *ch;
	struct ibv_mr *mr, *ro_mr;
	unsigned char *mem, *ro_mem;
	struct conn *conns;
	unsigned int nconns;
	bool own_qp;
} v = {
	.recvs = 4, .recv_len = 1024, .mr_len = 65536, .ro_len = 16U << 20,
	.ird = 4, .ord = 4,
};

/* the async thread names QPs by their connection */
static pthread_mutex_t conn_lock = PTHREAD_MUTEX_INITIALIZER;

/*
 * QP number -> connection name, kept after the connection is gone: an
 * async event may be read while its QP is being destroyed.
 */
#define QP_NAMES 256
static struct {
	unsigned int qp_num;
	char name[64];
} qp_names[QP_NAMES];
static unsigned int qp_names_next;

static void qp_name_add(unsigned int qp_num, const char *name)
{
	pthread_mutex_lock(&conn_lock);
	qp_names[qp_names_next % QP_NAMES].qp_num = qp_num;
	snprintf(qp_names[qp_names_next % QP_NAMES].name, 64, "%s", name);
	qp_names_next++;
	pthread_mutex_unlock(&conn_lock);
}

static const char *conn_name_of(unsigned int qp_num, char *buf, size_t n)
{
	unsigned int i;

	snprintf(buf, n, "?");
	pthread_mutex_lock(&conn_lock);
	/* newest first: QP numbers are reused eventually */
	for (i = qp_names_next; i-- > 0 && i + QP_NAMES >= qp_names_next;)
		if (qp_names[i % QP_NAMES].qp_num == qp_num) {
			snprintf(buf, n, "%s", qp_names[i % QP_NAMES].name);
			break;
		}
	pthread_mutex_unlock(&conn_lock);
	return buf;
}

static void *async_thread(void *arg)
{
	struct ibv_context *ctx = arg;

	while (!stopping) {
		struct pollfd pfd = { .fd = ctx->async_fd, .events = POLLIN };
		struct ibv_async_event ev;
		char name[64];

		if (poll(&pfd, 1, 200) <= 0)
			continue;
		if (ibv_get_async_event(ctx, &ev))
			continue;
		switch (ev.event_type) {
		case IBV_EVENT_QP_FATAL:
		case IBV_EVENT_QP_REQ_ERR:
		case IBV_EVENT_QP_ACCESS_ERR:
		case IBV_EVENT_COMM_EST:
		case IBV_EVENT_SQ_DRAINED:
		case IBV_EVENT_QP_LAST_WQE_REACHED:
			say("conn %s async %s qp=%u",
			    conn_name_of(ev.element.qp->qp_num, name,
					 sizeof(name)),
			    ibv_event_type_str(ev.event_type),
			    ev.element.qp->qp_num);
			break;
		default:
			say("async %s", ibv_event_type_str(ev.event_type));
		}
		ibv_ack_async_event(&ev);
	}
	return NULL;
}

/* "NAME recvs=N sends=N reads=N" from the adversary's private data */
static void parse_pd(struct conn *c, const void *pd, unsigned int len,
		     unsigned int *recvs)
{
	char s[256];
	const char *r;
	unsigned int i;

	if (len > sizeof(s) - 1)
		len = sizeof(s) - 1;
	memcpy(s, pd ? pd : "", pd ? len : 0);
	s[pd ? len : 0] = 0;
	for (i = 0; s[i] && s[i] != ' ' && i < sizeof(c->name) - 1; i++)
		c->name[i] = (s[i] > ' ' && s[i] < 127) ? s[i] : '_';
	c->name[i] = 0;
	if (!i)
		snprintf(c->name, sizeof(c->name), "unnamed");
	r = strstr(s, " recvs=");
	if (r)
		*recvs = strtoul(r + 7, NULL, 0);
	r = strstr(s, " sends=");
	if (r)
		c->sends = strtoul(r + 7, NULL, 0);
	r = strstr(s, " reads=");
	if (r)
		c->reads = strtoul(r + 7, NULL, 0);
	/* the QP's SQ holds 8, ORD 4 */
	if (c->sends > 4)
		c->sends = 4;
	if (c->reads > 4)
		c->reads = 4;
}

/* A Read's sink in the connection's own MR, and the Sends' source */
#define REQ_READ_LEN	4096
#define REQ_SEND_LEN	64
#define REQ_WR_ID	1000	/* receives' wr_ids are below */

/*
 * Established: the requester's WRs.  The Reads name an STag of the
 * adversary's (it only looks at the Read Requests kiwi sends).
 */
static void post_requests(struct conn *c)
{
	size_t len = (size_t)REQ_READ_LEN * c->reads + REQ_SEND_LEN * c->sends;
	unsigned int i;

	if (!c->sends && !c->reads)
		return;
	c->sbuf = calloc(1, len);
	/* the Reads' sink: remote write, as iWARP wants (rnic-compat.md) */
	c->smr = c->sbuf ? ibv_reg_mr(v.pd, c->sbuf, len,
				      IBV_ACCESS_LOCAL_WRITE |
				      IBV_ACCESS_REMOTE_WRITE) : NULL;
	if (!c->smr) {
		fail("conn %s: ibv_reg_mr (requester)", c->name);
		return;
	}
	for (i = 0; i < c->sends + c->reads; i++) {
		bool rd = i >= c->sends;
		struct ibv_sge sge = { .lkey = c->smr->lkey };
		struct ibv_send_wr wr = { .wr_id = REQ_WR_ID + i,
					  .sg_list = &sge, .num_sge = 1,
					  .send_flags = IBV_SEND_SIGNALED },
				   *bad;

		if (rd) {
			sge.addr = (uintptr_t)c->sbuf + REQ_SEND_LEN * c->sends +
				   (size_t)REQ_READ_LEN * (i - c->sends);
			sge.length = REQ_READ_LEN;
			wr.opcode = IBV_WR_RDMA_READ;
			wr.wr.rdma.rkey = 0x00adbeef;
			wr.wr.rdma.remote_addr = 0x10000 + REQ_READ_LEN * i;
		} else {
			sge.addr = (uintptr_t)c->sbuf + REQ_SEND_LEN * i;
			sge.length = REQ_SEND_LEN;
			snprintf(c->sbuf + REQ_SEND_LEN * i, REQ_SEND_LEN,
				 "victim send %u", i);
			wr.opcode = IBV_WR_SEND;
		}
		if (ibv_post_send(c->qp, &wr, &bad)) {
			fail("conn %s: ibv_post_send", c->name);
			return;
		}
		c->sq_posted++;
	}
	say("conn %s posted sends=%u reads=%u", c->name, c->sends, c->reads);
}

static void conn_free(struct conn *c)
{
	struct conn **pp;

	pthread_mutex_lock(&conn_lock);
	for (pp = &v.conns; *pp; pp = &(*pp)->next)
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	pthread_mutex_unlock(&conn_lock);
	if (c->own_qp && c->qp && ibv_destroy_qp(c->qp))
		fail("conn %s: ibv_destroy_qp", c->name);
	if (!c->own_qp && c->id && c->id->qp)
		rdma_destroy_qp(c->id);
	if (c->cq && ibv_destroy_cq(c->cq))
		fail("conn %s: ibv_destroy_cq", c->name);
	if (c->rmr && ibv_dereg_mr(c->rmr))
		fail("conn %s: ibv_dereg_mr", c->name);
	if (c->smr && ibv_dereg_mr(c->smr))
		fail("conn %s: ibv_dereg_mr (requester)", c->name);
	if (c->id && rdma_destroy_id(c->id))
		fail("conn %s: rdma_destroy_id", c->name);
	free(c->rbuf);
	free(c->sbuf);
	free(c);
}

static void on_request(struct rdma_cm_event *ev)
{
	struct rdma_conn_param cp = {
		.responder_resources = v.ird,
		.initiator_depth = v.ord,
		.private_data = KIWI_ADV_VICTIM_PD,
		.private_data_len = sizeof(KIWI_ADV_VICTIM_PD) - 1,
	};
	struct ibv_qp_init_attr qa = { 0 };
	struct conn *c = calloc(1, sizeof(*c));
	unsigned int recvs = v.recvs, i;

	if (!c) {
		/* the id cannot be destroyed before the event is acked */
		rdma_reject(ev->id, NULL, 0);
		fail("calloc");
		return;
	}
	c->id = ev->id;
	ev->id->context = c;
	parse_pd(c, ev->param.conn.private_data,
		 ev->param.conn.private_data_len, &recvs);
	/* listed at once: a refused one is freed by reap() after the ack */
	pthread_mutex_lock(&conn_lock);
	c->next = v.conns;
	v.conns = c;
	v.nconns++;
	pthread_mutex_unlock(&conn_lock);
	say("conn %s event CONNECT_REQUEST private_data_len=%u",
	    c->name, ev->param.conn.private_data_len);

	c->cq = ibv_create_cq(ev->id->verbs, recvs + 16, c, v.ch, 0);
	if (!c->cq || ibv_req_notify_cq(c->cq, 0)) {
		fail("conn %s: ibv_create_cq", c->name);
		goto refuse;
	}
	qa.send_cq = c->cq;
	qa.recv_cq = c->cq;
	qa.qp_type = IBV_QPT_RC;
	qa.cap.max_send_wr = 8;
	qa.cap.max_recv_wr = recvs ? recvs : 1;
	qa.cap.max_send_sge = 1;
	qa.cap.max_recv_sge = 1;
	if (v.own_qp) {
		/*
		 * --own-qp: a QP rdma_cm does not manage, moved to INIT here
		 * and named by number in rdma_accept, so that librdmacm does
		 * not modify it (to RTR) itself.
		 */
		struct ibv_qp_attr at = {
			.qp_state = IBV_QPS_INIT, .port_num = 1,
			.qp_access_flags = IBV_ACCESS_LOCAL_WRITE |
					   IBV_ACCESS_REMOTE_WRITE |
					   IBV_ACCESS_REMOTE_READ };

		c->own_qp = true;
		c->qp = ibv_create_qp(v.pd, &qa);
		if (!c->qp || ibv_modify_qp(c->qp, &at, IBV_QP_STATE |
					    IBV_QP_PORT |
					    IBV_QP_ACCESS_FLAGS)) {
			fail("conn %s: ibv_create_qp/ibv_modify_qp(INIT)",
			     c->name);
			goto refuse;
		}
		cp.qp_num = c->qp->qp_num;
	} else {
		if (rdma_create_qp(ev->id, v.pd, &qa)) {
			fail("conn %s: rdma_create_qp", c->name);
			goto refuse;
		}
		c->qp = ev->id->qp;
	}
	c->qp_num = c->qp->qp_num;
	qp_name_add(c->qp_num, c->name);
	c->rbuf = calloc(recvs ? recvs : 1, v.recv_len);
	c->rmr = c->rbuf ? ibv_reg_mr(v.pd, c->rbuf,
				      (recvs ? recvs : 1) * v.recv_len,
				      IBV_ACCESS_LOCAL_WRITE) : NULL;
	if (!c->rmr) {
		fail("conn %s: ibv_reg_mr (receive buffers)", c->name);
		goto refuse;
	}
	for (i = 0; i < recvs; i++) {
		struct ibv_sge sge = {
			.addr = (uintptr_t)c->rbuf + i * v.recv_len,
			.length = v.recv_len, .lkey = c->rmr->lkey };
		struct ibv_recv_wr wr = { .wr_id = i, .sg_list = &sge,
					  .num_sge = 1 }, *bad;

		if (ibv_post_recv(c->qp, &wr, &bad)) {
			fail("conn %s: ibv_post_recv", c->name);
			goto refuse;
		}
		c->posted++;
	}
	say("conn %s qp=%u recvs=%u", c->name, c->qp_num, c->posted);
	if (rdma_accept(ev->id, &cp)) {
		fail("conn %s: rdma_accept", c->name);
		c->closing = true;
		c->close_by = kiwi_now_ms();
		return;
	}
	say("conn %s accepted", c->name);
	return;
refuse:
	/* rdma_destroy_id would wait for this very event's ack */
	rdma_reject(ev->id, NULL, 0);
	c->closing = true;
	c->close_by = 0;
}

static void verify_write(struct conn *c, const char *msg)
{
	unsigned int off, len, seed, i;

	if (sscanf(msg, "verify %u %u %u", &off, &len, &seed) != 3 ||
	    off > v.mr_len || len > v.mr_len - off) {
		say("conn %s write-verify FAILED: bad request", c->name);
		return;
	}
	for (i = 0; i < len; i++)
		if (v.mem[off + i] != kiwi_adv_wpattern(i, seed)) {
			say("conn %s write-verify FAILED at byte %u: 0x%02x",
			    c->name, off + i, v.mem[off + i]);
			return;
		}
	/* and nothing around it */
	for (i = 0; i < v.mr_len; i++)
		if ((i < off || i >= off + len) && v.mem[i]) {
			say("conn %s write-verify FAILED: byte %u outside the Write is 0x%02x",
			    c->name, i, v.mem[i]);
			return;
		}
	say("conn %s write-verify ok (%u bytes at %u)", c->name, len, off);
}

static void poll_cq(struct conn *c)
{
	struct ibv_wc wc[8];
	int n, i;

	while ((n = ibv_poll_cq(c->cq, 8, wc)) > 0) {
		for (i = 0; i < n; i++) {
			if (wc[i].wr_id >= REQ_WR_ID) {
				/* a flush's opcode means nothing: by wr_id */
				bool rd = wc[i].wr_id - REQ_WR_ID >= c->sends;

				c->sq_done++;
				if (rd && wc[i].status == IBV_WC_SUCCESS)
					c->reads_ok++;
				say("conn %s %s wr_id=%llu %s", c->name,
				    rd ? "read" : "send",
				    (unsigned long long)wc[i].wr_id,
				    ibv_wc_status_str(wc[i].status));
				continue;
			}
			if (wc[i].status == IBV_WC_SUCCESS &&
			    wc[i].opcode == IBV_WC_RECV) {
				char text[128];
				const char *d = c->rbuf + wc[i].wr_id * v.recv_len;
				unsigned int k, len = wc[i].byte_len;

				c->ok++;
				for (k = 0; k < len && k < sizeof(text) - 1; k++)
					text[k] = (d[k] >= ' ' && d[k] < 127) ?
						  d[k] : '.';
				text[k] = 0;
				say("conn %s recv ok len=%u data=\"%s\"", c->name,
				    len, text);
				if (!strncmp(text, "verify ", 7))
					verify_write(c, text);
			} else if (wc[i].status == IBV_WC_WR_FLUSH_ERR) {
				c->flushed++;
			} else {
				c->errs++;
				say("conn %s completion %s opcode=%d wr_id=%llu",
				    c->name, ibv_wc_status_str(wc[i].status),
				    wc[i].opcode,
				    (unsigned long long)wc[i].wr_id);
			}
		}
	}
	if (n < 0)
		fail("conn %s: ibv_poll_cq", c->name);
}

static void on_event(struct rdma_cm_event *ev)
{
	struct conn *c = ev->id->context;
	const char *name = c ? c->name : "?";

	switch (ev->event) {
	case RDMA_CM_EVENT_CONNECT_REQUEST:
		on_request(ev);
		return;
	case RDMA_CM_EVENT_ESTABLISHED:
		say("conn %s event ESTABLISHED", name);
		if (c)
			post_requests(c);
		return;
	case RDMA_CM_EVENT_DISCONNECTED:
	case RDMA_CM_EVENT_CONNECT_ERROR:
	case RDMA_CM_EVENT_UNREACHABLE:
	case RDMA_CM_EVENT_REJECTED:
		say("conn %s event %s status=%d", name,
		    rdma_event_str(ev->event), ev->status);
		if (c && !c->closing) {
			c->closing = true;
			c->closed_at = kiwi_now_ms();
			/* time for the flushed receives to arrive */
			c->close_by = c->closed_at + 5000;
		}
		return;
	default:
		say("conn %s event %s status=%d", name,
		    rdma_event_str(ev->event), ev->status);
		if (ev->event == RDMA_CM_EVENT_DEVICE_REMOVAL)
			stopping = 1;
	}
}

/*
 * Destroying a QP discards its async events not yet read: leave the async
 * thread time to report them first.
 */
static bool async_pending(struct ibv_context *ctx)
{
	struct pollfd pfd = { .fd = ctx->async_fd, .events = POLLIN };

	return poll(&pfd, 1, 0) > 0;
}

static void reap(bool all)
{
	struct conn *c, *next;

	for (c = v.conns; c; c = next) {
		next = c->next;
		poll_cq(c);
		if (!c->closing && !all)
			continue;
		if (!all && kiwi_now_ms() < c->close_by &&
		    (c->ok + c->flushed + c->errs < c->posted ||
		     c->sq_done < c->sq_posted ||
		     kiwi_now_ms() < c->closed_at + 500 ||
		     async_pending(c->id->verbs)))
			continue;
		if (!c->closing)
			rdma_disconnect(c->id);
		poll_cq(c);
		if (c->sq_posted)
			say("conn %s requests sq_posted=%u sq_done=%u reads_ok=%u",
			    c->name, c->sq_posted, c->sq_done, c->reads_ok);
		say("conn %s done recv_ok=%u recv_flushed=%u recv_err=%u posted=%u%s",
		    c->name, c->ok, c->flushed, c->errs, c->posted,
		    c->ok + c->flushed + c->errs == c->posted ? "" :
		    " (receives never completed)");
		conn_free(c);
	}
}

static void on_signal(int sig)
{
	if (sig == SIGUSR1)
		dereg_asked = 1;
	else
		stopping = 1;
}

static void dereg_timed(struct ibv_mr **mr, const char *what)
{
	long long t0 = kiwi_now_ms();
	int rv;

	if (!*mr)
		return;
	rv = ibv_dereg_mr(*mr);
	if (rv) {
		errno = rv;
		fail("ibv_dereg_mr (%s)", what);
		return;
	}
	*mr = NULL;
	say("victim-dereg %s ms=%lld", what, kiwi_now_ms() - t0);
}

/*
 * SIGUSR1: deregister the memory that connections still use, while they
 * are up.  A peer may keep kiwi in the middle of using it (issue 12,
 * point 5); ibv_dereg_mr() must not wait for that peer.
 */
static void dereg_all(void)
{
	struct conn *c;
	char what[128];

	for (c = v.conns; c; c = c->next) {
		snprintf(what, sizeof(what), "conn=%s receive-buffers",
			 c->name);
		dereg_timed(&c->rmr, what);
	}
	dereg_timed(&v.mr, "writable-mr");
	dereg_timed(&v.ro_mr, "read-only-mr");
	say("victim-dereg done");
}

static int setup_mrs(struct ibv_context *ctx)
{
	unsigned int i;

	v.pd = ibv_alloc_pd(ctx);
	v.ch = ibv_create_comp_channel(ctx);
	if (!v.pd || !v.ch) {
		fail("ibv_alloc_pd/ibv_create_comp_channel");
		return -1;
	}
	v.mem = aligned_alloc(4096, v.mr_len);
	v.ro_mem = aligned_alloc(4096, v.ro_len);
	if (!v.mem || !v.ro_mem)
		return -1;
	memset(v.mem, 0, v.mr_len);
	for (i = 0; i < v.ro_len; i++)
		v.ro_mem[i] = kiwi_adv_pattern(i);
	v.mr = ibv_reg_mr(v.pd, v.mem, v.mr_len, IBV_ACCESS_LOCAL_WRITE |
			  IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	v.ro_mr = ibv_reg_mr(v.pd, v.ro_mem, v.ro_len, IBV_ACCESS_REMOTE_READ);
	if (!v.mr || !v.ro_mr) {
		fail("ibv_reg_mr");
		return -1;
	}
	return 0;
}

static void usage(void)
{
	fprintf(stderr, "usage: victim -a ADDR -p PORT [-d DEV] [--info FILE] [--recvs N]\n"
		"              [--recv-len N] [--mr-len N] [--ro-len N] [--ird N] [--ord N]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "info", required_argument, NULL, 'I' },
		{ "recvs", required_argument, NULL, 'r' },
		{ "recv-len", required_argument, NULL, 'l' },
		{ "mr-len", required_argument, NULL, 'm' },
		{ "ro-len", required_argument, NULL, 'o' },
		{ "ird", required_argument, NULL, 'i' },
		{ "ord", required_argument, NULL, 'O' },
		{ "own-qp", no_argument, NULL, 'Q' },
		{ 0 }
	};
	const char *addr = NULL, *dev = NULL, *info = NULL;
	struct sockaddr_in sa;
	struct rdma_event_channel *ec;
	struct rdma_cm_id *lid = NULL;
	struct sigaction sig = { .sa_handler = on_signal };
	pthread_t athr;
	bool athr_up = false;
	char line[512];
	int c, port = 0;

	while ((c = getopt_long(argc, argv, "a:p:d:", lo, NULL)) != -1) {
		switch (c) {
		case 'a': addr = optarg; break;
		case 'p': port = atoi(optarg); break;
		case 'd': dev = optarg; break;
		case 'I': info = optarg; break;
		case 'r': v.recvs = strtoul(optarg, NULL, 0); break;
		case 'l': v.recv_len = strtoul(optarg, NULL, 0); break;
		case 'm': v.mr_len = strtoul(optarg, NULL, 0); break;
		case 'o': v.ro_len = strtoul(optarg, NULL, 0); break;
		case 'i': v.ird = strtoul(optarg, NULL, 0); break;
		case 'O': v.ord = strtoul(optarg, NULL, 0); break;
		case 'Q': v.own_qp = true; break;
		default: usage();
		}
	}
	if (!addr || !port || kiwi_sockaddr_in(&sa, addr, port) ||
	    !v.recv_len || !v.mr_len || !v.ro_len)
		usage();
	/* a 16 MiB MR is above the default limit; best effort, as root */
	{
		struct rlimit rl = { RLIM_INFINITY, RLIM_INFINITY };

		setrlimit(RLIMIT_MEMLOCK, &rl);
	}
	sigaction(SIGTERM, &sig, NULL);
	sigaction(SIGINT, &sig, NULL);
	sigaction(SIGUSR1, &sig, NULL);

	ec = rdma_create_event_channel();
	if (!ec) {
		fail("rdma_create_event_channel");
		return 1;
	}
	/* requests wait in ec until the loop below: MRs come first */
	if (kiwi_cm_listen(ec, (struct sockaddr *)&sa, 16, NULL, &lid) ||
	    !lid->verbs) {
		fail("listen on %s (no RDMA device on it?)", addr);
		goto out;
	}
	if (dev && strcmp(ibv_get_device_name(lid->verbs->device), dev)) {
		errno = ENODEV;
		fail("%s belongs to %s, not %s", addr,
		     ibv_get_device_name(lid->verbs->device), dev);
		goto out;
	}
	if (setup_mrs(lid->verbs))
		goto out;
	if (pthread_create(&athr, NULL, async_thread, lid->verbs) == 0)
		athr_up = true;
	snprintf(line, sizeof(line),
		 "%s stag=0x%x addr=0x%llx len=%u ro_stag=0x%x ro_addr=0x%llx ro_len=%u recv_len=%u recvs=%u ird=%u ord=%u",
		 KIWI_ADV_INFO_TAG, v.mr->rkey,
		 (unsigned long long)(uintptr_t)v.mem, v.mr_len, v.ro_mr->rkey,
		 (unsigned long long)(uintptr_t)v.ro_mem, v.ro_len, v.recv_len,
		 v.recvs, v.ird, v.ord);
	if (info) {
		char tmp[512];
		FILE *f;

		snprintf(tmp, sizeof(tmp), "%s.tmp", info);
		f = fopen(tmp, "w");
		if (!f || fprintf(f, "%s\n", line) < 0 || fclose(f) ||
		    rename(tmp, info)) {
			fail("writing %s", info);
			goto out;
		}
	}
	say("%s", line);
	say("victim-listening %s:%d device %s", addr, port,
	    ibv_get_device_name(lid->verbs->device));

	while (!stopping) {
		struct pollfd pfd[2] = {
			{ .fd = ec->fd, .events = POLLIN },
			{ .fd = v.ch->fd, .events = POLLIN },
		};
		struct rdma_cm_event *ev;

		if (poll(pfd, 2, 100) < 0 && errno != EINTR) {
			fail("poll");
			break;
		}
		if (pfd[1].revents & POLLIN) {
			struct ibv_cq *cq;
			void *ctx;

			if (!ibv_get_cq_event(v.ch, &cq, &ctx)) {
				ibv_ack_cq_events(cq, 1);
				ibv_req_notify_cq(cq, 0);
			}
		}
		if (pfd[0].revents & POLLIN) {
			struct rdma_cm_event copy;

			if (rdma_get_cm_event(ec, &ev)) {
				fail("rdma_get_cm_event");
				break;
			}
			copy = *ev;
			if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST) {
				/* the private data lives in the event */
				on_event(ev);
				rdma_ack_cm_event(ev);
			} else {
				/* ack first: rdma_destroy_id waits for it */
				rdma_ack_cm_event(ev);
				on_event(&copy);
			}
		}
		if (dereg_asked) {
			dereg_asked = 0;
			dereg_all();
		}
		reap(false);
	}
	say("victim-stopping conns=%u", v.nconns);
	reap(true);
out:
	stopping = 1;
	if (athr_up)
		pthread_join(athr, NULL);
	if (lid && rdma_destroy_id(lid))
		fail("rdma_destroy_id (listener)");
	if (v.mr && ibv_dereg_mr(v.mr))
		fail("ibv_dereg_mr");
	if (v.ro_mr && ibv_dereg_mr(v.ro_mr))
		fail("ibv_dereg_mr (read-only)");
	if (v.ch && ibv_destroy_comp_channel(v.ch))
		fail("ibv_destroy_comp_channel");
	if (v.pd && ibv_dealloc_pd(v.pd))
		fail("ibv_dealloc_pd");
	if (ec)
		rdma_destroy_event_channel(ec);
	/* what peers wrote into the writable MR, even after it was gone */
	if (v.mem) {
		unsigned int i, n = 0;

		for (i = 0; i < v.mr_len; i++)
			n += v.mem[i] != 0;
		say("victim-mem nonzero=%u", n);
	}
	free(v.mem);
	free(v.ro_mem);
	say("victim-exit %s failures=%d", failures ? "with-errors" : "clean",
	    failures);
	return failures ? 1 : 0;
}
