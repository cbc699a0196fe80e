// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * A process holding a kiwi device while the device goes away
 * (tests/cases/12-device-removal.sh): PD, CQ with a completion channel,
 * MR and QP, rings mapped, receives posted; then it waits for async
 * events.  Removal (rdma link del, netdev deletion, rmmod) must reach it
 * as IBV_EVENT_DEVICE_FATAL, after which posting fails with an error,
 * polling invents no completion, nothing crashes on the revoked rings,
 * and every object can still be destroyed and the device closed.  A
 * forked child holding copies of the ring mappings, and the parent, read
 * every page of them after the removal: no SIGBUS, no crash.
 *
 *   device-removal DEVICE READY_FILE [SECONDS [DONE_FILE]]
 *
 * READY_FILE is created once everything is set up; SECONDS (default 120)
 * bounds the wait for the event.  DONE_FILE, created by the caller once
 * the removal command returned, is awaited (as long) before the checks
 * after removal: ib_uverbs queues DEVICE_FATAL before it revokes the
 * rings, so a quick process can still post into them in between, which
 * is harmless and not what the checks are about.  TAP on stdout, exit 0
 * when all passed.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>
#include <infiniband/verbs.h>

#include "kiwi-tap.h"

#define NRECV	4
#define BUFSZ	65536

static struct ibv_context *open_dev(const char *name)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_context *ctx = NULL;
	int i;

	for (i = 0; list && list[i]; i++)
		if (!strcmp(ibv_get_device_name(list[i]), name))
			ctx = ibv_open_device(list[i]);
	if (list)
		ibv_free_device_list(list);
	return ctx;
}

/*
 * Read every page this process has mapped from a uverbs device (the
 * rings); returns how many mappings there are, -1 if /proc fails.
 */
static int touch_rings(void)
{
	char line[512], path[256];
	unsigned long lo, hi, a;
	volatile const char *p;
	int n = 0;
	FILE *f = fopen("/proc/self/maps", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		path[0] = 0;
		if (sscanf(line, "%lx-%lx %*s %*s %*s %*s %255s", &lo, &hi,
			   path) < 2 || !strstr(path, "/infiniband/uverbs"))
			continue;
		for (a = lo; a < hi; a += 4096) {
			p = (volatile const char *)a;
			(void)*p;
		}
		n++;
	}
	fclose(f);
	return n;
}

/* Wait up to ms for fd to be readable; 1 ready, 0 timeout, -1 error. */
static int wait_fd(int fd, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	int n = poll(&p, 1, ms);

	if (n < 0)
		return -1;
	return n && (p.revents & (POLLIN | POLLERR | POLLHUP)) ? 1 : 0;
}

/* PATH exists within SECS seconds */
static int wait_file(const char *path, int secs)
{
	struct timespec t = { 0, 100 * 1000 * 1000 };
	int i;

	for (i = 0; i < secs * 10; i++) {
		if (!access(path, F_OK))
			return 1;
		nanosleep(&t, NULL);
	}
	return !access(path, F_OK);
}

int main(int argc, char **argv)
{
	struct ibv_qp_init_attr qpa = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 16, .max_recv_wr = 16,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_async_event ev;
	struct ibv_comp_channel *ch;
	struct ibv_context *ctx;
	struct ibv_recv_wr rwr, *bad_rwr;
	struct ibv_send_wr swr, *bad_swr;
	struct ibv_sge sge;
	struct ibv_wc wc[4];
	struct ibv_cq *cq, *evcq;
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	struct ibv_qp *qp;
	void *evctx;
	char *buf;
	int secs, i, rc, fatal = 0, cpipe[2];
	pid_t child;
	FILE *f;

	if (argc < 3) {
		fprintf(stderr,
			"usage: %s DEVICE READY_FILE [SECONDS [DONE_FILE]]\n",
			argv[0]);
		return 2;
	}
	secs = argc > 3 ? atoi(argv[3]) : 120;

	ctx = open_dev(argv[1]);
	if (!ok(ctx, "open %s", argv[1]))
		return tap_end();
	ch = ibv_create_comp_channel(ctx);
	pd = ibv_alloc_pd(ctx);
	cq = ch ? ibv_create_cq(ctx, 16, NULL, ch, 0) : NULL;
	buf = calloc(1, BUFSZ);
	mr = pd && buf ? ibv_reg_mr(pd, buf, BUFSZ, IBV_ACCESS_LOCAL_WRITE) :
			 NULL;
	qpa.send_cq = cq;
	qpa.recv_cq = cq;
	qp = pd && cq ? ibv_create_qp(pd, &qpa) : NULL;
	if (!ok(ch && pd && cq && mr && qp,
		"comp channel, PD, CQ, MR and QP created (rings mapped)"))
		return tap_end();

	sge.addr = (uintptr_t)buf;
	sge.length = BUFSZ / NRECV;
	sge.lkey = mr->lkey;
	memset(&rwr, 0, sizeof(rwr));
	rwr.sg_list = &sge;
	rwr.num_sge = 1;
	for (i = 0, rc = 0; i < NRECV && !rc; i++) {
		rwr.wr_id = 100 + i;
		rc = ibv_post_recv(qp, &rwr, &bad_rwr);
	}
	ok(!rc, "%d receives posted", NRECV);
	ok(!ibv_req_notify_cq(cq, 0), "CQ armed");
	ok(ibv_poll_cq(cq, 4, wc) == 0, "no completion before removal");

	ok(touch_rings() >= 3, "the CQ, SQ and RQ rings are mapped");
	/* a child with copies of the mappings, told when to touch them */
	if (pipe(cpipe))
		return tap_end();
	child = fork();
	if (child == 0) {
		char c;

		close(cpipe[1]);
		if (read(cpipe[0], &c, 1) != 1)
			_exit(3);
		_exit(touch_rings() >= 3 ? 0 : 4);
	}
	close(cpipe[0]);
	ok(child > 0, "a child holds copies of the ring mappings");

	f = fopen(argv[2], "w");
	if (!ok(f != NULL, "ready file %s written", argv[2]))
		return tap_end();
	fclose(f);

	/* Until the device goes: any other event is reported and skipped. */
	while (!fatal) {
		rc = wait_fd(ctx->async_fd, secs * 1000);
		if (rc != 1)
			break;
		if (ibv_get_async_event(ctx, &ev))
			break;
		if (ev.event_type == IBV_EVENT_DEVICE_FATAL)
			fatal = 1;
		else
			diag("async event %s before removal",
			     ibv_event_type_str(ev.event_type));
		ibv_ack_async_event(&ev);
	}
	if (!ok(fatal, "IBV_EVENT_DEVICE_FATAL within %d s", secs))
		return tap_end();
	if (argc > 4 && !ok(wait_file(argv[4], secs),
			    "the removal command returned within %d s", secs))
		return tap_end();

	/* The rings are revoked now: every use must fail cleanly. */
	ok(touch_rings() >= 3, "every page of the revoked rings can be read");
	if (child > 0) {
		int st = 0;

		if (write(cpipe[1], "x", 1) != 1)
			kill(child, SIGKILL);
		waitpid(child, &st, 0);
		ok(WIFEXITED(st) && WEXITSTATUS(st) == 0,
		   "the child reads its copies of the revoked rings (status %#x)",
		   st);
	}
	rwr.wr_id = 200;
	bad_rwr = NULL;
	rc = ibv_post_recv(qp, &rwr, &bad_rwr);
	ok(rc != 0 && bad_rwr == &rwr, "post_recv fails after removal (%s)",
	   strerror(rc));
	memset(&swr, 0, sizeof(swr));
	swr.wr_id = 300;
	swr.opcode = IBV_WR_SEND;
	swr.sg_list = &sge;
	swr.num_sge = 1;
	swr.send_flags = IBV_SEND_SIGNALED;
	bad_swr = NULL;
	rc = ibv_post_send(qp, &swr, &bad_swr);
	ok(rc != 0 && bad_swr == &swr, "post_send fails after removal (%s)",
	   strerror(rc));
	rc = ibv_poll_cq(cq, 4, wc);
	ok(rc == 0, "poll_cq returns no completion after removal (%d)", rc);
	ok(ibv_req_notify_cq(cq, 0) != 0, "req_notify_cq fails after removal");
	/* the completion channel ends instead of blocking forever */
	rc = wait_fd(ch->fd, 5000);
	ok(rc == 1 && ibv_get_cq_event(ch, &evcq, &evctx) != 0,
	   "the completion channel reports an error, not a hang");

	ok(!ibv_destroy_qp(qp), "destroy QP after removal");
	ok(!ibv_dereg_mr(mr), "deregister MR after removal");
	ok(!ibv_destroy_cq(cq), "destroy CQ after removal");
	ok(!ibv_dealloc_pd(pd), "deallocate PD after removal");
	ok(!ibv_destroy_comp_channel(ch), "destroy completion channel");
	ok(!ibv_close_device(ctx), "close the device");
	free(buf);
	return tap_end();
}
