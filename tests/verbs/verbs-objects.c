// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * verbs-objects: every kiwi verbs object through libibverbs and libkiwi,
 * with the attributes, limits, error codes and ring contents a user sees.
 * Prints TAP.  Runs inside the test VM, against a kiwi device created with
 * `rdma link add kiwi0 type kiwi netdev veth0`:
 *
 *   RDMAV_DRIVERS=$KIWI_ROOT/userspace/build/libkiwi \
 *	verbs-objects [-d kiwi0] [-n veth0]
 *   verbs-objects --hold [-d kiwi0]    create objects, print "ready PID QPN",
 *                                     release them at EOF on stdin
 *   verbs-objects --churn SECS [-d kiwi0]  create and destroy QPs with WRs
 *                                     posted, for SECS seconds
 *   verbs-objects --rings N [-d kiwi0]  hold N CQs of 2 MiB of ring
 *                                     until EOF on stdin
 *   verbs-objects --memlock N [-d kiwi0]  create up to N CQs of 2 MiB
 *                                     of ring until one fails, free them,
 *                                     create as many again
 *
 * After every case the kiwi.ko object counts in
 * /sys/kernel/debug/kiwi/objects must be back to zero (all lines but
 * "devices", which counts the RDMA links).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
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


static const char *dev_name = "kiwi0";
static const char *net_name = "veth0";
/* errno after a creation verb that must fail; destroys a wrong success. */
#define EXPECT_NULL_ERRNO(obj, destroy, want, what)			\
	do {								\
		int e_ = errno;						\
		ok(!(obj) && e_ == (want), "%s fails with %s (got %s)",	\
		   what, strerror(want), (obj) ? "success" : strerror(e_)); \
		if (obj)						\
			destroy(obj);					\
	} while (0)


/* Every line but "devices" is zero; retries briefly for deferred frees. */
static bool counts_zero(char *why, size_t len)
{
	int tries;

	for (tries = 0; tries < 50; tries++) {
		char line[128], key[64];
		long val;
		bool zero = true, any = false;
		FILE *f = fopen(OBJECTS_FILE, "r");

		if (!f) {
			snprintf(why, len, "%s: %s", OBJECTS_FILE,
				 strerror(errno));
			return false;
		}
		why[0] = 0;
		while (fgets(line, sizeof(line), f)) {
			if (sscanf(line, "%63s %ld", key, &val) != 2)
				continue;
			any = true;
			if (strcmp(key, "devices") && val) {
				size_t l = strlen(why);

				snprintf(why + l, len - l, "%s=%ld ", key,
					 val);
				zero = false;
			}
		}
		fclose(f);
		if (!any) {
			snprintf(why, len, "no counts in %s", OBJECTS_FILE);
			return false;
		}
		if (zero)
			return true;
		usleep(100000);
	}
	return false;
}

static void check_counts(const char *after)
{
	char why[512];
	bool z = counts_zero(why, sizeof(why));

	ok(z, "object counts back to zero after %s%s%s", after,
	   z ? "" : ": ", z ? "" : why);
}

/* ---- device ------------------------------------------------------------ */

static struct ibv_context *open_dev(void)
{
	struct ibv_device **list;
	struct ibv_context *ctx = NULL;
	int i, n;

	list = ibv_get_device_list(&n);
	if (!list)
		return NULL;
	for (i = 0; i < n; i++)
		if (!strcmp(ibv_get_device_name(list[i]), dev_name))
			ctx = ibv_open_device(list[i]);
	ibv_free_device_list(list);
	return ctx;
}

/* ---- ring inspection through /proc/self/maps ---------------------------- */

#define MAX_MAPS 64

struct maps {
	int n;
	uintptr_t start[MAX_MAPS], end[MAX_MAPS];
};

/* The mappings of uverbs device files: the provider's rings. */
static void uverbs_maps(struct maps *m)
{
	char line[512];
	FILE *f = fopen("/proc/self/maps", "r");

	m->n = 0;
	if (!f)
		return;
	while (fgets(line, sizeof(line), f) && m->n < MAX_MAPS) {
		unsigned long s, e;

		if (!strstr(line, "/dev/infiniband/uverbs"))
			continue;
		if (sscanf(line, "%lx-%lx", &s, &e) != 2)
			continue;
		m->start[m->n] = s;
		m->end[m->n] = e;
		m->n++;
	}
	fclose(f);
}

/* Mappings in `after' that are not in `before'. */
static void maps_new(const struct maps *before, const struct maps *after,
		     struct maps *out)
{
	int i, j;

	out->n = 0;
	for (i = 0; i < after->n; i++) {
		bool old = false;

		for (j = 0; j < before->n; j++)
			if (before->start[j] == after->start[i])
				old = true;
		if (!old) {
			out->start[out->n] = after->start[i];
			out->end[out->n] = after->end[i];
			out->n++;
		}
	}
}

/* A published WQE slot with this wr_id in any of the mappings. */
static void *find_wqe(const struct maps *m, uint64_t id)
{
	int i;

	for (i = 0; i < m->n; i++) {
		uintptr_t p;

		for (p = m->start[i]; p + 128 <= m->end[i]; p += 128) {
			const struct kiwi_rqe *r = (const void *)p;

			if (r->id == id && (r->flags & KIWI_WQE_VALID))
				return (void *)p;
		}
	}
	return NULL;
}

/* ---- cases ------------------------------------------------------------- */

static void case_device(void)
{
	struct ibv_device **list;
	struct ibv_context *ctx;
	struct ibv_device_attr da;
	struct ibv_port_attr pa;
	union ibv_gid gid;
	unsigned int mac[6];
	uint8_t want[16] = {};
	char path[256];
	FILE *f;
	int i, n, err, found = -1;

	list = ibv_get_device_list(&n);
	for (i = 0; list && i < n; i++)
		if (!strcmp(ibv_get_device_name(list[i]), dev_name))
			found = i;
	ok(found >= 0, "libibverbs lists %s", dev_name);
	if (found < 0) {
		if (list)
			ibv_free_device_list(list);
		return;
	}
	ok(list[found]->node_type == IBV_NODE_RNIC,
	   "node type RNIC (%d)", list[found]->node_type);
	ok(list[found]->transport_type == IBV_TRANSPORT_IWARP,
	   "transport iWARP (%d)", list[found]->transport_type);
	ctx = ibv_open_device(list[found]);
	ibv_free_device_list(list);
	ok(ctx != NULL, "ibv_open_device through libkiwi (%s)",
	   ctx ? "ok" : strerror(errno));
	if (!ctx)
		return;
	ok(kiwi_count("ucontexts") == 1, "one ucontext counted while open");

	err = ibv_query_device(ctx, &da);
	ok(!err, "ibv_query_device");
	ok(da.max_qp == KIWI_MAX_QP, "max_qp %d == %d", da.max_qp,
	   KIWI_MAX_QP);
	ok(da.max_qp_wr == KIWI_MAX_QP_WR, "max_qp_wr %d == %d",
	   da.max_qp_wr, KIWI_MAX_QP_WR);
	ok(da.max_sge == KIWI_MAX_SGE, "max_sge %d == %d", da.max_sge,
	   KIWI_MAX_SGE);
	ok(da.max_sge_rd == KIWI_MAX_SGE_RD, "max_sge_rd %d == %d",
	   da.max_sge_rd, KIWI_MAX_SGE_RD);
	ok(da.max_cq == KIWI_MAX_CQ, "max_cq %d == %d", da.max_cq,
	   KIWI_MAX_CQ);
	ok(da.max_cqe == KIWI_MAX_CQE, "max_cqe %d == %d", da.max_cqe,
	   KIWI_MAX_CQE);
	ok(da.max_mr == KIWI_MAX_MR, "max_mr %d == %d", da.max_mr,
	   KIWI_MAX_MR);
	ok(da.max_mr_size == KIWI_MAX_MR_SIZE, "max_mr_size %#" PRIx64,
	   da.max_mr_size);
	ok(da.max_pd == KIWI_MAX_PD, "max_pd %d == %d", da.max_pd,
	   KIWI_MAX_PD);
	ok(da.max_srq == KIWI_MAX_SRQ, "max_srq %d == %d", da.max_srq,
	   KIWI_MAX_SRQ);
	ok(da.max_srq_wr == KIWI_MAX_SRQ_WR, "max_srq_wr %d == %d",
	   da.max_srq_wr, KIWI_MAX_SRQ_WR);
	ok(da.max_srq_sge == KIWI_MAX_SGE, "max_srq_sge %d == %d",
	   da.max_srq_sge, KIWI_MAX_SGE);
	ok(da.max_qp_rd_atom == KIWI_MAX_IRD, "max_qp_rd_atom %d == %d",
	   da.max_qp_rd_atom, KIWI_MAX_IRD);
	ok(da.max_qp_init_rd_atom == KIWI_MAX_ORD,
	   "max_qp_init_rd_atom %d == %d", da.max_qp_init_rd_atom,
	   KIWI_MAX_ORD);
	ok(da.atomic_cap == IBV_ATOMIC_NONE, "no atomics");
	ok(da.phys_port_cnt == 1, "one port");
	ok(da.fw_ver[0] != 0, "fw_ver \"%s\"", da.fw_ver);

	err = ibv_query_port(ctx, 1, &pa);
	ok(!err, "ibv_query_port 1");
	ok(pa.state == IBV_PORT_ACTIVE, "port ACTIVE on an up netdev (%d)",
	   pa.state);
	ok(pa.max_msg_sz == KIWI_MAX_MSG_SIZE, "max_msg_sz %#x",
	   pa.max_msg_sz);
	ok(pa.gid_tbl_len == KIWI_GID_TBL_LEN, "gid_tbl_len %d",
	   pa.gid_tbl_len);
	ok(pa.link_layer == IBV_LINK_LAYER_ETHERNET, "link layer Ethernet");
	errno = 0;
	ok(ibv_query_port(ctx, 2, &pa) != 0, "ibv_query_port 2 fails");

	err = ibv_query_gid(ctx, 1, 0, &gid);
	ok(!err, "ibv_query_gid 1/0");
	snprintf(path, sizeof(path), "/sys/class/net/%s/address", net_name);
	f = fopen(path, "r");
	n = f ? fscanf(f, "%x:%x:%x:%x:%x:%x", &mac[0], &mac[1], &mac[2],
		       &mac[3], &mac[4], &mac[5]) : 0;
	if (f)
		fclose(f);
	for (i = 0; i < 6 && n == 6; i++)
		want[i] = (uint8_t)mac[i];
	ok(n == 6 && !memcmp(gid.raw, want, 16),
	   "GID is %s's MAC %02x:%02x:%02x:%02x:%02x:%02x, zero padded",
	   net_name, want[0], want[1], want[2], want[3], want[4], want[5]);

	ok(!ibv_close_device(ctx), "ibv_close_device");
	check_counts("device queries");
}

static void case_pd_mr(void)
{
	struct ibv_context *ctx = open_dev();
	struct ibv_pd *pd, *pd2;
	struct ibv_mr *mr;
	size_t len = 3 * 4096 + 100;
	char *buf = malloc(len);

	if (!ctx || !buf) {
		ok(false, "open %s for PD/MR", dev_name);
		free(buf);
		return;
	}
	pd = ibv_alloc_pd(ctx);
	ok(pd != NULL, "ibv_alloc_pd");
	pd2 = ibv_alloc_pd(ctx);
	ok(pd2 != NULL && pd2->handle != pd->handle, "second PD");
	ok(kiwi_count("pds") == 2, "two PDs counted");
	ok(pd2 && !ibv_dealloc_pd(pd2), "dealloc second PD");

	mr = ibv_reg_mr(pd, buf, len, IBV_ACCESS_LOCAL_WRITE |
			IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	ok(mr != NULL, "ibv_reg_mr %zu bytes, local+remote access (%s)",
	   len, mr ? "ok" : strerror(errno));
	if (mr) {
		ok(mr->addr == buf && mr->length == len && mr->lkey &&
		   mr->rkey, "MR addr/length/lkey/rkey (lkey %#x rkey %#x)",
		   mr->lkey, mr->rkey);
		ok(kiwi_count("mrs") == 1, "one MR counted");
		ok(ibv_dealloc_pd(pd) == EBUSY,
		   "dealloc PD with an MR fails with EBUSY");
		ok(!ibv_dereg_mr(mr), "ibv_dereg_mr");
	}
	mr = ibv_reg_mr(pd, buf, len, IBV_ACCESS_LOCAL_WRITE);
	ok(mr != NULL, "MR with local write only");
	if (mr)
		ibv_dereg_mr(mr);
	mr = ibv_reg_mr(pd, buf, len, 0);
	ok(mr != NULL, "MR with no access flags (local read)");
	if (mr)
		ibv_dereg_mr(mr);

	/*
	 * Each access bit alone (with local write where the verbs demand
	 * it): what the iWARP RNICs accept, kiwi accepts, so that middleware
	 * asking for every right registers (libfabric's verbs provider).
	 */
	{
		static const struct {
			int access;
			const char *name;
			int err;	/* 0: registers */
		} bits[] = {
			{ IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ,
			  "remote read", 0 },
			{ IBV_ACCESS_REMOTE_READ, "remote read alone", 0 },
			{ IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE,
			  "remote write", 0 },
			{ IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_ATOMIC,
			  "remote atomic", 0 },
			{ IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND,
			  "MW bind", 0 },
			{ IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_RELAXED_ORDERING,
			  "relaxed ordering (a hint)", 0 },
			{ IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_HUGETLB,
			  "hugetlb (a hint)", 0 },
			{ IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			  IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC |
			  IBV_ACCESS_MW_BIND, "every right (libfabric's)", 0 },
			{ IBV_ACCESS_REMOTE_WRITE,
			  "remote write without local write", EINVAL },
			{ IBV_ACCESS_REMOTE_ATOMIC,
			  "remote atomic without local write", EINVAL },
			{ IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_ZERO_BASED,
			  "zero-based", EOPNOTSUPP },
		};
		unsigned int i;

		for (i = 0; i < sizeof(bits) / sizeof(bits[0]); i++) {
			errno = 0;
			mr = ibv_reg_mr(pd, buf, len, bits[i].access);
			if (!bits[i].err) {
				ok(mr != NULL, "MR access %s: registers (%s)",
				   bits[i].name, mr ? "ok" : strerror(errno));
				if (mr)
					ibv_dereg_mr(mr);
				continue;
			}
			EXPECT_NULL_ERRNO(mr, ibv_dereg_mr, bits[i].err,
					  bits[i].name);
		}
		/* ODP: the device has no ODP capability; ib_core refuses */
		errno = 0;
		mr = ibv_reg_mr(pd, buf, len, IBV_ACCESS_LOCAL_WRITE |
				IBV_ACCESS_ON_DEMAND);
		ok(!mr && (errno == EINVAL || errno == EOPNOTSUPP),
		   "MR access on-demand paging: refused (%s)",
		   mr ? "registered" : strerror(errno));
		if (mr)
			ibv_dereg_mr(mr);
	}
	errno = 0;
	mr = ibv_reg_mr(pd, NULL, len, IBV_ACCESS_LOCAL_WRITE);
	EXPECT_NULL_ERRNO(mr, ibv_dereg_mr, EINVAL, "MR at NULL");
	errno = 0;
	mr = ibv_reg_mr(pd, buf, 0, IBV_ACCESS_LOCAL_WRITE);
	EXPECT_NULL_ERRNO(mr, ibv_dereg_mr, EINVAL, "MR of zero length");

	ok(kiwi_count("mrs") == 0, "failed registrations leave no MR");
	ok(!ibv_dealloc_pd(pd), "ibv_dealloc_pd");
	ibv_close_device(ctx);
	free(buf);
	check_counts("PD/MR");
}

/*
 * Caps on user objects (Documentation/limits.md): a context gets at most
 * a quarter of the device's PDs; all user contexts together leave a
 * sixteenth to the kernel.  Four contexts allocate PDs until refused:
 * three get KIWI_MAX_PD / 4 each with ENOMEM after, the fourth what is
 * left of the user share.  Freeing them makes room again.
 */
#define CAP_CTX		4

static void case_caps(void)
{
	static struct ibv_pd *pds[CAP_CTX][KIWI_MAX_PD / 4 + 1];
	struct ibv_context *ctx[CAP_CTX] = { NULL };
	int n[CAP_CTX] = { 0 }, err[CAP_CTX] = { 0 };
	int i, j, user = KIWI_MAX_PD - KIWI_MAX_PD / 16;
	struct ibv_pd *pd;

	for (i = 0; i < CAP_CTX; i++) {
		ctx[i] = open_dev();
		if (!ctx[i]) {
			ok(false, "caps: open %s (context %d)", dev_name, i);
			goto out;
		}
		while (n[i] <= KIWI_MAX_PD / 4) {
			pd = ibv_alloc_pd(ctx[i]);
			if (!pd) {
				err[i] = errno;
				break;
			}
			pds[i][n[i]++] = pd;
		}
	}
	for (i = 0; i < CAP_CTX - 1; i++)
		ok(n[i] == KIWI_MAX_PD / 4 && err[i] == ENOMEM,
		   "caps: context %d gets %d PDs, then ENOMEM (got %d, %s)",
		   i, KIWI_MAX_PD / 4, n[i], strerror(err[i]));
	ok(n[CAP_CTX - 1] == user - (CAP_CTX - 1) * (KIWI_MAX_PD / 4) &&
	   err[CAP_CTX - 1] == ENOMEM,
	   "caps: the last context gets the rest of the users' %d PDs, then ENOMEM (got %d, %s)",
	   user, n[CAP_CTX - 1], strerror(err[CAP_CTX - 1]));
	ok(kiwi_count("pds") == user, "caps: %d PDs counted", user);
	if (n[0]) {
		ibv_dealloc_pd(pds[0][--n[0]]);
		pd = ibv_alloc_pd(ctx[CAP_CTX - 1]);
		ok(pd != NULL, "caps: a PD freed makes room for another context");
		if (pd)
			pds[CAP_CTX - 1][n[CAP_CTX - 1]++] = pd;
	}
out:
	for (i = 0; i < CAP_CTX; i++) {
		for (j = 0; j < n[i]; j++)
			ibv_dealloc_pd(pds[i][j]);
		if (ctx[i])
			ibv_close_device(ctx[i]);
	}
	check_counts("the object caps");
}

static void case_cq(void)
{
	struct ibv_context *ctx = open_dev();
	struct ibv_comp_channel *ch;
	struct ibv_cq *cq;
	struct ibv_wc wc[4];
	struct maps before, after, m;
	struct kiwi_cqe *ring;
	struct kiwi_cq_ctrl *ctrl;

	if (!ctx) {
		ok(false, "open %s for CQ", dev_name);
		return;
	}
	uverbs_maps(&before);
	cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	ok(cq != NULL, "ibv_create_cq 16 (%s)", cq ? "ok" : strerror(errno));
	if (!cq) {
		ibv_close_device(ctx);
		return;
	}
	ok(cq->cqe >= 16, "CQ holds at least 16 (%d)", cq->cqe);
	ok(kiwi_count("cqs") == 1, "one CQ counted");
	uverbs_maps(&after);
	maps_new(&before, &after, &m);
	ok(m.n == 1 && m.end[0] - m.start[0] >=
	   (size_t)cq->cqe * sizeof(struct kiwi_cqe) +
	   sizeof(struct kiwi_cq_ctrl),
	   "CQ ring mapped (%d new mappings)", m.n);
	ok(ibv_poll_cq(cq, 4, wc) == 0, "poll of an empty CQ returns 0");

	if (m.n == 1) {
		ring = (struct kiwi_cqe *)m.start[0];
		ctrl = (struct kiwi_cq_ctrl *)(ring + cq->cqe);

		int err;

		ok(ctrl->notify == KIWI_NOTIFY_NONE, "new CQ is not armed");
		err = ibv_req_notify_cq(cq, 1);
		ok(!err && ctrl->notify == KIWI_NOTIFY_SOLICITED,
		   "req_notify_cq(solicited) arms the control block (%u)",
		   ctrl->notify);
		err = ibv_req_notify_cq(cq, 0);
		ok(!err &&
		   ctrl->notify == (KIWI_NOTIFY_SOLICITED | KIWI_NOTIFY_NEXT),
		   "req_notify_cq(next) adds the next-completion bit (%u)",
		   ctrl->notify);

		/* Play the kernel: publish two CQEs, poll them back. */
		ring[0] = (struct kiwi_cqe){ .id = 0x1111, .opcode =
			KIWI_OP_RECEIVE, .status = IBV_WC_SUCCESS,
			.bytes = 77, .qp_id = 5, .inval_stag = 0xabcd,
			.flags = KIWI_CQE_VALID | KIWI_CQE_INVALIDATED };
		ring[1] = (struct kiwi_cqe){ .id = 0x2222, .opcode =
			KIWI_OP_WRITE, .status = IBV_WC_WR_FLUSH_ERR,
			.qp_id = 5, .flags = KIWI_CQE_VALID };
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		memset(wc, 0, sizeof(wc));
		ok(ibv_poll_cq(cq, 4, wc) == 2, "poll returns the 2 CQEs");
		ok(wc[0].wr_id == 0x1111 && wc[0].opcode == IBV_WC_RECV &&
		   wc[0].status == IBV_WC_SUCCESS && wc[0].byte_len == 77 &&
		   wc[0].qp_num == 5 && (wc[0].wc_flags & IBV_WC_WITH_INV) &&
		   wc[0].invalidated_rkey == 0xabcd,
		   "receive CQE translated to ibv_wc");
		ok(wc[1].wr_id == 0x2222 &&
		   wc[1].opcode == IBV_WC_RDMA_WRITE &&
		   wc[1].status == IBV_WC_WR_FLUSH_ERR,
		   "flushed write CQE translated to ibv_wc");
		ok(!(ring[0].flags & KIWI_CQE_VALID) &&
		   !(ring[1].flags & KIWI_CQE_VALID),
		   "polled slots handed back (VALID cleared)");
		ok(ibv_poll_cq(cq, 4, wc) == 0, "CQ empty again");
	}
	ok(!ibv_destroy_cq(cq), "ibv_destroy_cq");
	uverbs_maps(&after);
	ok(after.n == before.n, "CQ ring unmapped");

	ch = ibv_create_comp_channel(ctx);
	cq = ch ? ibv_create_cq(ctx, 1, NULL, ch, 0) : NULL;
	ok(cq != NULL, "CQ with a completion channel");
	if (cq)
		ibv_destroy_cq(cq);
	if (ch)
		ibv_destroy_comp_channel(ch);

	cq = ibv_create_cq(ctx, KIWI_MAX_CQE, NULL, NULL, 0);
	ok(cq != NULL, "CQ of max_cqe %d entries (%s)", KIWI_MAX_CQE,
	   cq ? "ok" : strerror(errno));
	if (cq)
		ibv_destroy_cq(cq);
	errno = 0;
	cq = ibv_create_cq(ctx, KIWI_MAX_CQE + 1, NULL, NULL, 0);
	EXPECT_NULL_ERRNO(cq, ibv_destroy_cq, EINVAL, "CQ above max_cqe");
	errno = 0;
	cq = ibv_create_cq(ctx, 0, NULL, NULL, 0);
	EXPECT_NULL_ERRNO(cq, ibv_destroy_cq, EINVAL, "CQ of 0 entries");
	errno = 0;
	cq = ibv_create_cq(ctx, -1, NULL, NULL, 0);
	EXPECT_NULL_ERRNO(cq, ibv_destroy_cq, EINVAL, "CQ of -1 entries");

	ibv_close_device(ctx);
	check_counts("CQs");
}

struct qp_env {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *scq, *rcq;
	struct ibv_mr *mr;
	char buf[4096];
};

static bool env_open(struct qp_env *e)
{
	memset(e, 0, sizeof(*e));
	e->ctx = open_dev();
	if (!e->ctx)
		return false;
	e->pd = ibv_alloc_pd(e->ctx);
	e->scq = ibv_create_cq(e->ctx, 64, NULL, NULL, 0);
	e->rcq = ibv_create_cq(e->ctx, 64, NULL, NULL, 0);
	e->mr = e->pd ? ibv_reg_mr(e->pd, e->buf, sizeof(e->buf),
				   IBV_ACCESS_LOCAL_WRITE) : NULL;
	return e->pd && e->scq && e->rcq && e->mr;
}

static void env_close(struct qp_env *e)
{
	if (e->mr)
		ibv_dereg_mr(e->mr);
	if (e->scq)
		ibv_destroy_cq(e->scq);
	if (e->rcq)
		ibv_destroy_cq(e->rcq);
	if (e->pd)
		ibv_dealloc_pd(e->pd);
	if (e->ctx)
		ibv_close_device(e->ctx);
}

static struct ibv_qp *make_qp(struct qp_env *e, struct ibv_srq *srq,
			      enum ibv_qp_type type, uint32_t swr,
			      uint32_t rwr, uint32_t ssge, uint32_t rsge,
			      uint32_t inl, struct ibv_qp_init_attr *out)
{
	struct ibv_qp_init_attr a = {
		.send_cq = e->scq, .recv_cq = e->rcq, .srq = srq,
		.qp_type = type,
		.cap = { .max_send_wr = swr, .max_recv_wr = rwr,
			 .max_send_sge = ssge, .max_recv_sge = rsge,
			 .max_inline_data = inl },
	};
	struct ibv_qp *qp = ibv_create_qp(e->pd, &a);

	if (out)
		*out = a;
	return qp;
}

static int to_init(struct ibv_qp *qp)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT, .pkey_index = 0, .port_num = 1,
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE |
				   IBV_ACCESS_REMOTE_READ,
	};

	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			     IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
}

static enum ibv_qp_state qp_state(struct ibv_qp *qp)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;

	memset(&a, 0, sizeof(a));
	if (ibv_query_qp(qp, &a, IBV_QP_STATE, &ia))
		return (enum ibv_qp_state)-1;
	return a.qp_state;
}

static int post_recv1(struct qp_env *e, struct ibv_qp *qp,
		      struct ibv_srq *srq, uint64_t id, int nsge)
{
	struct ibv_sge sge[KIWI_MAX_SGE + 1];
	struct ibv_recv_wr wr = { .wr_id = id, .sg_list = sge,
				  .num_sge = nsge }, *bad = NULL;
	int i, err;

	for (i = 0; i < nsge && i <= KIWI_MAX_SGE; i++)
		sge[i] = (struct ibv_sge){
			.addr = (uintptr_t)e->buf + 100 * i,
			.length = 50 + i, .lkey = e->mr->lkey };
	err = srq ? ibv_post_srq_recv(srq, &wr, &bad) :
		    ibv_post_recv(qp, &wr, &bad);
	if (err && bad != &wr)
		return -1;	/* bad_wr must name the failing WR */
	return err;
}

static int post_send1(struct qp_env *e, struct ibv_qp *qp, uint64_t id,
		      enum ibv_wr_opcode op, int nsge, unsigned int flags,
		      uint32_t len)
{
	struct ibv_sge sge[KIWI_MAX_SGE + 2];
	struct ibv_send_wr wr = { .wr_id = id, .sg_list = sge,
				  .num_sge = nsge, .opcode = op,
				  .send_flags = flags }, *bad = NULL;
	int i, err;

	for (i = 0; i < nsge && i < KIWI_MAX_SGE + 2; i++)
		sge[i] = (struct ibv_sge){ .addr = (uintptr_t)e->buf,
					   .length = len,
					   .lkey = e->mr->lkey };
	wr.wr.rdma.remote_addr = 0x1000;
	wr.wr.rdma.rkey = 0x42;
	err = ibv_post_send(qp, &wr, &bad);
	if (err && bad != &wr)
		return -1;
	return err;
}

static void case_qp(void)
{
	struct qp_env e;
	struct ibv_qp_init_attr ia, qa;
	struct ibv_qp_attr attr;
	struct ibv_qp *qp, *bad_qp;
	struct maps before, after, m;
	struct kiwi_sqe *sqe;
	struct kiwi_rqe *rqe;
	struct ibv_wc wc[64];
	uint32_t i, n_rq, n_sq;
	int err, got, flushed;

	if (!env_open(&e)) {
		ok(false, "PD, CQs and MR for the QP case");
		env_close(&e);
		return;
	}
	uverbs_maps(&before);
	qp = make_qp(&e, NULL, IBV_QPT_RC, 8, 8, 2, 2, 32, &ia);
	ok(qp != NULL, "ibv_create_qp RC (%s)", qp ? "ok" : strerror(errno));
	if (!qp) {
		env_close(&e);
		return;
	}
	ok(qp->qp_num != 0, "QP number %u", qp->qp_num);
	/* SGEs and inline as asked: posts are held to them (rnic-compat.md) */
	ok(ia.cap.max_send_wr >= 8 && ia.cap.max_recv_wr >= 8 &&
	   ia.cap.max_send_sge == 2 && ia.cap.max_recv_sge == 2 &&
	   ia.cap.max_inline_data == 32,
	   "granted caps: WRs cover the request, SGEs and inline as asked (sq %u rq %u sge %u/%u inline %u)",
	   ia.cap.max_send_wr, ia.cap.max_recv_wr, ia.cap.max_send_sge,
	   ia.cap.max_recv_sge, ia.cap.max_inline_data);
	ok(kiwi_count("qps") == 1, "one QP counted");
	uverbs_maps(&after);
	maps_new(&before, &after, &m);
	ok(m.n == 2, "SQ and RQ rings mapped (%d new mappings)", m.n);

	/*
	 * A new QP is in INIT (the iWARP verbs' Idle), as RNICs report it
	 * to ibv_query_qp, yet ibv_qp.state reads RESET as libibverbs set
	 * it (rdma-core's test_create_rc_qp_no_attr); a receive may still
	 * be posted before any modify.
	 */
	ok(qp->state == IBV_QPS_RESET, "new QP: ibv_qp.state RESET (%d)",
	   qp->state);
	ok(!post_recv1(&e, qp, NULL, 0x6b6977695251ULL, 2),
	   "post_recv on the new QP, before any modify");
	memset(&attr, 0, sizeof(attr));
	attr.qp_state = (enum ibv_qp_state)-1;
	err = ibv_query_qp(qp, &attr, IBV_QP_STATE | IBV_QP_CAP, &qa);
	ok(!err && attr.qp_state == IBV_QPS_INIT &&
	   attr.cur_qp_state == IBV_QPS_INIT,
	   "ibv_query_qp on the new QP reports INIT (%d, cur %d)",
	   attr.qp_state, attr.cur_qp_state);
	ok(!err && qa.cap.max_send_wr == ia.cap.max_send_wr &&
	   qa.cap.max_recv_wr == ia.cap.max_recv_wr &&
	   attr.cap.max_send_sge == ia.cap.max_send_sge &&
	   attr.cap.max_recv_sge == ia.cap.max_recv_sge &&
	   attr.cap.max_inline_data == ia.cap.max_inline_data &&
	   qa.qp_type == IBV_QPT_RC && qa.send_cq == e.scq,
	   "ibv_query_qp reports the granted caps");

	/* rdma_create_qp() then modifies INIT -> INIT with access flags */
	ok(!to_init(qp), "modify INIT->INIT");
	ok(qp_state(qp) == IBV_QPS_INIT && qp->state == IBV_QPS_INIT,
	   "query reports INIT, ibv_qp.state INIT after the modify (%d)",
	   qp->state);
	memset(&attr, 0, sizeof(attr));
	err = ibv_query_qp(qp, &attr, IBV_QP_ACCESS_FLAGS, &qa);
	ok(!err && attr.qp_access_flags ==
	   (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ),
	   "query reports the access flags set (%#x)", attr.qp_access_flags);

	/* The receive posted before the modify is in the mapped RQ. */
	rqe = find_wqe(&m, 0x6b6977695251ULL);
	ok(rqe && rqe->num_sge == 2 &&
	   rqe->sge[0].addr == (uintptr_t)e.buf && rqe->sge[0].length == 50 &&
	   rqe->sge[1].addr == (uintptr_t)e.buf + 100 &&
	   rqe->sge[1].length == 51 && rqe->sge[1].lkey == e.mr->lkey,
	   "the receive fills an RQ slot (wr_id, SGEs, VALID)");
	ok(post_recv1(&e, qp, NULL, 2, (int)ia.cap.max_recv_sge + 1) ==
	   EINVAL, "post_recv with too many SGEs fails with EINVAL");
	for (n_rq = 1; n_rq < 100000; n_rq++)
		if (post_recv1(&e, qp, NULL, 0x100 + n_rq, 1))
			break;
	ok(n_rq == ia.cap.max_recv_wr &&
	   post_recv1(&e, qp, NULL, 3, 1) == ENOMEM,
	   "RQ takes max_recv_wr %u receives (%u), then ENOMEM",
	   ia.cap.max_recv_wr, n_rq);

	/* Sends: validation, then the SQ ring. */
	ok(post_send1(&e, qp, 4, IBV_WR_SEND, KIWI_MAX_SGE + 1, 0, 8) ==
	   EINVAL, "post_send with %d SGEs fails with EINVAL",
	   KIWI_MAX_SGE + 1);
	ok(post_send1(&e, qp, 4, IBV_WR_SEND, (int)ia.cap.max_send_sge + 1,
		      0, 8) == EINVAL,
	   "post_send above the QP's max_send_sge fails with EINVAL");
	ok(post_send1(&e, qp, 5, IBV_WR_SEND, 1, IBV_SEND_INLINE,
		      ia.cap.max_inline_data + 1) == EINVAL,
	   "inline send above max_inline_data fails with EINVAL");
	ok(post_send1(&e, qp, 6, IBV_WR_ATOMIC_FETCH_AND_ADD, 1, 0, 8) ==
	   EINVAL, "atomic fetch-and-add fails with EINVAL");
	ok(post_send1(&e, qp, 7, IBV_WR_SEND_WITH_IMM, 1, 0, 8) == EINVAL,
	   "send with immediate fails with EINVAL");
	ok(post_send1(&e, qp, 8, IBV_WR_RDMA_READ, 2, 0, 8) == EINVAL,
	   "RDMA Read with 2 local SGEs fails with EINVAL");

	memcpy(e.buf, "kiwi-inline-data", 16);
	err = post_send1(&e, qp, 0x6b6977695351ULL, IBV_WR_SEND, 1,
			 IBV_SEND_INLINE | IBV_SEND_SIGNALED, 16);
	ok(!err, "inline send of 16 bytes in INIT (%s)",
	   err > 0 ? strerror(err) : err ? "bad_wr wrong" : "ok");
	sqe = find_wqe(&m, 0x6b6977695351ULL);
	ok(sqe && sqe->opcode == KIWI_OP_SEND &&
	   (sqe->flags & KIWI_WQE_INLINE) &&
	   (sqe->flags & KIWI_WQE_SIGNALED) && sqe->inline_len == 16 &&
	   !memcmp(sqe->inline_data, "kiwi-inline-data", 16),
	   "the inline send fills an SQ slot (opcode, flags, data, length)");
	err = post_send1(&e, qp, 0x6b6977695357ULL, IBV_WR_RDMA_WRITE, 1,
			 IBV_SEND_SIGNALED | IBV_SEND_FENCE, 300);
	ok(!err, "RDMA Write in INIT (%s)",
	   err > 0 ? strerror(err) : err ? "bad_wr wrong" : "ok");
	sqe = find_wqe(&m, 0x6b6977695357ULL);
	ok(sqe && sqe->opcode == KIWI_OP_WRITE && sqe->num_sge == 1 &&
	   sqe->sge[0].addr == (uintptr_t)e.buf &&
	   sqe->sge[0].length == 300 && sqe->sge[0].lkey == e.mr->lkey &&
	   sqe->rkey == 0x42 && sqe->raddr == 0x1000 &&
	   (sqe->flags & KIWI_WQE_READ_FENCE),
	   "the write fills an SQ slot (SGE, rkey, raddr, fence)");
	{
		/* A list stops at its first bad WR; the ones before it stay. */
		struct ibv_sge sge = { .addr = (uintptr_t)e.buf, .length = 8,
				       .lkey = e.mr->lkey };
		struct ibv_send_wr w[3], *badp = NULL;

		memset(w, 0, sizeof(w));
		for (i = 0; i < 3; i++) {
			w[i].wr_id = 0x6b69776943ULL + i;
			w[i].sg_list = &sge;
			w[i].num_sge = 1;
			w[i].opcode = IBV_WR_SEND;
			w[i].next = i < 2 ? &w[i + 1] : NULL;
		}
		w[1].opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
		err = ibv_post_send(qp, w, &badp);
		ok(err == EINVAL && badp == &w[1] &&
		   find_wqe(&m, w[0].wr_id) && !find_wqe(&m, w[2].wr_id),
		   "a list with a bad 2nd WR: EINVAL, bad_wr at it, 1st posted");
	}
	for (n_sq = 3; n_sq < 100000; n_sq++)
		if (post_send1(&e, qp, 0x200 + n_sq, IBV_WR_SEND, 1,
			       IBV_SEND_SIGNALED, 8))
			break;
	ok(n_sq == ia.cap.max_send_wr &&
	   post_send1(&e, qp, 9, IBV_WR_SEND, 1, 0, 8) == ENOMEM,
	   "SQ takes max_send_wr %u sends (%u), then ENOMEM",
	   ia.cap.max_send_wr, n_sq);

	/*
	 * No connection: RTS is out of reach.  RTR is bookkeeping only on
	 * iWARP and librdmacm's rdma_accept() passes through it before the
	 * connection exists, so INIT->RTR is allowed (as siw does); RTR->RTS
	 * still needs the connection manager.
	 */
	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IBV_QPS_RTS;
	ok(ibv_modify_qp(qp, &attr, IBV_QP_STATE) == EINVAL,
	   "modify INIT->RTS without a connection fails with EINVAL");
	ok(qp_state(qp) == IBV_QPS_INIT, "QP still INIT");
	attr.qp_state = IBV_QPS_RTR;
	ok(!ibv_modify_qp(qp, &attr, IBV_QP_STATE),
	   "modify INIT->RTR (as rdma_accept does) succeeds");
	ok(qp_state(qp) == IBV_QPS_RTR, "query reports RTR");
	attr.qp_state = IBV_QPS_RTS;
	ok(ibv_modify_qp(qp, &attr, IBV_QP_STATE) == EINVAL,
	   "modify RTR->RTS without a connection fails with EINVAL");
	ok(qp_state(qp) == IBV_QPS_RTR, "QP still RTR");

	/* Resources in use. */
	ok(ibv_destroy_cq(e.scq) == EBUSY,
	   "destroy of the QP's send CQ fails with EBUSY");
	ok(ibv_dealloc_pd(e.pd) == EBUSY,
	   "dealloc of the QP's PD fails with EBUSY");

	/* ERROR flushes every posted WR to the CQs. */
	attr.qp_state = IBV_QPS_ERR;
	ok(!ibv_modify_qp(qp, &attr, IBV_QP_STATE), "modify INIT->ERROR");
	ok(qp_state(qp) == IBV_QPS_ERR, "query reports ERROR");
	for (got = 0, flushed = 0, i = 0; i < 50 && got < (int)n_sq; i++) {
		int k, r = ibv_poll_cq(e.scq, 64, wc);

		for (k = 0; k < r; k++)
			flushed += wc[k].status == IBV_WC_WR_FLUSH_ERR;
		got += r > 0 ? r : 0;
		if (r <= 0)
			usleep(20000);
	}
	ok(got == (int)n_sq && flushed == got,
	   "%u sends flushed to the send CQ (%d, %d with FLUSH_ERR)", n_sq,
	   got, flushed);
	for (got = 0, flushed = 0, i = 0; i < 50 && got < (int)n_rq; i++) {
		int k, r = ibv_poll_cq(e.rcq, 64, wc);

		for (k = 0; k < r; k++)
			flushed += wc[k].status == IBV_WC_WR_FLUSH_ERR &&
				   wc[k].opcode == IBV_WC_RECV &&
				   wc[k].qp_num == qp->qp_num;
		got += r > 0 ? r : 0;
		if (r <= 0)
			usleep(20000);
	}
	ok(got == (int)n_rq && flushed == got,
	   "%u receives flushed to the receive CQ (%d, %d as RECV/FLUSH_ERR)",
	   n_rq, got, flushed);

	/* In ERROR a post completes at once, flushed: the doorbell's job. */
	ok(!post_send1(&e, qp, 0x6b69776946, IBV_WR_SEND, 1,
		       IBV_SEND_SIGNALED, 8), "post_send in ERROR");
	for (got = 0, i = 0; i < 50 && !got; i++) {
		got = ibv_poll_cq(e.scq, 1, wc);
		if (!got)
			usleep(20000);
	}
	ok(got == 1 && wc[0].wr_id == 0x6b69776946 &&
	   wc[0].status == IBV_WC_WR_FLUSH_ERR &&
	   wc[0].opcode == IBV_WC_SEND,
	   "it completes flushed through the send CQ (%d)", got);
	for (got = 0, i = 0; i < 50 && !got; i++) {
		got = ibv_poll_cq(e.scq, 1, wc);
		if (!got)
			usleep(20000);
	}
	ok(got == 0, "exactly once");

	attr.qp_state = IBV_QPS_RESET;
	ok(!ibv_modify_qp(qp, &attr, IBV_QP_STATE), "modify ERROR->RESET");
	ok(qp_state(qp) == IBV_QPS_RESET, "query reports RESET");
	ok(post_recv1(&e, qp, NULL, 1, 1) == EINVAL,
	   "post_recv in RESET fails with EINVAL");
	ok(post_send1(&e, qp, 1, IBV_WR_SEND, 1, 0, 8) == EINVAL,
	   "post_send in RESET fails with EINVAL");
	ok(!to_init(qp) && !post_recv1(&e, qp, NULL, 0x77, 1),
	   "RESET->INIT again, post_recv works");

	ok(!ibv_destroy_qp(qp), "ibv_destroy_qp");
	uverbs_maps(&after);
	maps_new(&before, &after, &m);
	ok(m.n == 0, "SQ and RQ unmapped");

	/* Creation errors. */
	errno = 0;
	bad_qp = make_qp(&e, NULL, IBV_QPT_UD, 8, 8, 1, 1, 0, NULL);
	EXPECT_NULL_ERRNO(bad_qp, ibv_destroy_qp, EOPNOTSUPP, "UD QP");
	errno = 0;
	bad_qp = make_qp(&e, NULL, IBV_QPT_UC, 8, 8, 1, 1, 0, NULL);
	EXPECT_NULL_ERRNO(bad_qp, ibv_destroy_qp, EOPNOTSUPP, "UC QP");
	errno = 0;
	bad_qp = make_qp(&e, NULL, IBV_QPT_RC, KIWI_MAX_QP_WR + 1, 8, 1, 1,
			 0, NULL);
	EXPECT_NULL_ERRNO(bad_qp, ibv_destroy_qp, EINVAL,
			  "QP with max_send_wr above max_qp_wr");
	errno = 0;
	bad_qp = make_qp(&e, NULL, IBV_QPT_RC, 8, KIWI_MAX_QP_WR + 1, 1, 1,
			 0, NULL);
	EXPECT_NULL_ERRNO(bad_qp, ibv_destroy_qp, EINVAL,
			  "QP with max_recv_wr above max_qp_wr");
	errno = 0;
	bad_qp = make_qp(&e, NULL, IBV_QPT_RC, 8, 8, KIWI_MAX_SGE + 1, 1, 0,
			 NULL);
	EXPECT_NULL_ERRNO(bad_qp, ibv_destroy_qp, EINVAL,
			  "QP with max_send_sge above max_sge");
	errno = 0;
	bad_qp = make_qp(&e, NULL, IBV_QPT_RC, 8, 8, 1, KIWI_MAX_SGE + 1, 0,
			 NULL);
	EXPECT_NULL_ERRNO(bad_qp, ibv_destroy_qp, EINVAL,
			  "QP with max_recv_sge above max_sge");
	errno = 0;
	bad_qp = make_qp(&e, NULL, IBV_QPT_RC, 8, 8, 1, 1,
			 KIWI_MAX_INLINE + 1, NULL);
	EXPECT_NULL_ERRNO(bad_qp, ibv_destroy_qp, EINVAL,
			  "QP with max_inline_data above the limit");
	qp = make_qp(&e, NULL, IBV_QPT_RC, KIWI_MAX_QP_WR, KIWI_MAX_QP_WR,
		     KIWI_MAX_SGE, KIWI_MAX_SGE, KIWI_MAX_INLINE, &ia);
	ok(qp && ia.cap.max_send_wr == KIWI_MAX_QP_WR &&
	   ia.cap.max_recv_wr == KIWI_MAX_QP_WR,
	   "QP at every limit (%s)", qp ? "ok" : strerror(errno));
	if (qp)
		ibv_destroy_qp(qp);
	ok(kiwi_count("qps") == 0, "failed creations leave no QP");

	env_close(&e);
	check_counts("QPs");
}

#define N_THREADS 4

struct poster {
	pthread_t tid;
	struct qp_env *e;
	struct ibv_srq *srq;
	uint32_t idx, posted;
	int last_err;
};

static void *srq_poster(void *arg)
{
	struct poster *p = arg;

	for (;;) {
		int err = post_recv1(p->e, NULL, p->srq,
				     ((uint64_t)(p->idx + 1) << 32) | p->posted,
				     1);
		if (err) {
			p->last_err = err;
			return NULL;
		}
		p->posted++;
	}
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * ibv_create_qp_ex(): a mask naming create flags with none set makes the
 * same RC QP as ibv_create_qp() (rdma-core's tests choose such masks at
 * random); what kiwi lacks is refused with EOPNOTSUPP.
 */
static void case_qp_ex(void)
{
	struct ibv_qp_init_attr_ex a;
	struct qp_env e;
	struct ibv_qp *qp;

	if (!env_open(&e)) {
		ok(false, "PD, CQs and MR for the QP ex case");
		env_close(&e);
		return;
	}
	memset(&a, 0, sizeof(a));
	a.send_cq = e.scq;
	a.recv_cq = e.rcq;
	a.qp_type = IBV_QPT_RC;
	a.cap.max_send_wr = 4;
	a.cap.max_recv_wr = 4;
	a.cap.max_send_sge = 1;
	a.cap.max_recv_sge = 1;
	a.pd = e.pd;
	a.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_CREATE_FLAGS;
	qp = ibv_create_qp_ex(e.ctx, &a);
	ok(qp && qp->state == IBV_QPS_RESET && qp_state(qp) == IBV_QPS_INIT &&
	   a.cap.max_send_wr >= 4 && a.cap.max_recv_wr >= 4,
	   "ibv_create_qp_ex, create flags 0: RC QP, ibv_qp.state RESET, query INIT (%s)",
	   qp ? "ok" : strerror(errno));
	ok(qp && !post_recv1(&e, qp, NULL, 0x51, 1),
	   "post_recv on it before any modify");
	ok(qp && !ibv_destroy_qp(qp), "ibv_destroy_qp");

	a.create_flags = IBV_QP_CREATE_SCATTER_FCS;
	errno = 0;
	qp = ibv_create_qp_ex(e.ctx, &a);
	EXPECT_NULL_ERRNO(qp, ibv_destroy_qp, EOPNOTSUPP,
			  "ibv_create_qp_ex with a create flag");

	a.create_flags = 0;
	a.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	a.send_ops_flags = IBV_QP_EX_WITH_SEND;
	errno = 0;
	qp = ibv_create_qp_ex(e.ctx, &a);
	EXPECT_NULL_ERRNO(qp, ibv_destroy_qp, EOPNOTSUPP,
			  "ibv_create_qp_ex with send ops flags");
	ok(kiwi_count("qps") == 0, "no QP left counted");
	env_close(&e);
}

/* Concurrent posters share one SRQ: every slot filled exactly once. */
static void case_srq_threads(struct qp_env *e)
{
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 1024,
						   .max_sge = 1 } };
	struct poster p[N_THREADS];
	struct maps before, after, m;
	struct ibv_srq *srq;
	uint64_t *ids = NULL;
	uint32_t total = 0, n = 0, dups = 0, i;
	bool all_enomem = true;

	uverbs_maps(&before);
	srq = ibv_create_srq(e->pd, &sa);
	uverbs_maps(&after);
	maps_new(&before, &after, &m);
	if (!srq || m.n != 1) {
		ok(false, "SRQ of 1024 for concurrent posters");
		if (srq)
			ibv_destroy_srq(srq);
		return;
	}
	for (i = 0; i < N_THREADS; i++) {
		p[i] = (struct poster){ .e = e, .srq = srq, .idx = i };
		pthread_create(&p[i].tid, NULL, srq_poster, &p[i]);
	}
	for (i = 0; i < N_THREADS; i++) {
		pthread_join(p[i].tid, NULL);
		total += p[i].posted;
		all_enomem &= p[i].last_err == ENOMEM;
	}
	ok(total == sa.attr.max_wr && all_enomem,
	   "%d threads post %u receives into an SRQ of %u, then ENOMEM",
	   N_THREADS, total, sa.attr.max_wr);

	ids = calloc(sa.attr.max_wr, sizeof(*ids));
	for (i = 0; ids && i < sa.attr.max_wr; i++) {
		const struct kiwi_rqe *r = (const struct kiwi_rqe *)m.start[0] +
					   i;

		if (r->flags & KIWI_WQE_VALID)
			ids[n++] = r->id;
	}
	if (ids)
		qsort(ids, n, sizeof(*ids), cmp_u64);
	for (i = 1; ids && i < n; i++)
		dups += ids[i] == ids[i - 1];
	ok(ids && n == sa.attr.max_wr && !dups,
	   "every slot holds one distinct receive (%u valid, %u duplicates)",
	   n, dups);
	free(ids);
	ok(!ibv_destroy_srq(srq), "destroy the shared SRQ");
}

static void case_srq(void)
{
	struct qp_env e;
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 16,
						   .max_sge = 2 } };
	struct ibv_srq_attr attr;
	struct ibv_srq *srq, *bad;
	struct ibv_qp *qp;
	struct maps before, after, m;
	struct kiwi_rqe *rqe;
	uint32_t n;
	int err;

	if (!env_open(&e)) {
		ok(false, "PD, CQs and MR for the SRQ case");
		env_close(&e);
		return;
	}
	uverbs_maps(&before);
	srq = ibv_create_srq(e.pd, &sa);
	ok(srq != NULL, "ibv_create_srq (%s)", srq ? "ok" : strerror(errno));
	if (!srq) {
		env_close(&e);
		return;
	}
	ok(sa.attr.max_wr >= 16 && sa.attr.max_sge == 2,
	   "granted SRQ caps: WRs cover the request, SGEs as asked (%u wr, %u sge)",
	   sa.attr.max_wr, sa.attr.max_sge);
	ok(kiwi_count("srqs") == 1, "one SRQ counted");
	uverbs_maps(&after);
	maps_new(&before, &after, &m);
	ok(m.n == 1, "SRQ ring mapped");

	memset(&attr, 0, sizeof(attr));
	ok(!ibv_query_srq(srq, &attr) && attr.max_wr == sa.attr.max_wr &&
	   attr.max_sge == sa.attr.max_sge, "ibv_query_srq");
	attr.srq_limit = 4;
	ok(!ibv_modify_srq(srq, &attr, IBV_SRQ_LIMIT), "arm the SRQ limit");
	attr.max_wr = 2 * sa.attr.max_wr;
	ok(ibv_modify_srq(srq, &attr, IBV_SRQ_MAX_WR) == EOPNOTSUPP,
	   "resizing the SRQ fails with EOPNOTSUPP (its ring is fixed)");
	memset(&attr, 0, sizeof(attr));
	err = ibv_query_srq(srq, &attr);
	ok(!err && attr.srq_limit == 4, "query reports the limit (%u)",
	   attr.srq_limit);

	ok(!post_recv1(&e, NULL, srq, 0x6b6977695352ULL, 2),
	   "post_srq_recv");
	rqe = find_wqe(&m, 0x6b6977695352ULL);
	ok(rqe && rqe->num_sge == 2 && rqe->sge[1].length == 51 &&
	   rqe->sge[1].lkey == e.mr->lkey,
	   "the receive fills an SRQ slot");
	ok(post_recv1(&e, NULL, srq, 1, (int)sa.attr.max_sge + 1) == EINVAL,
	   "post_srq_recv with too many SGEs fails with EINVAL");
	for (n = 1; n < 100000; n++)
		if (post_recv1(&e, NULL, srq, 0x300 + n, 1))
			break;
	ok(n == sa.attr.max_wr && post_recv1(&e, NULL, srq, 2, 1) == ENOMEM,
	   "SRQ takes max_wr %u receives (%u), then ENOMEM", sa.attr.max_wr,
	   n);

	uverbs_maps(&before);
	qp = make_qp(&e, srq, IBV_QPT_RC, 8, 0, 1, 0, 0, NULL);
	ok(qp != NULL, "QP with an SRQ (%s)", qp ? "ok" : strerror(errno));
	if (qp) {
		uverbs_maps(&after);
		maps_new(&before, &after, &m);
		ok(m.n == 1, "only the SQ is mapped (%d new mappings)", m.n);
		ok(!to_init(qp) && post_recv1(&e, qp, NULL, 3, 1) == EINVAL,
		   "post_recv on a QP with an SRQ fails with EINVAL");
		ok(ibv_destroy_srq(srq) == EBUSY,
		   "destroy of an SRQ in use fails with EBUSY");
		ok(!ibv_destroy_qp(qp), "destroy the QP");
	}
	ok(!ibv_destroy_srq(srq), "ibv_destroy_srq");

	case_srq_threads(&e);

	sa.attr.max_wr = KIWI_MAX_SRQ_WR + 1;
	sa.attr.max_sge = 1;
	errno = 0;
	bad = ibv_create_srq(e.pd, &sa);
	EXPECT_NULL_ERRNO(bad, ibv_destroy_srq, EINVAL,
			  "SRQ above max_srq_wr");
	sa.attr.max_wr = 16;
	sa.attr.max_sge = KIWI_MAX_SGE + 1;
	errno = 0;
	bad = ibv_create_srq(e.pd, &sa);
	EXPECT_NULL_ERRNO(bad, ibv_destroy_srq, EINVAL,
			  "SRQ above max_srq_sge");

	env_close(&e);
	check_counts("SRQs");
}

/* Create one of everything; returns false if any creation failed. */
struct held {
	struct qp_env e;
	struct ibv_srq *srq;
	struct ibv_qp *qp, *qp2;
};

static bool hold_objects(struct held *h)
{
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 8,
						   .max_sge = 1 } };

	memset(h, 0, sizeof(*h));
	if (!env_open(&h->e))
		return false;
	h->srq = ibv_create_srq(h->e.pd, &sa);
	h->qp = make_qp(&h->e, NULL, IBV_QPT_RC, 8, 8, 1, 1, 0, NULL);
	h->qp2 = h->srq ? make_qp(&h->e, h->srq, IBV_QPT_RC, 8, 0, 1, 0, 0,
				  NULL) : NULL;
	if (!h->srq || !h->qp || !h->qp2)
		return false;
	return !to_init(h->qp) && !post_recv1(&h->e, h->qp, NULL, 1, 1) &&
	       !post_recv1(&h->e, NULL, h->srq, 2, 1);
}

static void release_objects(struct held *h)
{
	if (h->qp2)
		ibv_destroy_qp(h->qp2);
	if (h->qp)
		ibv_destroy_qp(h->qp);
	if (h->srq)
		ibv_destroy_srq(h->srq);
	env_close(&h->e);
}

/* Lines of `rdma resource show TYPE' that name process `pid'. */
static int rdma_res_lines(const char *type, pid_t pid)
{
	char cmd[128], line[1024], pat[32];
	int n = 0;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "rdma resource show %s 2>/dev/null",
		 type);
	snprintf(pat, sizeof(pat), "pid %d ", (int)pid);
	p = popen(cmd, "r");
	if (!p)
		return -1;
	while (fgets(line, sizeof(line), p))
		if (strstr(line, pat) && strstr(line, dev_name))
			n++;
	if (pclose(p))
		return -1;
	return n;
}

static void case_sigkill(void)
{
	int pfd[2];
	pid_t pid;
	char c = 0;
	int st, i;
	static const char *const types[] = { "pd", "cq", "qp", "mr" };

	if (pipe(pfd)) {
		ok(false, "pipe");
		return;
	}
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		struct held h;

		close(pfd[0]);
		c = hold_objects(&h) ? 'y' : 'n';
		if (write(pfd[1], &c, 1) != 1)
			_exit(1);
		for (;;)
			pause();
	}
	close(pfd[1]);
	ok(pid > 0 && read(pfd[0], &c, 1) == 1 && c == 'y',
	   "child process creates PD, CQs, MR, SRQ and QPs");
	close(pfd[0]);
	if (pid <= 0)
		return;
	ok(kiwi_count("qps") == 2 && kiwi_count("srqs") == 1 &&
	   kiwi_count("cqs") == 2 && kiwi_count("mrs") == 1 &&
	   kiwi_count("pds") == 1 && kiwi_count("ucontexts") == 1,
	   "kiwi counts the child's objects");
	for (i = 0; i < 4; i++) {
		int n = rdma_res_lines(types[i], pid);

		ok(n > 0, "rdma resource show %s lists the child's (%d)",
		   types[i], n);
	}
	kill(pid, SIGKILL);
	ok(waitpid(pid, &st, 0) == pid && WIFSIGNALED(st) &&
	   WTERMSIG(st) == SIGKILL, "child killed with SIGKILL");
	check_counts("the child's SIGKILL");
	for (i = 0; i < 4; i++) {
		int n = rdma_res_lines(types[i], pid);

		ok(n == 0, "rdma resource show %s no longer lists them (%d)",
		   types[i], n);
	}
}

/* --hold: for the case script's own `rdma resource show' checks. */
static int hold_mode(void)
{
	struct held h;
	char line[64];

	if (!hold_objects(&h)) {
		fprintf(stderr, "verbs-objects: creating objects failed: %s\n",
			strerror(errno));
		release_objects(&h);
		return 1;
	}
	printf("ready %d %u %u\n", (int)getpid(), h.qp->qp_num,
	       h.qp2->qp_num);
	fflush(stdout);
	while (fgets(line, sizeof(line), stdin))
		;
	release_objects(&h);
	return 0;
}

/*
 * --churn SECS: create a QP, post a receive and a Send into its rings,
 * destroy it, over and over, while the case dumps `rdma resource show qp
 * -dd' in a loop (the dump reads the rings of QPs being destroyed).
 * Prints "churn N" (QPs created and destroyed) and exits 0 if all went.
 */
#define CHURN_LIVE	64

static int churn_mode(int secs)
{
	struct ibv_qp *qp[CHURN_LIVE] = { NULL };
	time_t end = time(NULL) + secs;
	unsigned long n = 0;
	struct qp_env e;
	int i, rv = 0;

	if (!env_open(&e))
		return 1;
	/* a window of live QPs, so that each dump walks many of them */
	for (i = 0; time(NULL) < end; i = (i + 1) % CHURN_LIVE) {
		if (qp[i] && ibv_destroy_qp(qp[i])) {
			fprintf(stderr, "churn: destroy: %s\n",
				strerror(errno));
			rv = 1;
			break;
		}
		qp[i] = make_qp(&e, NULL, IBV_QPT_RC, 8, 8, 1, 1, 0, NULL);
		if (!qp[i] || to_init(qp[i]) ||
		    post_recv1(&e, qp[i], NULL, 1, 1) ||
		    post_send1(&e, qp[i], 2, IBV_WR_SEND, 1, 0, 16)) {
			fprintf(stderr, "churn: QP %lu: %s\n", n,
				strerror(errno));
			rv = 1;
			break;
		}
		n++;
	}
	for (i = 0; i < CHURN_LIVE; i++)
		if (qp[i] && ibv_destroy_qp(qp[i]))
			rv = 1;
	env_close(&e);
	printf("churn %lu\n", n);
	return rv;
}

/*
 * --rings N: create N CQs of RINGS_CQE slots (2 MiB of ring each), print
 * "ready N", keep them until EOF on
 * stdin.  The case compares the memory cgroup's usage with and without
 * them: ring memory must be charged to the process.
 */
#define RINGS_CQE	65536

static int rings_mode(int n)
{
	struct ibv_context *ctx = open_dev();
	struct ibv_cq *cq[64];
	char line[64];
	int i, made = 0, rv = 0;

	if (!ctx || n > 64)
		return 1;
	for (i = 0; i < n; i++) {
		cq[i] = ibv_create_cq(ctx, RINGS_CQE, NULL, NULL, 0);
		if (!cq[i]) {
			fprintf(stderr, "rings: CQ %d: %s\n", i,
				strerror(errno));
			rv = 1;
			break;
		}
		made++;
	}
	printf("ready %d\n", made);
	fflush(stdout);
	while (fgets(line, sizeof(line), stdin))
		;
	for (i = 0; i < made; i++)
		ibv_destroy_cq(cq[i]);
	ibv_close_device(ctx);
	return rv;
}

/*
 * --memlock N: create CQs of RINGS_CQE slots (2 MiB) until one fails or N
 * exist, print "made M errno E" (E 0: none failed), destroy them, create
 * M again and print "again K errno E".  The case runs it under
 * `ulimit -l` with and without CAP_IPC_LOCK: ring memory counts against
 * RLIMIT_MEMLOCK, and destroying the CQs gives the charge back.
 */
#define MEMLOCK_MAX_CQ 256
static int memlock_round(struct ibv_context *ctx, struct ibv_cq **cq, int n,
			 int *err)
{
	int i;

	*err = 0;
	for (i = 0; i < n; i++) {
		cq[i] = ibv_create_cq(ctx, RINGS_CQE, NULL, NULL, 0);
		if (!cq[i]) {
			*err = errno;
			break;
		}
	}
	return i;
}

static int memlock_mode(int n)
{
	struct ibv_context *ctx = open_dev();
	struct ibv_cq *cq[MEMLOCK_MAX_CQ];
	int i, made, again, err;

	if (!ctx || n > MEMLOCK_MAX_CQ)
		return 1;
	made = memlock_round(ctx, cq, n, &err);
	printf("made %d errno %d\n", made, err);
	for (i = 0; i < made; i++)
		ibv_destroy_cq(cq[i]);
	again = memlock_round(ctx, cq, made, &err);
	printf("again %d errno %d\n", again, err);
	for (i = 0; i < again; i++)
		ibv_destroy_cq(cq[i]);
	ibv_close_device(ctx);
	return 0;
}

int main(int argc, char **argv)
{
	bool hold = false;
	int i, churn = 0, rings = -1, memlock = -1;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-d") && i + 1 < argc)
			dev_name = argv[++i];
		else if (!strcmp(argv[i], "-n") && i + 1 < argc)
			net_name = argv[++i];
		else if (!strcmp(argv[i], "--hold"))
			hold = true;
		else if (!strcmp(argv[i], "--churn") && i + 1 < argc)
			churn = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--rings") && i + 1 < argc)
			rings = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--memlock") && i + 1 < argc)
			memlock = atoi(argv[++i]);
		else {
			fprintf(stderr,
				"usage: %s [-d ibdev] [-n netdev] [--hold | --churn SECS | --rings N | --memlock N]\n",
				argv[0]);
			return 2;
		}
	}
	if (hold)
		return hold_mode();
	if (churn > 0)
		return churn_mode(churn);
	if (rings >= 0)
		return rings_mode(rings);
	if (memlock >= 0)
		return memlock_mode(memlock);

	diag("kiwi verbs objects on %s (netdev %s)", dev_name, net_name);
	case_device();
	case_pd_mr();
	case_caps();
	case_cq();
	case_qp();
	case_qp_ex();
	case_srq();
	case_sigkill();

	return tap_end();
}
