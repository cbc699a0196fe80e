// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * verbs-fuzz: seeded random sequences of verbs calls through libibverbs,
 * libkiwi and ib_uverbs into kiwi.ko: objects created, used, modified and
 * destroyed in any order, with attributes drawn from the valid range, its
 * edges and beyond it, and work requests naming live, dead and made-up
 * keys.  Several processes at once; some are killed holding objects, some
 * close the device without destroying what they made.  Prints TAP.
 *
 *   verbs-fuzz [-d kiwi0] [-S SEED] [-D SECS] [-P PROCS]
 *
 * What it asserts is what a user can observe: every call returns success
 * or an errno a verb may return (anything else is reported with the call
 * and its arguments), no process dies but those killed on purpose, and
 * kiwi's object counts are back to zero at the end.  The case around it
 * (62-semantics) checks the kernel log.
 */
#include <errno.h>
#include <stddef.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <infiniband/verbs.h>

#include "kiwi-abi.h"
#include "kiwi-tap.h"
#include "kiwi-objects.h"

#define SLOTS		8	/* live objects of each kind per process */
/*
 * CQ sizes around this, not KIWI_MAX_CQE: a full CQ is 32 MiB, and 3
 * processes x SLOTS of them would not fit the guest.  verbs-objects
 * checks the limit itself (max_cqe, max_cqe + 1).
 */
#define FZ_MAX_CQE	65536
#define POOL_SIZE	(1 << 20)

static const char *dev_name = "kiwi0";
static unsigned long seed = 1;
static int secs = 10, procs = 3;

/* xorshift64*: the same seed gives the same sequence of calls */
static uint64_t rng_state;

static uint64_t rnd(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545F4914F6CDD1DULL;
}

static uint32_t below(uint32_t n)
{
	return n ? (uint32_t)(rnd() % n) : 0;
}

/* a count around a limit: 0, 1, small, the limit, just past it, huge */
static uint32_t edgy(uint32_t max)
{
	switch (below(8)) {
	case 0: return 0;
	case 1: return 1;
	case 2: return max;
	case 3: return max + 1;
	case 4: return (uint32_t)rnd();
	default: return 1 + below(max < 64 ? max : 64);
	}
}

struct fz {
	char *pool;
	unsigned long calls, odd, slow;
	double t;
	int id;
	/* what fz_open() clears: */
	struct ibv_context *ctx;
	struct ibv_comp_channel *ch;
	struct ibv_pd *pd[SLOTS];
	struct ibv_cq *cq[SLOTS];
	struct ibv_qp *qp[SLOTS];
	struct ibv_srq *srq[SLOTS];
	struct ibv_mr *mr[SLOTS];
	uint32_t dead_keys[SLOTS];	/* lkeys of MRs deregistered */
};

/*
 * The errnos a verb may return to a caller with bad arguments, a busy
 * object or no room left.  Anything else is a finding.
 */
static bool errno_ok(int e)
{
	switch (e) {
	case 0: case EINVAL: case EBUSY: case ENOMEM: case EOPNOTSUPP:
	case EPERM: case EFAULT: case ENOSPC: case EAGAIN: case E2BIG:
	case ERANGE: case ENOSYS: case EACCES:
		return true;
	default:
		return false;
	}
}

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

/* Called right after each verb; f->t is when the previous one returned. */
static void check(struct fz *f, int rv, const char *what)
{
	int e = rv < 0 ? errno : rv;
	double t = now();

	/* a verb that blocks for long is a finding too (reported, counted) */
	if (t - f->t > 2.0) {
		f->slow++;
		if (f->slow <= 10)
			printf("# proc %d: %s took %.1f s\n", f->id, what,
			       t - f->t);
	}
	f->t = t;
	f->calls++;
	if (!errno_ok(e)) {
		f->odd++;
		if (f->odd <= 10)
			printf("# proc %d: %s returned %d (%s)\n", f->id, what,
			       rv, strerror(e));
	}
}

static void check_obj(struct fz *f, void *obj, const char *what)
{
	check(f, obj ? 0 : -1, what);
}

static struct ibv_cq *any_cq(struct fz *f)
{
	return f->cq[below(SLOTS)];
}

static uint32_t some_lkey(struct fz *f)
{
	struct ibv_mr *mr;

	switch (below(4)) {
	case 0:
		return f->dead_keys[below(SLOTS)];
	case 1:
		return (uint32_t)rnd();
	default:
		mr = f->mr[below(SLOTS)];
		return mr ? mr->lkey : (uint32_t)rnd();
	}
}

static void fill_sge(struct fz *f, struct ibv_sge *sg, int n)
{
	int i;

	for (i = 0; i < n; i++) {
		uint32_t off = below(POOL_SIZE);

		sg[i].addr = below(8) ? (uintptr_t)f->pool + off : rnd();
		sg[i].length = below(4) ? below(POOL_SIZE - off + 1) :
					  (uint32_t)rnd();
		sg[i].lkey = some_lkey(f);
	}
}

static void do_pd(struct fz *f)
{
	int i = below(SLOTS);

	if (f->pd[i]) {
		int rv = ibv_dealloc_pd(f->pd[i]);

		check(f, rv, "ibv_dealloc_pd");
		if (!rv)
			f->pd[i] = NULL;
	} else {
		f->pd[i] = ibv_alloc_pd(f->ctx);
		check_obj(f, f->pd[i], "ibv_alloc_pd");
	}
}

static void do_cq(struct fz *f)
{
	int i = below(SLOTS), rv;

	if (f->cq[i] && below(3)) {
		rv = ibv_destroy_cq(f->cq[i]);
		check(f, rv, "ibv_destroy_cq");
		if (!rv)
			f->cq[i] = NULL;
	} else if (f->cq[i]) {
		rv = ibv_resize_cq(f->cq[i], (int)edgy(FZ_MAX_CQE));
		check(f, rv, "ibv_resize_cq");
	} else {
		f->cq[i] = ibv_create_cq(f->ctx, (int)edgy(FZ_MAX_CQE / 16),
					 NULL, below(2) ? f->ch : NULL, 0);
		check_obj(f, f->cq[i], "ibv_create_cq");
	}
}

static void do_srq(struct fz *f)
{
	int i = below(SLOTS), rv;
	struct ibv_srq_init_attr a = {};
	struct ibv_srq_attr m = {};
	struct ibv_pd *pd = f->pd[below(SLOTS)];

	if (f->srq[i] && below(2)) {
		rv = ibv_destroy_srq(f->srq[i]);
		check(f, rv, "ibv_destroy_srq");
		if (!rv)
			f->srq[i] = NULL;
	} else if (f->srq[i]) {
		m.max_wr = edgy(KIWI_MAX_SRQ_WR);
		m.srq_limit = edgy(64);
		rv = ibv_modify_srq(f->srq[i], &m,
				    below(2) ? IBV_SRQ_LIMIT :
					       IBV_SRQ_MAX_WR | IBV_SRQ_LIMIT);
		check(f, rv, "ibv_modify_srq");
	} else if (pd) {
		a.attr.max_wr = edgy(256);
		a.attr.max_sge = edgy(KIWI_MAX_SGE);
		a.attr.srq_limit = edgy(16);
		f->srq[i] = ibv_create_srq(pd, &a);
		check_obj(f, f->srq[i], "ibv_create_srq");
	}
}

static void do_mr(struct fz *f)
{
	static const int acc[] = {
		0, IBV_ACCESS_LOCAL_WRITE,
		IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE,
		IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ,
		IBV_ACCESS_REMOTE_WRITE,	/* without LOCAL_WRITE: EINVAL */
		IBV_ACCESS_REMOTE_ATOMIC,
		IBV_ACCESS_MW_BIND, 0x7fffffff,
	};
	int i = below(SLOTS), rv;
	struct ibv_pd *pd = f->pd[below(SLOTS)];

	if (f->mr[i]) {
		uint32_t key = f->mr[i]->lkey;

		rv = ibv_dereg_mr(f->mr[i]);
		check(f, rv, "ibv_dereg_mr");
		if (!rv) {
			f->dead_keys[i] = key;
			f->mr[i] = NULL;
		}
	} else if (pd) {
		uint32_t off = below(POOL_SIZE);
		size_t len;
		void *addr = f->pool + off;

		switch (below(6)) {
		case 0:
			len = 0;
			break;
		case 1:
			len = (size_t)1 << (20 + below(24));	/* beyond */
			break;
		case 2:
			addr = (void *)(uintptr_t)(rnd() & ~0xfffULL);
			len = 4096;
			break;
		default:
			len = 1 + below(POOL_SIZE - off);
		}
		f->mr[i] = ibv_reg_mr(pd, addr, len, acc[below(8)]);
		check_obj(f, f->mr[i], "ibv_reg_mr");
	}
}

static void do_qp_create(struct fz *f, int i)
{
	static const enum ibv_qp_type types[] = {
		IBV_QPT_RC, IBV_QPT_RC, IBV_QPT_RC, IBV_QPT_UC, IBV_QPT_UD,
	};
	struct ibv_qp_init_attr a = {};
	struct ibv_pd *pd = f->pd[below(SLOTS)];

	if (!pd)
		return;
	a.send_cq = any_cq(f);
	a.recv_cq = below(2) ? a.send_cq : any_cq(f);
	if (!a.send_cq || !a.recv_cq)
		return;
	a.srq = below(4) ? NULL : f->srq[below(SLOTS)];
	a.qp_type = types[below(5)];
	a.sq_sig_all = below(2);
	a.cap.max_send_wr = edgy(256);
	a.cap.max_recv_wr = edgy(256);
	a.cap.max_send_sge = edgy(KIWI_MAX_SGE);
	a.cap.max_recv_sge = edgy(KIWI_MAX_SGE);
	a.cap.max_inline_data = edgy(KIWI_MAX_INLINE);
	f->qp[i] = ibv_create_qp(pd, &a);
	check_obj(f, f->qp[i], "ibv_create_qp");
}

static void do_qp_modify(struct fz *f, struct ibv_qp *qp)
{
	struct ibv_qp_attr a = {};
	int mask = 0, rv;

	if (below(4)) {
		a.qp_state = below(7);	/* RESET .. ERR */
		mask |= IBV_QP_STATE;
	}
	if (below(3)) {
		a.qp_access_flags = (int)rnd() & 0xf;
		mask |= IBV_QP_ACCESS_FLAGS;
	}
	if (!below(4)) {
		a.max_rd_atomic = edgy(KIWI_MAX_ORD);
		mask |= IBV_QP_MAX_QP_RD_ATOMIC;
	}
	if (!below(4)) {
		a.max_dest_rd_atomic = edgy(KIWI_MAX_IRD);
		mask |= IBV_QP_MAX_DEST_RD_ATOMIC;
	}
	if (!below(6)) {
		a.cap.max_send_wr = edgy(256);
		mask |= IBV_QP_CAP;
	}
	if (!below(8))
		mask |= (int)rnd() & 0x1fffff;
	rv = ibv_modify_qp(qp, &a, mask);
	check(f, rv, "ibv_modify_qp");
}

static void do_post_send(struct fz *f, struct ibv_qp *qp)
{
	static const enum ibv_wr_opcode ops[] = {
		IBV_WR_SEND, IBV_WR_SEND_WITH_IMM, IBV_WR_RDMA_WRITE,
		IBV_WR_RDMA_WRITE_WITH_IMM, IBV_WR_RDMA_READ,
		IBV_WR_ATOMIC_CMP_AND_SWP, IBV_WR_LOCAL_INV,
		IBV_WR_SEND_WITH_INV, IBV_WR_BIND_MW, 99,
	};
	struct ibv_send_wr wr[4] = {}, *bad = NULL;
	struct ibv_sge sg[4][KIWI_MAX_SGE + 1];
	int n = 1 + below(4), k, rv;

	for (k = 0; k < n; k++) {
		int nsge = below(KIWI_MAX_SGE + 2);

		fill_sge(f, sg[k], nsge);
		wr[k].wr_id = rnd();
		wr[k].sg_list = sg[k];
		wr[k].num_sge = below(16) ? nsge : (int)rnd();
		wr[k].opcode = ops[below(10)];
		wr[k].send_flags = (unsigned int)rnd() & 0x1f;
		wr[k].wr.rdma.remote_addr = rnd();
		wr[k].wr.rdma.rkey = some_lkey(f);
		wr[k].invalidate_rkey = some_lkey(f);
		wr[k].next = k + 1 < n ? &wr[k + 1] : NULL;
		/* inline data is read from the SGEs: keep them readable */
		if (wr[k].send_flags & IBV_SEND_INLINE) {
			int j;

			for (j = 0; j < nsge; j++) {
				sg[k][j].addr = (uintptr_t)f->pool;
				sg[k][j].length %= 2 * KIWI_MAX_INLINE;
			}
			if (wr[k].num_sge > nsge || wr[k].num_sge < 0)
				wr[k].num_sge = nsge;
		}
	}
	rv = ibv_post_send(qp, wr, &bad);
	check(f, rv, "ibv_post_send");
}

static void do_post_recv(struct fz *f, struct ibv_qp *qp, struct ibv_srq *srq)
{
	struct ibv_recv_wr wr[4] = {}, *bad = NULL;
	struct ibv_sge sg[4][KIWI_MAX_SGE + 1];
	int n = 1 + below(4), k, rv;

	for (k = 0; k < n; k++) {
		int nsge = below(KIWI_MAX_SGE + 2);

		fill_sge(f, sg[k], nsge);
		wr[k].wr_id = rnd();
		wr[k].sg_list = sg[k];
		wr[k].num_sge = below(16) ? nsge : (int)rnd();
		wr[k].next = k + 1 < n ? &wr[k + 1] : NULL;
	}
	if (srq)
		rv = ibv_post_srq_recv(srq, wr, &bad);
	else
		rv = ibv_post_recv(qp, wr, &bad);
	check(f, rv, srq ? "ibv_post_srq_recv" : "ibv_post_recv");
}

static void do_qp(struct fz *f)
{
	int i = below(SLOTS), rv;
	struct ibv_qp *qp = f->qp[i];
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr qi;

	if (!qp) {
		do_qp_create(f, i);
		return;
	}
	switch (below(8)) {
	case 0:
		rv = ibv_destroy_qp(qp);
		check(f, rv, "ibv_destroy_qp");
		if (!rv)
			f->qp[i] = NULL;
		break;
	case 1:
	case 2:
		do_qp_modify(f, qp);
		break;
	case 3:
		rv = ibv_query_qp(qp, &qa, (int)rnd() & 0x1fffff, &qi);
		check(f, rv, "ibv_query_qp");
		break;
	case 4:
	case 5:
		do_post_send(f, qp);
		break;
	default:
		do_post_recv(f, qp, NULL);
	}
}

static void do_poll(struct fz *f)
{
	struct ibv_wc wc[16];
	struct ibv_cq *cq = any_cq(f);
	int rv;

	if (!cq)
		return;
	if (below(3)) {
		rv = ibv_poll_cq(cq, 1 + below(16), wc);
		check(f, rv < 0 ? EINVAL : 0, "ibv_poll_cq");
	} else {
		rv = ibv_req_notify_cq(cq, below(2));
		check(f, rv, "ibv_req_notify_cq");
	}
}

static void do_query(struct fz *f)
{
	struct ibv_device_attr da;
	struct ibv_port_attr pa;
	union ibv_gid gid;

	switch (below(3)) {
	case 0:
		check(f, ibv_query_device(f->ctx, &da), "ibv_query_device");
		break;
	case 1:
		/* port 1 exists; 0 and 2 do not */
		check(f, ibv_query_port(f->ctx, below(3), &pa),
		      "ibv_query_port");
		break;
	default:
		check(f, ibv_query_gid(f->ctx, 1, below(3), &gid),
		      "ibv_query_gid");
	}
}

static int fz_open(struct fz *f)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	int i;

	memset(&f->ctx, 0, sizeof(*f) - offsetof(struct fz, ctx));
	for (i = 0; list && list[i]; i++)
		if (!strcmp(ibv_get_device_name(list[i]), dev_name))
			f->ctx = ibv_open_device(list[i]);
	if (list)
		ibv_free_device_list(list);
	if (!f->ctx)
		return -1;
	f->ch = ibv_create_comp_channel(f->ctx);
	return f->ch ? 0 : -1;
}

/* Everything destroyed, in a random order of kinds, users before used. */
static void fz_close(struct fz *f, bool abandon)
{
	int i;

	if (abandon) {
		/*
		 * Closing the device with objects alive: the kernel cleans
		 * up; libibverbs' memory for them is leaked on purpose.
		 */
		ibv_close_device(f->ctx);
		f->ctx = NULL;
		return;
	}
	for (i = 0; i < SLOTS; i++)
		if (f->qp[i])
			check(f, ibv_destroy_qp(f->qp[i]), "final destroy_qp");
	for (i = 0; i < SLOTS; i++) {
		if (f->srq[i])
			check(f, ibv_destroy_srq(f->srq[i]),
			      "final destroy_srq");
		if (f->mr[i])
			check(f, ibv_dereg_mr(f->mr[i]), "final dereg_mr");
	}
	for (i = 0; i < SLOTS; i++) {
		if (f->cq[i])
			check(f, ibv_destroy_cq(f->cq[i]), "final destroy_cq");
		if (f->pd[i])
			check(f, ibv_dealloc_pd(f->pd[i]), "final dealloc_pd");
	}
	check(f, ibv_destroy_comp_channel(f->ch), "destroy_comp_channel");
	check(f, ibv_close_device(f->ctx), "ibv_close_device");
}

static int worker(int id)
{
	struct fz f = { .id = id };
	time_t end = time(NULL) + secs;
	unsigned long opens = 0;

	rng_state = seed * 0x9E3779B97F4A7C15ULL + (uint64_t)id + 1;
	f.pool = mmap(NULL, POOL_SIZE, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (f.pool == MAP_FAILED)
		return 2;
	memset(f.pool, 0x5a, POOL_SIZE);
	if (fz_open(&f))
		return 3;
	opens++;
	f.t = now();
	while (time(NULL) < end) {
		int k;

		for (k = 0; k < 64; k++) {
			switch (below(12)) {
			case 0: do_pd(&f); break;
			case 1: do_cq(&f); break;
			case 2: do_srq(&f); break;
			case 3:
			case 4: do_mr(&f); break;
			case 5: do_poll(&f); break;
			case 6: do_query(&f); break;
			case 7: {
				struct ibv_srq *s = f.srq[below(SLOTS)];

				if (s)
					do_post_recv(&f, NULL, s);
				break;
			}
			default: do_qp(&f);
			}
		}
		/* now and then start over: cleanly, or leaving it all */
		if (!below(40)) {
			fz_close(&f, below(2));
			if (fz_open(&f))
				return 3;
			opens++;
		}
	}
	fz_close(&f, below(2));
	printf("# proc %d: %lu calls, %lu opens, %lu unexpected, %lu slow\n",
	       id, f.calls, opens, f.odd, f.slow);
	fflush(stdout);
	return f.odd ? 1 : 0;
}

static bool counts_zero(void)
{
	static const char *const names[] = {
		"ucontexts", "pds", "cqs", "qps", "srqs", "mrs",
	};
	int tries, i;

	for (tries = 0; tries < 100; tries++) {
		bool zero = true;

		for (i = 0; i < 6; i++) {
			long v = kiwi_count(names[i]);

			if (v != 0) {
				if (tries == 99)
					diag("%s = %ld", names[i], v);
				zero = false;
			}
		}
		if (zero)
			return true;
		usleep(100000);
	}
	return false;
}

int main(int argc, char **argv)
{
	int c, i, st, killed = 0, died = 0, bad = 0;
	pid_t *pid;

	while ((c = getopt(argc, argv, "d:S:D:P:")) != -1) {
		switch (c) {
		case 'd': dev_name = optarg; break;
		case 'S': seed = strtoul(optarg, NULL, 0); break;
		case 'D': secs = atoi(optarg); break;
		case 'P': procs = atoi(optarg); break;
		default:
			fprintf(stderr,
				"usage: verbs-fuzz [-d DEV] [-S SEED] [-D SECS] [-P PROCS]\n");
			return 2;
		}
	}
	if (procs < 1 || procs > 64 || secs < 1)
		return 2;
	diag("verbs-fuzz: seed %lu, %d processes, %d s", seed, procs, secs);
	pid = calloc(procs * 2, sizeof(*pid));
	if (!pid)
		return 2;
	rng_state = seed;
	/* procs that run to the end, and as many killed halfway */
	for (i = 0; i < procs * 2; i++) {
		pid[i] = fork();
		if (pid[i] == 0)
			_exit(worker(i));
	}
	for (i = procs; i < procs * 2; i++) {
		usleep(200000 + below(secs * 800000));
		if (pid[i] > 0 && !kill(pid[i], SIGKILL))
			killed++;
	}
	for (i = 0; i < procs * 2; i++) {
		if (pid[i] <= 0 || waitpid(pid[i], &st, 0) < 0) {
			bad++;
			continue;
		}
		if (i >= procs && WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL)
			continue;
		if (WIFSIGNALED(st)) {
			died++;
			diag("proc %d died of signal %d", i, WTERMSIG(st));
		} else if (WEXITSTATUS(st)) {
			bad++;
			diag("proc %d exited %d", i, WEXITSTATUS(st));
		}
	}
	ok(!died, "verbs-fuzz seed %lu: no process died but the %d killed on purpose",
	   seed, killed);
	ok(!bad, "every call returned success or an errno a verb may return");
	ok(counts_zero(), "kiwi's object counts back to zero");
	free(pid);
	return tap_end();
}
