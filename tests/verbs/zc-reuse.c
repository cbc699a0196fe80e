// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * zc-reuse: a Send's buffer is the application's again only when the Send
 * completes.  kiwi hands the pages of large messages to TCP by reference
 * and must then complete a WR only once the peer acknowledged its bytes
 * (Documentation/datapath.md "Zero copy"): a buffer rewritten right after
 * its completion must never reach the peer in its later version.  For
 * tests/cases/39-zerocopy.sh; works on any iWARP device.
 *
 *   zc-reuse server ADDR PORT N SIZE
 *	post N Receives of SIZE bytes, receive N Sends and check that Send
 *	k carries the pattern of sequence number k in every word (TAP)
 *   zc-reuse client ADDR PORT N SIZE DEPTH SIGNAL
 *	send N messages of SIZE bytes from DEPTH buffers in turn, at most
 *	DEPTH outstanding, every SIGNAL-th signaled; on each completion
 *	rewrite the buffers of it and of every WR before it at once with
 *	the pattern of a later sequence number
 *   zc-reuse hold ADDR PORT N SIZE ACTION DIR
 *	post N Sends of SIZE bytes (once DIR/go exists), report "# posted",
 *	then, once DIR/act exists: destroy (the QP, then the MR), dereg
 *	(the MR, then the QP) or wait (until killed); exit 0
 *
 * Word w of message k is KIWI_ZC_MAGIC | k.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <unistd.h>
#include <netdb.h>
#include <sys/stat.h>
#include <rdma/rdma_cma.h>

#include "kiwi-tap.h"
#include "common.h"

#define TIMEOUT_MS	(120 * 1000)
#define KIWI_ZC_MAGIC	0x5a43000000000000ULL

struct conn {
	struct rdma_event_channel *ch;
	struct rdma_cm_id *lid, *id;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	unsigned char *buf;
	size_t len;
};

static void fill(unsigned char *p, size_t size, uint64_t k)
{
	uint64_t *w = (uint64_t *)p, v = KIWI_ZC_MAGIC | k;
	size_t i;

	for (i = 0; i < size / 8; i++)
		w[i] = v;
}

/* the first word of p (size bytes) that is not k's, -1 if none */
static long check(const unsigned char *p, size_t size, uint64_t k)
{
	const uint64_t *w = (const uint64_t *)p;
	uint64_t v = KIWI_ZC_MAGIC | k;
	size_t i;

	for (i = 0; i < size / 8; i++)
		if (w[i] != v)
			return (long)i;
	return -1;
}

static int setup_qp(struct conn *c, int sq, int rq, size_t len)
{
	struct ibv_qp_init_attr qa = {
		.cap = { .max_send_wr = sq, .max_recv_wr = rq,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
	};

	c->len = len;
	if (posix_memalign((void **)&c->buf, 4096, len)) {
		fprintf(stderr, "zc-reuse: no memory for %zu bytes\n", len);
		return -1;
	}
	memset(c->buf, 0, len);
	c->pd = ibv_alloc_pd(c->id->verbs);
	c->cq = c->pd ? ibv_create_cq(c->id->verbs, sq + rq, NULL, NULL, 0) :
		NULL;
	c->mr = c->cq ? ibv_reg_mr(c->pd, c->buf, len,
				   IBV_ACCESS_LOCAL_WRITE) : NULL;
	if (!c->mr) {
		perror("zc-reuse: pd/cq/mr");
		return -1;
	}
	qa.send_cq = c->cq;
	qa.recv_cq = c->cq;
	if (rdma_create_qp(c->id, c->pd, &qa)) {
		perror("zc-reuse: rdma_create_qp");
		return -1;
	}
	return 0;
}

static int server(struct conn *c, struct addrinfo *ai, int n, size_t size)
{
	struct rdma_conn_param cp = { .responder_resources = 1 };
	struct ibv_recv_wr wr, *bad;
	struct ibv_sge sge;
	struct ibv_wc wc;
	int i, got = 0, failed = 0, bad_len = 0, bad_data = 0, order = 0;
	long long end;
	long w;

	if (kiwi_cm_listen(c->ch, ai->ai_addr, 1, NULL, &c->lid))
		return 1;
	printf("# listening\n");
	fflush(stdout);
	if (kiwi_cm_expect(c->ch, RDMA_CM_EVENT_CONNECT_REQUEST, -1,
			   &c->id) ||
	    setup_qp(c, 1, n, (size_t)n * size))
		return 1;
	/* every Receive before the first Send: iWARP has no RNR retry */
	for (i = 0; i < n; i++) {
		sge.addr = (uintptr_t)(c->buf + (size_t)i * size);
		sge.length = size;
		sge.lkey = c->mr->lkey;
		memset(&wr, 0, sizeof(wr));
		wr.wr_id = i;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		if (ibv_post_recv(c->id->qp, &wr, &bad)) {
			perror("zc-reuse: ibv_post_recv");
			return 1;
		}
	}
	if (rdma_accept(c->id, &cp) ||
	    kiwi_cm_expect(c->ch, RDMA_CM_EVENT_ESTABLISHED, -1, NULL))
		return 1;
	end = kiwi_now_ms() + TIMEOUT_MS;
	while (got < n && kiwi_now_ms() < end) {
		int r = ibv_poll_cq(c->cq, 1, &wc);

		if (r < 0)
			break;
		if (!r) {
			usleep(100);
			continue;
		}
		if (wc.status != IBV_WC_SUCCESS) {
			fprintf(stderr, "zc-reuse: Receive %llu status %d\n",
				(unsigned long long)wc.wr_id, wc.status);
			failed++;
			break;
		}
		/* Receives complete in order: Send k fills Receive k */
		if (wc.wr_id != (uint64_t)got)
			order++;
		if (wc.byte_len != size) {
			bad_len++;
		} else {
			w = check(c->buf + wc.wr_id * size, size, wc.wr_id);
			if (w >= 0) {
				if (bad_data++ < 5)
					fprintf(stderr,
						"zc-reuse: message %llu word %ld is %#llx\n",
						(unsigned long long)wc.wr_id, w,
						(unsigned long long)((uint64_t *)
						(c->buf + wc.wr_id * size))[w]);
			}
		}
		got++;
	}
	ok(got == n && !failed, "%d Sends of %zu bytes received (%d)", n,
	   size, got);
	ok(!bad_len, "each of the length sent (%d wrong)", bad_len);
	ok(!order, "in order (%d out of place)", order);
	ok(!bad_data,
	   "each carries its own sequence number in every word, none a later buffer's (%d wrong)",
	   bad_data);
	rdma_disconnect(c->id);
	return tap_failed != 0;
}

static int post_send(struct conn *c, int k, size_t size, int depth,
		     int signaled)
{
	struct ibv_send_wr wr, *bad;
	struct ibv_sge sge;

	sge.addr = (uintptr_t)(c->buf + (size_t)(k % depth) * size);
	sge.length = size;
	sge.lkey = c->mr->lkey;
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = k;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = signaled ? IBV_SEND_SIGNALED : 0;
	if (ibv_post_send(c->id->qp, &wr, &bad)) {
		perror("zc-reuse: ibv_post_send");
		return -1;
	}
	return 0;
}

static int connect_client(struct conn *c, struct addrinfo *ai, int sq,
			  size_t len)
{
	struct rdma_conn_param cp = { .initiator_depth = 1 };

	return kiwi_cm_resolve(c->ch, NULL, ai->ai_addr, TIMEOUT_MS, -1,
			       &c->id) ||
		setup_qp(c, sq, 1, len) || rdma_connect(c->id, &cp) ||
		kiwi_cm_expect(c->ch, RDMA_CM_EVENT_ESTABLISHED, -1, NULL);
}

static int client(struct conn *c, struct addrinfo *ai, int n, size_t size,
		  int depth, int sig)
{
	int next = 0, done = 0, k, r;
	struct ibv_wc wc;
	long long end;

	if (connect_client(c, ai, depth, (size_t)depth * size))
		return 1;
	end = kiwi_now_ms() + TIMEOUT_MS;
	while (done < n) {
		while (next < n && next - done < depth) {
			fill(c->buf + (size_t)(next % depth) * size, size, next);
			if (post_send(c, next, size, depth,
				      next % sig == sig - 1 || next == n - 1))
				return 1;
			next++;
		}
		r = ibv_poll_cq(c->cq, 1, &wc);
		if (r < 0)
			return 1;
		if (!r) {
			if (kiwi_now_ms() > end) {
				fprintf(stderr, "zc-reuse: %d of %d completed\n",
					done, n);
				return 1;
			}
			continue;
		}
		if (wc.status != IBV_WC_SUCCESS) {
			fprintf(stderr, "zc-reuse: Send %llu status %d\n",
				(unsigned long long)wc.wr_id, wc.status);
			return 1;
		}
		/*
		 * This WR and every one before it are done: their buffers
		 * are ours, rewrite them at once with a later number.
		 */
		for (k = done; k <= (int)wc.wr_id; k++)
			fill(c->buf + (size_t)(k % depth) * size, size,
			     k + depth);
		done = (int)wc.wr_id + 1;
	}
	printf("# %d Sends of %zu bytes completed\n", n, size);
	return kiwi_cm_expect(c->ch, RDMA_CM_EVENT_DISCONNECTED, -1,
			      NULL) ? 1 : 0;
}

static void wait_file(const char *dir, const char *name)
{
	char path[512];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	while (stat(path, &st))
		usleep(50 * 1000);
}

static int hold(struct conn *c, struct addrinfo *ai, int n, size_t size,
		const char *action, const char *dir)
{
	int k;

	if (connect_client(c, ai, n, (size_t)n * size))
		return 1;
	printf("# connected\n");
	fflush(stdout);
	wait_file(dir, "go");
	for (k = 0; k < n; k++) {
		fill(c->buf + (size_t)k * size, size, k);
		if (post_send(c, k, size, n, 1))
			return 1;
	}
	printf("# posted\n");
	fflush(stdout);
	wait_file(dir, "act");
	if (!strcmp(action, "destroy")) {
		rdma_destroy_qp(c->id);
		if (ibv_dereg_mr(c->mr))
			return 1;
	} else if (!strcmp(action, "dereg")) {
		if (ibv_dereg_mr(c->mr))
			return 1;
		rdma_destroy_qp(c->id);
	} else {
		for (;;)
			pause();
	}
	printf("# %s done\n", action);
	fflush(stdout);
	return 0;
}

int main(int argc, char **argv)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai;
	static struct conn c;
	size_t size;
	int n, rv;

	if (argc < 6) {
		fprintf(stderr, "usage: zc-reuse server|client|hold ADDR PORT N SIZE [DEPTH SIGNAL | ACTION DIR]\n");
		return 2;
	}
	n = atoi(argv[4]);
	size = strtoul(argv[5], NULL, 0);
	if (n < 1 || size < 8 || size % 8 ||
	    getaddrinfo(argv[2], argv[3], &hints, &ai))
		return 2;
	c.ch = rdma_create_event_channel();
	if (!c.ch)
		return 1;
	if (!strcmp(argv[1], "server")) {
		printf("1..4\n");
		rv = server(&c, ai, n, size);
	} else if (!strcmp(argv[1], "client") && argc == 8 &&
		   atoi(argv[6]) > 0 && atoi(argv[7]) > 0 &&
		   atoi(argv[7]) <= atoi(argv[6])) {
		rv = client(&c, ai, n, size, atoi(argv[6]), atoi(argv[7]));
	} else if (!strcmp(argv[1], "hold") && argc == 8) {
		rv = hold(&c, ai, n, size, argv[6], argv[7]);
	} else {
		rv = 2;
	}
	/* process exit releases the rest */
	freeaddrinfo(ai);
	return rv;
}
