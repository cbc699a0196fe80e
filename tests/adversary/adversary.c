// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * An adversarial iWARP peer: speaks MPA over a plain TCP socket to a kiwi
 * listener and sends malformed MPA frames and FPDUs, one scenario per
 * connection.  Every frame is built by the protocol core
 * (drivers/kiwi/proto, compiled here as in tests/unit) and then corrupted
 * in exactly one field; what kiwi sends back is decoded with the core and
 * compared byte for byte with the Terminate (or MPA Reply) the core
 * builds for the expected error.  Then the connection must close.
 *
 *   adversary --selftest [--crc on|off]
 *	runs every scenario's frames through the core's own receive side
 *	(a model of kiwi's receiver) to prove each frame fails in exactly
 *	the intended way, and that the response checker can fail.
 *   adversary -a ADDR -p PORT --victim-file F [--crc on|off]
 *	[--kiwi-crc off|preferred|required] [--kiwi-ird N] [--kiwi-ord N]
 *	[--tag T] [--only NAME[,NAME...]] [--timeout SEC]
 *	runs the scenarios against a listener; F holds the victim's
 *	"victim-info" line (its MRs).  TAP on stdout.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "kiwi_proto.h"
#include "common.h"
#include "kiwi-tap.h"

/* ---- small helpers ---- */

struct buf {
	u8 *p;
	u32 len;
	u32 cap;
};

static void buf_reserve(struct buf *b, u32 more)
{
	u32 cap;

	if (b->len + more <= b->cap)
		return;
	cap = b->cap ? b->cap : 4096;
	while (cap < b->len + more)
		cap *= 2;
	b->p = realloc(b->p, cap);
	if (!b->p) {
		perror("realloc");
		exit(2);
	}
	b->cap = cap;
}

static void buf_put(struct buf *b, const void *p, u32 len)
{
	buf_reserve(b, len);
	memcpy(b->p + b->len, p, len);
	b->len += len;
}

static void buf_free(struct buf *b)
{
	free(b->p);
	memset(b, 0, sizeof(*b));
}

static void hexdump(const char *what, const u8 *p, u32 len, u32 from)
{
	u32 i, end = len < from + 96 ? len : from + 96;
	char line[3 * 32 + 1];
	u32 n = 0;

	diag("%s: %u bytes%s", what, len, len ? "" : " (nothing)");
	for (i = from; i < end; i++) {
		n += sprintf(line + n, "%02x ", p[i]);
		if ((i - from) % 32 == 31 || i + 1 == end) {
			diag("  %04x: %s", i - (i - from) % 32, line);
			n = 0;
		}
	}
	if (end < len)
		diag("  ... %u more", len - end);
}

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

/* ---- the victim's memory, as it announces it ---- */

struct victim {
	u32 stag;
	u64 addr;
	u32 len;
	u32 ro_stag;
	u64 ro_addr;
	u32 ro_len;
	u32 recv_len;
	u32 recvs;
	u32 ird;
	u32 ord;
};

static int victim_parse(struct victim *v, const char *line)
{
	static const char *const keys[] = { "stag", "addr", "len", "ro_stag",
		"ro_addr", "ro_len", "recv_len", "recvs", "ird", "ord" };
	unsigned long long val[10];
	unsigned int found = 0, i;
	const char *s = strstr(line, KIWI_ADV_INFO_TAG);

	if (!s)
		return -1;
	s += strlen(KIWI_ADV_INFO_TAG);
	while (*s) {
		char key[32];
		unsigned long long x;
		int n;

		if (sscanf(s, " %31[a-z_]=%lli%n", key, &x, &n) != 2)
			break;
		for (i = 0; i < 10; i++)
			if (!strcmp(key, keys[i])) {
				val[i] = x;
				found |= 1U << i;
			}
		s += n;
	}
	if (found != (1U << 10) - 1)
		return -1;
	v->stag = val[0];
	v->addr = val[1];
	v->len = val[2];
	v->ro_stag = val[3];
	v->ro_addr = val[4];
	v->ro_len = val[5];
	v->recv_len = val[6];
	v->recvs = val[7];
	v->ird = val[8];
	v->ord = val[9];
	return 0;
}

static int victim_load(struct victim *v, const char *file)
{
	char line[1024];
	int got = -1;
	FILE *f = fopen(file, "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (strstr(line, KIWI_ADV_INFO_TAG))
			got = victim_parse(v, line);
	fclose(f);
	return got;
}

/* ---- options and per-connection state ---- */

struct opts {
	const char *addr;
	int port;
	bool crc;		/* we ask for CRC (C flag) */
	u8 kiwi_crc;		/* kiwi's mpa_crc policy, for expected Replies */
	u16 kiwi_ird;
	u16 kiwi_ord;
	int timeout_ms;
	bool no_p2p;		/* no RTR: for peers without p2p mode (siw) */
	bool markers;		/* we ask kiwi for Markers (M flag) */
	bool kiwi_markers;	/* kiwi's mpa_markers policy */
	const char *tag;
	const char *only;
	struct victim v;
};

enum phase { PH_MPA, PH_FPDU };
/*
 * OUT_HOLD: valid FPDUs that leave kiwi holding the victim's MRs; the
 * connection is then held open, unread, until we are told to let go.
 *
 * OUT_DRAIN: the same, but on SIGTERM (the victim has invalidated its MRs
 * meanwhile) the rest of the stream goes, the window opens, and kiwi must
 * send no more of what it admitted before the invalidation.
 */
/*
 * OUT_REQ: kiwi is the requester: the victim posts Sends and Reads once
 * connected, we take them in, then answer with the scenario's bytes (err:
 * the Terminate kiwi must send back, KIWI_OK for none).
 */
enum outcome { OUT_CLOSE, OUT_REJECT, OUT_TERM, OUT_OK, OUT_SILENT, OUT_HOLD,
	       OUT_REQ, OUT_DRAIN };

/* OUT_REQ: how we end the stream after the scenario's bytes */
enum cut { CUT_NONE, CUT_RST, CUT_FIN };

struct run;

/* OUT_REQ: what the victim posts (private data "sends=N reads=N") */
#define REQ_SENDS	2
#define REQ_READS	2
#define REQ_READ_MAX	4096	/* the victim's Read size */

struct scen {
	const char *name;
	const char *what;
	enum phase phase;
	enum outcome out;
	enum kiwi_err err;
	int crc;		/* 1: only with CRC, -1: only without, 0: both */
	int recvs;		/* receives the victim posts, -1: its default */
	bool small_rcvbuf;	/* keep kiwi's Read Responses backed up */
	bool kiwi_crc_required;	/* only when kiwi requires CRC */
	bool kiwi_markers;	/* only when kiwi asks for Markers */
	bool no_markers;	/* not when we send Markers */
	u32 nfpdu;		/* OUT_OK, OUT_HOLD: whole FPDUs after the RTR */
	enum cut cut;		/* OUT_REQ */
	bool before_rtr;	/* OUT_REQ: instead of the RTR */
	void (*mpa)(struct run *r, struct buf *b);
	int (*fpdu)(struct run *r, struct buf *b);
};

struct run {
	const struct opts *o;
	const struct scen *s;
	struct kiwi_mpa_cfg my;		/* our side of the MPA exchange */
	struct kiwi_mpa_cfg kiwi;	/* kiwi's, as configured */
	struct kiwi_mpa_result res;	/* negotiated (from kiwi's Reply) */
	struct kiwi_tx tx;
	u8 bad[KIWI_WIRE_HDR_MAX];	/* header of the offending FPDU */
	u32 bad_len;
	struct buf exp;			/* expected Reply or Terminate */
	struct buf exp_rresp;		/* control: expected Read Response */
	u32 sink_stag;			/* Read Requests' sink */
	u64 sink_to;
	u64 src_off;			/* offset of the reads in the RO MR */
	bool rresp_ok;			/* Read Responses may precede the end */
	u32 split;			/* send this much, pause, then the rest */
	/* OUT_REQ: what kiwi sent as the requester */
	u32 nsend;
	u32 nrreq;
	struct kiwi_hdr rreq[REQ_READS];
	u32 hold_at;			/* OUT_DRAIN: this much before holding */
	u32 drain_total;		/* OUT_DRAIN: Read Response bytes asked */
	char pd[600];
	u32 pd_len;
};

/* ---- building frames with the core ---- */

static void my_cfg(struct run *r, bool crc)
{
	memset(&r->my, 0, sizeof(r->my));
	r->my.rev = 2;
	r->my.crc = crc ? KIWI_MPA_CRC_PREFERRED : KIWI_MPA_CRC_OFF;
	r->my.markers = r->o->markers;
	r->my.p2p = !r->o->no_p2p;
	r->my.rtr = r->my.p2p ? KIWI_RTR_WRITE : 0;
	r->my.ird = 16;
	r->my.ord = 64;
}

static void kiwi_cfg(struct run *r)
{
	memset(&r->kiwi, 0, sizeof(r->kiwi));
	r->kiwi.rev = 2;
	r->kiwi.crc = r->o->kiwi_crc;
	r->kiwi.markers = r->o->kiwi_markers;
	r->kiwi.p2p = !r->o->no_p2p;
	r->kiwi.rtr = KIWI_RTR_WRITE;
	r->kiwi.ird = r->o->kiwi_ird;
	r->kiwi.ord = r->o->kiwi_ord;
}

static void req_valid(struct run *r, struct buf *b)
{
	int n;

	buf_reserve(b, sizeof(struct kiwi_mpa_rr) + KIWI_MPA_PD_MAX);
	n = kiwi_mpa_req_build(&r->my, r->pd, r->pd_len, b->p + b->len,
			       b->cap - b->len);
	if (n < 0) {
		fprintf(stderr, "kiwi_mpa_req_build: %d\n", n);
		exit(2);
	}
	b->len += n;
}

/* append one FPDU; offending: its header goes into the expected Terminate */
static void put_fpdu(struct run *r, struct buf *b, const struct kiwi_hdr *h,
		     const void *payload, u32 len, bool offending)
{
	u32 need = kiwi_tx_wire_len(&r->tx, h, len);
	int n;

	if (!need) {
		fprintf(stderr, "kiwi_tx_wire_len: invalid FPDU\n");
		exit(2);
	}
	buf_reserve(b, need);
	n = kiwi_fpdu_build(&r->tx, h, payload, len, b->p + b->len,
			    b->cap - b->len);
	if (n < 0) {
		fprintf(stderr, "kiwi_fpdu_build: %d\n", n);
		exit(2);
	}
	if (offending) {
		r->bad_len = KIWI_MPA_LEN_SIZE + kiwi_hdr_len(h);
		memcpy(r->bad, b->p + b->len, r->bad_len);
	}
	b->len += n;
}

static u8 zeros[65536];

/* ---- the scenarios: MPA phase ---- */

static void mpa_bad_key(struct run *r, struct buf *b)
{
	u32 at = b->len;

	req_valid(r, b);
	/* "MPA ID Req Frame" -> "MPA ID Req FramE" */
	b->p[at + KIWI_MPA_KEY_LEN - 1] ^= 0x20;
}

static void mpa_pd_oversize(struct run *r, struct buf *b)
{
	struct kiwi_mpa_rr *rr;
	u32 at = b->len, extra = 88;

	/* a full 512-byte frame, then a length 88 bytes beyond the limit */
	memset(r->pd + r->pd_len, 'x', kiwi_mpa_ulp_pd_max(&r->my) - r->pd_len);
	r->pd_len = kiwi_mpa_ulp_pd_max(&r->my);
	req_valid(r, b);
	rr = (struct kiwi_mpa_rr *)(b->p + at);
	rr->pd_len = cpu_to_be16(KIWI_MPA_PD_MAX + extra);
	buf_put(b, zeros, extra);
}

static void mpa_rev3(struct run *r, struct buf *b)
{
	struct kiwi_mpa_rr *rr;
	u32 at = b->len;

	req_valid(r, b);
	rr = (struct kiwi_mpa_rr *)(b->p + at);
	rr->bits = cpu_to_be16((be16_to_cpu(rr->bits) & ~KIWI_MPA_REV_MASK) |
			       3);
}

static void mpa_nocrc(struct run *r, struct buf *b)
{
	/* a valid Request without C: kiwi's policy requires CRC */
	r->my.crc = KIWI_MPA_CRC_OFF;
	req_valid(r, b);
}

/* ---- the scenarios: after the MPA exchange (RTR already queued) ---- */

static void hdr_send(struct kiwi_hdr *h)
{
	kiwi_hdr_init(h, KIWI_RDMAP_SEND);
}

static void hdr_write(struct run *r, struct kiwi_hdr *h, u32 stag, u64 to)
{
	(void)r;
	kiwi_hdr_init(h, KIWI_RDMAP_WRITE);
	h->stag = stag;
	h->to = to;
}

static void hdr_rreq(struct run *r, struct kiwi_hdr *h, u32 msn, u32 src_stag,
		     u64 src_to, u32 size)
{
	kiwi_hdr_init(h, KIWI_RDMAP_READ_REQ);
	h->msn = msn;
	h->sink_stag = r->sink_stag;
	h->sink_to = r->sink_to;
	h->src_stag = src_stag;
	h->src_to = src_to;
	h->read_size = size;
}

static const char ctl_msg[] = "kiwi adversary: hello";

/* Write into the MR, read from the RO MR, Sends: all valid */
static int sc_control(struct run *r, struct buf *b)
{
	const struct victim *v = &r->o->v;
	u32 woff = 128, wlen = 512, roff = 64, rlen = 256, i;
	struct kiwi_hdr h;
	struct kiwi_tx t;
	struct kiwi_tx_cfg tc = { .crc = r->res.crc,
				  .markers = r->res.markers_rx };
	u8 wbuf[512], rbuf[256];
	char msg[64];

	if (v->len < woff + wlen || v->ro_len < roff + rlen ||
	    v->recvs < 2 || v->recv_len < sizeof(msg))
		return -1;
	for (i = 0; i < wlen; i++)
		wbuf[i] = kiwi_adv_wpattern(i, 0xa5);
	hdr_write(r, &h, v->stag, v->addr + woff);
	put_fpdu(r, b, &h, wbuf, wlen, false);
	hdr_rreq(r, &h, 1, v->ro_stag, v->ro_addr + roff, rlen);
	put_fpdu(r, b, &h, NULL, 0, false);
	snprintf(msg, sizeof(msg), "verify %u %u %u", woff, wlen, 0xa5);
	hdr_send(&h);
	h.msn = 1;
	put_fpdu(r, b, &h, msg, strlen(msg), false);
	hdr_send(&h);
	h.msn = 2;
	put_fpdu(r, b, &h, ctl_msg, strlen(ctl_msg), false);

	/* what kiwi must answer: one Read Response */
	for (i = 0; i < rlen; i++)
		rbuf[i] = kiwi_adv_pattern(roff + i);
	kiwi_hdr_init(&h, KIWI_RDMAP_READ_RESP);
	h.stag = r->sink_stag;
	h.to = r->sink_to;
	kiwi_tx_init(&t, &tc);
	buf_reserve(&r->exp_rresp, kiwi_tx_wire_len(&t, &h, rlen));
	r->exp_rresp.len = kiwi_fpdu_build(&t, &h, rbuf, rlen, r->exp_rresp.p,
					   r->exp_rresp.cap);
	r->src_off = roff;
	r->rresp_ok = true;
	return 0;
}

#define IRD_READ_MIN	(8U << 20)
#define IRD_MAX_TRIED	4096

/* exactly IRD Read Requests outstanding: all answered, no Terminate */
static int sc_read_at_ird(struct run *r, struct buf *b)
{
	const struct victim *v = &r->o->v;
	u32 ird = r->res.peer_ird, i, k, len = 64;
	struct kiwi_tx t;
	struct kiwi_tx_cfg tc = { .crc = r->res.crc,
				  .markers = r->res.markers_rx };
	struct kiwi_hdr h;
	u8 data[64];

	if (ird < 1 || ird > IRD_MAX_TRIED || v->ro_len < len)
		return -1;
	kiwi_tx_init(&t, &tc);
	for (i = 1; i <= ird; i++) {
		hdr_rreq(r, &h, i, v->ro_stag, v->ro_addr, len);
		put_fpdu(r, b, &h, NULL, 0, false);
		/* and the Read Response kiwi must send for it */
		for (k = 0; k < len; k++)
			data[k] = kiwi_adv_pattern(k);
		kiwi_hdr_init(&h, KIWI_RDMAP_READ_RESP);
		h.stag = r->sink_stag;
		h.to = r->sink_to;
		buf_reserve(&r->exp_rresp, kiwi_tx_wire_len(&t, &h, len));
		r->exp_rresp.len += kiwi_fpdu_build(&t, &h, data, len,
						    r->exp_rresp.p +
						    r->exp_rresp.len,
						    r->exp_rresp.cap -
						    r->exp_rresp.len);
	}
	r->src_off = 0;
	r->rresp_ok = true;
	return 0;
}

static int sc_bad_crc(struct run *r, struct buf *b)
{
	struct kiwi_hdr h;

	hdr_send(&h);
	put_fpdu(r, b, &h, ctl_msg, strlen(ctl_msg), true);
	b->p[b->len - 1] ^= 0x80;	/* last byte of the CRC */
	return 0;
}

static int sc_bad_marker(struct run *r, struct buf *b)
{
	struct kiwi_hdr h;

	if (!r->res.markers_tx || r->o->v.recv_len < 1000)
		return -1;
	hdr_send(&h);
	put_fpdu(r, b, &h, zeros, 1000, true);
	/* the stream starts at b->p: its second Marker, FPDUPTR + 4 */
	if (b->len < KIWI_MPA_MARKER_SPACING + KIWI_MPA_MARKER_LEN)
		return -1;
	b->p[KIWI_MPA_MARKER_SPACING + 3] ^= 0x04;
	return 0;
}

/* we end the stream with a Terminate of our own: kiwi answers nothing */
static int sc_peer_term(struct run *r, struct buf *b)
{
	/* a made-up Send header of ours for the copy: L, DV 1, RV 1 */
	static const u8 bogus[KIWI_MPA_LEN_SIZE + KIWI_HDR_UNTAGGED] = {
		0x00, 0x20, 0x41, 0x43, [13] = 0x01, [17] = 0x07 };
	struct kiwi_hdr h;

	kiwi_term_build(&h, KIWI_ERR_RDMAP_STREAM, bogus, sizeof(bogus), 1);
	put_fpdu(r, b, &h, NULL, 0, false);
	return 0;
}

static int sc_ulpdu_max(struct run *r, struct buf *b)
{
	struct kiwi_hdr h;

	/* ULPDU Length 0xffff: the field's maximum, beyond any MULPDU */
	hdr_send(&h);
	put_fpdu(r, b, &h, zeros, 0xffff - kiwi_hdr_len(&h), true);
	return 0;
}

static int sc_opcode(struct run *r, struct buf *b)
{
	struct kiwi_hdr h;

	hdr_send(&h);
	h.opcode = 9;		/* reserved: RFC 5040 defines 0 to 7 */
	put_fpdu(r, b, &h, ctl_msg, 16, true);
	return 0;
}

static int sc_ddp_version(struct run *r, struct buf *b)
{
	struct kiwi_hdr h;

	hdr_send(&h);
	h.dv = 2;
	put_fpdu(r, b, &h, ctl_msg, 16, true);
	return 0;
}

static int sc_ddp_version_t(struct run *r, struct buf *b)
{
	struct kiwi_hdr h;

	hdr_write(r, &h, r->o->v.stag, r->o->v.addr);
	h.dv = 0;
	put_fpdu(r, b, &h, ctl_msg, 16, true);
	return 0;
}

static int sc_rdmap_version(struct run *r, struct buf *b)
{
	struct kiwi_hdr h;

	hdr_send(&h);
	h.rv = 0;
	put_fpdu(r, b, &h, ctl_msg, 16, true);
	return 0;
}

/* an STag whose index no MR of the victim has */
static u32 stag_unknown(const struct victim *v)
{
	u32 s = 0xfffffe00 | (v->stag & 0xff);

	if (s == v->stag || s == v->ro_stag)
		s ^= 0x100;
	return s;
}

static int sc_write_stag(struct run *r, struct buf *b)
{
	struct kiwi_hdr h;

	hdr_write(r, &h, stag_unknown(&r->o->v), r->o->v.addr);
	put_fpdu(r, b, &h, ctl_msg, 16, true);
	return 0;
}

static int sc_write_key(struct run *r, struct buf *b)
{
	struct kiwi_hdr h;

	/* the MR's index with another key */
	hdr_write(r, &h, r->o->v.stag ^ 0x01, r->o->v.addr);
	put_fpdu(r, b, &h, ctl_msg, 16, true);
	return 0;
}

static int sc_write_bounds(struct run *r, struct buf *b)
{
	const struct victim *v = &r->o->v;
	struct kiwi_hdr h;

	/* 32 bytes starting 16 before the MR's end */
	hdr_write(r, &h, v->stag, v->addr + v->len - 16);
	put_fpdu(r, b, &h, zeros, 32, true);
	return 0;
}

static int sc_write_ro(struct run *r, struct buf *b)
{
	const struct victim *v = &r->o->v;
	struct kiwi_hdr h;

	hdr_write(r, &h, v->ro_stag, v->ro_addr);
	put_fpdu(r, b, &h, zeros, 32, true);
	return 0;
}

static int sc_read_stag(struct run *r, struct buf *b)
{
	const struct victim *v = &r->o->v;
	struct kiwi_hdr h;

	hdr_rreq(r, &h, 1, stag_unknown(v), v->ro_addr, 64);
	put_fpdu(r, b, &h, NULL, 0, true);
	return 0;
}

static int sc_read_bounds(struct run *r, struct buf *b)
{
	const struct victim *v = &r->o->v;
	struct kiwi_hdr h;

	hdr_rreq(r, &h, 1, v->ro_stag, v->ro_addr + v->ro_len - 32, 64);
	put_fpdu(r, b, &h, NULL, 0, true);
	return 0;
}

/*
 * More Read Requests than kiwi's IRD.  The first reads 8 MiB or more and
 * our receive window is tiny: kiwi cannot finish its Read Response until
 * we drain, so every later Request (64 bytes each, cheap to drain) stays
 * outstanding behind it and the one numbered IRD + 1 is the offender.
 */

static int sc_read_ird(struct run *r, struct buf *b)
{
	const struct victim *v = &r->o->v;
	u32 ird = r->res.peer_ird, i;
	struct kiwi_hdr h;

	if (ird < 1 || ird > IRD_MAX_TRIED || v->ro_len < IRD_READ_MIN) {
		diag("read-beyond-ird needs 1 <= kiwi's IRD (%u) <= %u and an RO MR of at least %u bytes (%u)",
		     ird, IRD_MAX_TRIED, IRD_READ_MIN, v->ro_len);
		return -1;
	}
	for (i = 1; i <= ird + 1; i++) {
		hdr_rreq(r, &h, i, v->ro_stag, v->ro_addr,
			 i == 1 ? v->ro_len : 64);
		put_fpdu(r, b, &h, NULL, 0, i == ird + 1);
		/* kiwi is busy sending the first when the others come */
		if (i == 1)
			r->split = b->len;
	}
	r->src_off = 0;
	r->rresp_ok = true;
	return 0;
}

static int sc_send_qn(struct run *r, struct buf *b)
{
	struct kiwi_hdr h;

	hdr_send(&h);
	h.qn = 3;		/* RDMAP uses queues 0, 1 and 2 */
	put_fpdu(r, b, &h, ctl_msg, 16, true);
	return 0;
}

static int sc_send_msn(struct run *r, struct buf *b)
{
	struct kiwi_hdr h;

	hdr_send(&h);
	h.msn = 2;		/* the first Send must carry MSN 1 */
	put_fpdu(r, b, &h, ctl_msg, 16, true);
	return 0;
}

static int sc_send_norecv(struct run *r, struct buf *b)
{
	struct kiwi_hdr h;

	hdr_send(&h);
	put_fpdu(r, b, &h, ctl_msg, 16, true);
	return 0;
}

static int sc_send_long(struct run *r, struct buf *b)
{
	struct kiwi_hdr h;
	u32 n = r->o->v.recv_len + 1;

	if (n > sizeof(zeros))
		return -1;
	hdr_send(&h);
	put_fpdu(r, b, &h, zeros, n, true);
	return 0;
}

/*
 * send-inv-user-mr (security issue, point 9): a Send with Invalidate
 * naming the writable MR, which the victim registered with ibv_reg_mr():
 * only fast-registration MRs may be invalidated remotely, since nothing
 * can make a user MR valid again.  The control scenario, which comes
 * after it, then still writes into that MR.
 */
static int sc_send_inv(struct run *r, struct buf *b)
{
	struct kiwi_hdr h;

	kiwi_hdr_init(&h, KIWI_RDMAP_SEND_INV);
	h.inval_stag = r->o->v.stag;
	put_fpdu(r, b, &h, ctl_msg, 16, true);
	return 0;
}

#define HOLD_READ	(4U << 20)
#define HOLD_WRITE	1024

/*
 * inval-held (security issue, point 2): IRD Read Requests of 4 MiB from
 * the RO MR behind our nearly closed window, and a Write FPDU into the
 * writable MR cut after about half its payload.  While we hold, the
 * victim invalidates both MRs (deregisters them: the case sends it
 * SIGUSR1); then we send the rest of the Write and read everything.
 * kiwi must place none of the Write's rest (the victim counts its bytes)
 * and send none of the Read Responses beyond what it had handed to TCP
 * before the invalidation: a Terminate or a reset ends the stream.
 */
static int sc_inval_held(struct run *r, struct buf *b)
{
	const struct victim *v = &r->o->v;
	u32 ird = r->res.peer_ird, size, i, at;
	u8 data[HOLD_WRITE];
	struct kiwi_hdr h;

	size = v->ro_len < HOLD_READ ? v->ro_len : HOLD_READ;
	if (ird < 1 || ird > IRD_MAX_TRIED || size < (1U << 20) ||
	    v->len < HOLD_WRITE)
		return -1;
	for (i = 1; i <= ird; i++) {
		hdr_rreq(r, &h, i, v->ro_stag, v->ro_addr, size);
		put_fpdu(r, b, &h, NULL, 0, false);
	}
	for (i = 0; i < HOLD_WRITE; i++)
		data[i] = kiwi_adv_wpattern(i, 0x3c);
	at = b->len;
	hdr_write(r, &h, v->stag, v->addr);
	put_fpdu(r, b, &h, data, HOLD_WRITE, false);
	/* the header and about half the payload before the invalidation */
	r->hold_at = at + (b->len - at) / 2;
	r->drain_total = ird * size;
	r->src_off = 0;
	return 0;
}

/*
 * dereg-held (issue 12, point 5): valid FPDUs after which kiwi keeps a
 * reference on each of the victim's MRs for as long as we like.  IRD
 * Read Requests of 4 MiB each from the RO MR: with our window nearly
 * closed and never read, kiwi's Read Responses fill its socket and IRD
 * entries wait behind them.  The first FPDU of a Send, not the last: a
 * receive in progress.  A Write FPDU into the writable MR cut in its
 * payload: a tagged placement in progress.  The victim then deregisters
 * the three MRs (the case sends it SIGUSR1) while we hold on.
 */
static int sc_dereg_held(struct run *r, struct buf *b)
{
	const struct victim *v = &r->o->v;
	u32 ird = r->res.peer_ird, size, i, at;
	u8 data[HOLD_WRITE];
	struct kiwi_hdr h;

	size = v->ro_len < HOLD_READ ? v->ro_len : HOLD_READ;
	if (ird < 1 || ird > IRD_MAX_TRIED || size < (1U << 20) ||
	    v->len < HOLD_WRITE || v->recv_len < HOLD_WRITE / 2 + 1)
		return -1;
	for (i = 1; i <= ird; i++) {
		hdr_rreq(r, &h, i, v->ro_stag, v->ro_addr, size);
		put_fpdu(r, b, &h, NULL, 0, false);
	}
	for (i = 0; i < HOLD_WRITE; i++)
		data[i] = kiwi_adv_wpattern(i, 0x3c);
	hdr_send(&h);
	h.last = false;
	put_fpdu(r, b, &h, data, HOLD_WRITE / 2, false);
	at = b->len;
	hdr_write(r, &h, v->stag, v->addr);
	put_fpdu(r, b, &h, data, HOLD_WRITE, false);
	/* the header and about half the payload; never the rest */
	b->len = at + (b->len - at) / 2;
	return 0;
}

/*
 * ---- kiwi as the requester (OUT_REQ) ----
 *
 * The victim has posted REQ_SENDS Sends and REQ_READS Reads; we have taken
 * in the Sends and the Read Requests (r->rreq).  Terminates from us, well
 * and badly formed, and Read Responses that break off or break the rules:
 * the victim's WRs must all complete, no Read successfully.
 */

/* one FPDU around a ULPDU given byte by byte (no Markers) */
static void put_raw(struct run *r, struct buf *b, const u8 *ulpdu, u32 len)
{
	u32 start = b->len, pad = (4 - ((KIWI_MPA_LEN_SIZE + len) & 3)) & 3;
	u8 l[2] = { len >> 8, len & 0xff }, z[4] = { 0 }, c[4];
	u32 crc;

	buf_put(b, l, 2);
	buf_put(b, ulpdu, len);
	buf_put(b, z, pad);
	crc = r->res.crc ? ~crc32c(~0U, b->p + start, b->len - start) : 0;
	c[0] = crc & 0xff;
	c[1] = (crc >> 8) & 0xff;
	c[2] = (crc >> 16) & 0xff;
	c[3] = crc >> 24;
	buf_put(b, c, 4);
}

static void be32_at(u8 *p, u32 x)
{
	p[0] = x >> 24;
	p[1] = x >> 16;
	p[2] = x >> 8;
	p[3] = x;
}

/* a Terminate's ULPDU by hand: header, control word, body; its length */
static u32 term_raw(u8 *p, bool last, u32 msn, u32 word, const u8 *body,
		    u32 blen)
{
	memset(p, 0, KIWI_HDR_TERM);
	p[0] = (last ? 0x40 : 0) | 0x01;	/* L, DDP version 1 */
	p[1] = 0x40 | KIWI_RDMAP_TERMINATE;	/* RDMAP version 1 */
	be32_at(p + 6, KIWI_QN_TERM);
	be32_at(p + 10, msn);
	be32_at(p + 18, word);
	memcpy(p + KIWI_HDR_TERM, body, blen);
	return KIWI_HDR_TERM + blen;
}

static u32 term_word(u8 layer, u8 etype, u8 ecode, u32 flags)
{
	return (u32)layer << KIWI_TERM_LAYER_SHIFT |
	       (u32)etype << KIWI_TERM_ETYPE_SHIFT |
	       (u32)ecode << KIWI_TERM_ECODE_SHIFT | flags;
}

/* a valid Terminate of ours: Remote Operation Error, stream */
static int rq_term(struct run *r, struct buf *b)
{
	struct kiwi_hdr h;

	kiwi_term_build(&h, KIWI_ERR_RDMAP_STREAM, NULL, 0, 1);
	put_fpdu(r, b, &h, NULL, 0, false);
	return 0;
}

/* nothing at all: the scenario is how the stream ends (cut) */
static int rq_nothing(struct run *r, struct buf *b)
{
	(void)r;
	(void)b;
	return 0;
}

/* access violation: kiwi blames its oldest outstanding WR */
static int rq_term_access(struct run *r, struct buf *b)
{
	struct kiwi_hdr h;

	kiwi_term_build(&h, KIWI_ERR_RDMAP_ACCESS, NULL, 0, 1);
	put_fpdu(r, b, &h, NULL, 0, false);
	return 0;
}

/* undefined layer, type and code; M, D and R set, nothing copied */
static int rq_term_bad_code(struct run *r, struct buf *b)
{
	u8 u[KIWI_TERM_ULPDU_MAX];
	u32 n = term_raw(u, true, 1, term_word(0xf, 0xf, 0xff, KIWI_TERM_M |
					       KIWI_TERM_D | KIWI_TERM_R),
			 NULL, 0);

	put_raw(r, b, u, n);
	return 0;
}

/* M, D and R set, the copied DDP header cut after 7 of its 14 bytes */
static int rq_term_cut_hdrs(struct run *r, struct buf *b)
{
	static const u8 body[9] = { 0x00, 0x40, 0xc1, 0x41, 0x00, 0xad,
				    0xbe, 0xef, 0x00 };
	u8 u[KIWI_TERM_ULPDU_MAX];
	u32 n = term_raw(u, true, 1, term_word(0, 1, 2, KIWI_TERM_M |
					       KIWI_TERM_D | KIWI_TERM_R),
			 body, sizeof(body));

	put_raw(r, b, u, n);
	return 0;
}

/* a Terminate ULPDU of 20 bytes: shorter than its own header */
static int rq_term_short(struct run *r, struct buf *b)
{
	u8 u[KIWI_TERM_ULPDU_MAX];

	term_raw(u, true, 1, term_word(0, 2, 7, 0), NULL, 0);
	put_raw(r, b, u, KIWI_HDR_TERM - 2);
	return 0;
}

/* one byte more than the largest Terminate (all headers copied) */
static int rq_term_long(struct run *r, struct buf *b)
{
	u8 u[KIWI_TERM_ULPDU_MAX + 1], body[KIWI_TERM_ULPDU_MAX];
	u32 n;

	memset(body, 0x5a, sizeof(body));
	n = term_raw(u, true, 1, term_word(0, 1, 2, KIWI_TERM_M |
					   KIWI_TERM_D | KIWI_TERM_R),
		     body, KIWI_TERM_ULPDU_MAX + 1 - KIWI_HDR_TERM);
	put_raw(r, b, u, n);
	return 0;
}

/* a Terminate without L: DDP allows it no second segment */
static int rq_term_not_last(struct run *r, struct buf *b)
{
	u8 u[KIWI_TERM_ULPDU_MAX];
	u32 n = term_raw(u, false, 1, term_word(0, 2, 7, 0), NULL, 0);

	put_raw(r, b, u, n);
	return 0;
}

/* the Terminate queue's first message with MSN 5 */
static int rq_term_bad_msn(struct run *r, struct buf *b)
{
	struct kiwi_hdr h;

	kiwi_term_build(&h, KIWI_ERR_RDMAP_STREAM, NULL, 0, 5);
	put_fpdu(r, b, &h, NULL, 0, false);
	return 0;
}

/* three Terminates back to back */
static int rq_term_repeat(struct run *r, struct buf *b)
{
	struct kiwi_hdr h;
	u32 i;

	for (i = 1; i <= 3; i++) {
		kiwi_term_build(&h, KIWI_ERR_RDMAP_STREAM, NULL, 0, i);
		put_fpdu(r, b, &h, NULL, 0, false);
	}
	return 0;
}

static u8 rresp_data[REQ_READ_MAX + 4];

/* a Read Response to kiwi's first Read Request; len bytes of payload */
static int rresp(struct run *r, struct buf *b, u32 stag_xor, u32 len)
{
	const struct kiwi_hdr *rq = &r->rreq[0];
	struct kiwi_hdr h;

	if (!r->nrreq || len > sizeof(rresp_data))
		return -1;
	kiwi_hdr_init(&h, KIWI_RDMAP_READ_RESP);
	h.stag = rq->sink_stag ^ stag_xor;
	h.to = rq->sink_to;
	put_fpdu(r, b, &h, rresp_data, len, true);
	return 0;
}

/* the first Read's Response cut in the middle of its payload */
static int rq_rresp_cut(struct run *r, struct buf *b)
{
	if (rresp(r, b, 0, r->rreq[0].read_size))
		return -1;
	b->len -= r->rreq[0].read_size / 2;
	return 0;
}

static int rq_rresp_bad_stag(struct run *r, struct buf *b)
{
	return rresp(r, b, 0x100, r->rreq[0].read_size);
}

static int rq_rresp_long(struct run *r, struct buf *b)
{
	return rresp(r, b, 0, r->rreq[0].read_size + 4);
}

static int rq_rresp_bad_crc(struct run *r, struct buf *b)
{
	if (rresp(r, b, 0, r->rreq[0].read_size))
		return -1;
	b->p[b->len - 1] ^= 0x80;
	return 0;
}

#define MPA(n, w, o, e, fn) { .name = n, .what = w, .phase = PH_MPA, \
	.out = o, .err = e, .recvs = -1, .mpa = fn }
#define FP(n, w, e, fn) { .name = n, .what = w, .phase = PH_FPDU, \
	.out = OUT_TERM, .err = e, .recvs = -1, .fpdu = fn }
#define RQ(n, w, e, c, fn) { .name = n, .what = w, .phase = PH_FPDU, \
	.out = OUT_REQ, .err = e, .recvs = -1, .no_markers = true, \
	.cut = c, .fpdu = fn }

static const struct scen scens[] = {
	MPA("mpa-bad-key", "MPA Request with a wrong key", OUT_CLOSE,
	    KIWI_ERR_MPA_KEY, mpa_bad_key),
	MPA("mpa-pd-oversize", "MPA Request with 600 bytes of private data",
	    OUT_CLOSE, KIWI_ERR_MPA_PDLEN, mpa_pd_oversize),
	MPA("mpa-rev3", "MPA Request of revision 3", OUT_REJECT,
	    KIWI_ERR_MPA_REVISION, mpa_rev3),
	{ .name = "mpa-no-crc", .what = "MPA Request without CRC",
	  .phase = PH_MPA, .out = OUT_REJECT, .err = KIWI_ERR_MPA_NOCRC,
	  .recvs = -1, .kiwi_crc_required = true, .mpa = mpa_nocrc },
	/* before control, which then writes into the same MR */
	FP("send-inv-user-mr", "Send with Invalidate naming an ibv_reg_mr() MR",
	   KIWI_ERR_RDMAP_INVALIDATE, sc_send_inv),
	{ .name = "control", .what = "valid Write, Read Request and Sends",
	  .phase = PH_FPDU, .out = OUT_OK, .recvs = -1, .nfpdu = 4,
	  .fpdu = sc_control },
	{ .name = "read-at-ird", .what = "IRD Read Requests back to back",
	  .phase = PH_FPDU, .out = OUT_OK, .recvs = -1,
	  .nfpdu = 4 /* the model victim's IRD */, .fpdu = sc_read_at_ird },
	{ .name = "bad-crc", .what = "Send FPDU with a bad CRC",
	  .phase = PH_FPDU, .out = OUT_TERM, .err = KIWI_ERR_MPA_CRC,
	  .crc = 1, .recvs = -1, .fpdu = sc_bad_crc },
	{ .name = "bad-marker", .what = "Send whose Marker at octet 512 points wrong",
	  .phase = PH_FPDU, .out = OUT_TERM, .err = KIWI_ERR_MPA_MARKER,
	  .kiwi_markers = true, .recvs = -1, .fpdu = sc_bad_marker },
	/* with Markers no FPDU of 0xffff octets can be framed */
	{ .name = "ulpdu-max", .what = "Send with ULPDU Length 0xffff",
	  .phase = PH_FPDU, .out = OUT_TERM, .err = KIWI_ERR_DDP_U_TOOLONG,
	  .no_markers = true, .recvs = -1, .fpdu = sc_ulpdu_max },
	{ .name = "peer-terminate", .what = "a Terminate from us",
	  .phase = PH_FPDU, .out = OUT_SILENT, .recvs = -1, .nfpdu = 1,
	  .fpdu = sc_peer_term },
	FP("unknown-opcode", "untagged FPDU with RDMAP opcode 9",
	   KIWI_ERR_RDMAP_OPCODE, sc_opcode),
	FP("ddp-version", "Send with DDP version 2", KIWI_ERR_DDP_U_VERSION,
	   sc_ddp_version),
	FP("ddp-version-tagged", "Write with DDP version 0",
	   KIWI_ERR_DDP_T_VERSION, sc_ddp_version_t),
	FP("rdmap-version", "Send with RDMAP version 0",
	   KIWI_ERR_RDMAP_VERSION, sc_rdmap_version),
	FP("write-bad-stag", "Write to an STag no MR has",
	   KIWI_ERR_DDP_T_STAG, sc_write_stag),
	FP("write-bad-key", "Write to the MR's STag with another key",
	   KIWI_ERR_DDP_T_STAG, sc_write_key),
	FP("write-bounds", "Write crossing the MR's end",
	   KIWI_ERR_DDP_T_BOUNDS, sc_write_bounds),
	FP("write-readonly", "Write to a read-only MR", KIWI_ERR_RDMAP_ACCESS,
	   sc_write_ro),
	FP("read-bad-stag", "Read Request from an STag no MR has",
	   KIWI_ERR_RDMAP_STAG, sc_read_stag),
	FP("read-bounds", "Read Request crossing the RO MR's end",
	   KIWI_ERR_RDMAP_BOUNDS, sc_read_bounds),
	{ .name = "read-beyond-ird", .what = "IRD + 1 outstanding Read Requests",
	  .phase = PH_FPDU, .out = OUT_TERM, .err = KIWI_ERR_RDMAP_STREAM,
	  .recvs = -1, .small_rcvbuf = true, .fpdu = sc_read_ird },
	FP("send-bad-qn", "Send on queue 3", KIWI_ERR_DDP_U_QN, sc_send_qn),
	FP("send-bad-msn", "first Send with MSN 2", KIWI_ERR_DDP_U_MSN_RANGE,
	   sc_send_msn),
	{ .name = "send-no-recv", .what = "Send with no receive posted",
	  .phase = PH_FPDU, .out = OUT_TERM, .err = KIWI_ERR_DDP_U_MSN_NOBUF,
	  .recvs = 0, .fpdu = sc_send_norecv },
	FP("send-too-long", "Send one byte longer than the posted receive",
	   KIWI_ERR_DDP_U_TOOLONG, sc_send_long),
	/* kiwi as the requester, with Sends and Reads outstanding */
	RQ("req-term", "a Terminate from us", KIWI_OK, CUT_NONE, rq_term),
	RQ("req-term-access", "a Terminate for an access violation", KIWI_OK,
	   CUT_NONE, rq_term_access),
	RQ("req-term-bad-code", "a Terminate of layer 15, type 15, code 0xff, M D R and no headers",
	   KIWI_OK, CUT_NONE, rq_term_bad_code),
	RQ("req-term-cut-hdrs", "a Terminate whose copied DDP header stops after 7 bytes",
	   KIWI_OK, CUT_NONE, rq_term_cut_hdrs),
	RQ("req-term-short", "a Terminate of 20 bytes, shorter than its header",
	   KIWI_ERR_RDMAP_UNSPEC, CUT_NONE, rq_term_short),
	RQ("req-term-long", "a Terminate one byte longer than any can be",
	   KIWI_ERR_DDP_U_TOOLONG, CUT_NONE, rq_term_long),
	RQ("req-term-not-last", "a Terminate without L",
	   KIWI_ERR_DDP_U_TOOLONG, CUT_NONE, rq_term_not_last),
	RQ("req-term-bad-msn", "a Terminate with MSN 5",
	   KIWI_ERR_DDP_U_MSN_RANGE, CUT_NONE, rq_term_bad_msn),
	RQ("req-term-repeat", "three Terminates back to back", KIWI_OK,
	   CUT_NONE, rq_term_repeat),
	{ .name = "req-term-before-rtr",
	  .what = "a Terminate instead of the RTR, the victim's WRs held",
	  .phase = PH_FPDU, .out = OUT_REQ, .err = KIWI_ERR_MPA_RTR,
	  .recvs = -1, .no_markers = true, .before_rtr = true,
	  .fpdu = rq_term },
	/*
	 * The responder has accepted and waits for our RTR when our FIN comes
	 * instead: kiwi must flush the victim's WRs and close.  (Also run
	 * against siw by 40-adversary's KIWI_SIW_RTR_BUG probe.)
	 */
	{ .name = "req-fin-before-rtr",
	  .what = "a FIN instead of the RTR, the victim's WRs held",
	  .phase = PH_FPDU, .out = OUT_REQ, .err = KIWI_OK, .cut = CUT_FIN,
	  .recvs = -1, .no_markers = true, .before_rtr = true,
	  .fpdu = rq_nothing },
	RQ("req-rresp-cut-rst", "half a Read Response, then a reset", KIWI_OK,
	   CUT_RST, rq_rresp_cut),
	RQ("req-rresp-cut-fin", "half a Read Response, then a FIN", KIWI_OK,
	   CUT_FIN, rq_rresp_cut),
	RQ("req-rresp-bad-stag", "a Read Response to another sink STag",
	   KIWI_ERR_DDP_T_STAG, CUT_NONE, rq_rresp_bad_stag),
	RQ("req-rresp-long", "a Read Response 4 bytes longer than asked for",
	   KIWI_ERR_DDP_T_BOUNDS, CUT_NONE, rq_rresp_long),
	{ .name = "req-rresp-bad-crc", .what = "a Read Response with a bad CRC",
	  .phase = PH_FPDU, .out = OUT_REQ, .err = KIWI_ERR_MPA_CRC, .crc = 1,
	  .recvs = -1, .no_markers = true, .fpdu = rq_rresp_bad_crc },
	/* only when named in --only: it takes the victim's MRs away */
	{ .name = "dereg-held",
	  .what = "Read Requests behind a closed window, a Send's first FPDU, half a Write",
	  .phase = PH_FPDU, .out = OUT_HOLD, .recvs = -1, .small_rcvbuf = true,
	  .nfpdu = 5 /* the model victim's IRD + the Send's first FPDU */,
	  .fpdu = sc_dereg_held },
	/* only when named in --only: it needs the victim's MRs invalidated */
	{ .name = "inval-held",
	  .what = "Read Responses and half a Write in flight when the victim invalidates its MRs",
	  .phase = PH_FPDU, .out = OUT_DRAIN, .recvs = -1, .small_rcvbuf = true,
	  .nfpdu = 5 /* the model victim's IRD + the Write */,
	  .fpdu = sc_inval_held },
};

#define NSCEN (sizeof(scens) / sizeof(scens[0]))

static const char *const outcome_name[] = {
	[OUT_CLOSE] = "close", [OUT_REJECT] = "reject", [OUT_TERM] = "term",
	[OUT_OK] = "ok", [OUT_SILENT] = "silent", [OUT_HOLD] = "hold",
	[OUT_REQ] = "req",
	[OUT_DRAIN] = "drain",
};

static bool scen_applies(const struct scen *s, bool crc, u8 kiwi_crc,
			 bool kiwi_markers)
{
	if (s->crc > 0 && !crc)
		return false;
	if (s->crc < 0 && crc)
		return false;
	if (s->kiwi_crc_required && kiwi_crc != KIWI_MPA_CRC_REQUIRED)
		return false;
	if (s->kiwi_markers && !kiwi_markers)
		return false;
	if (s->no_markers && kiwi_markers)
		return false;
	/* kiwi refuses every Request without C when it requires CRC */
	if (kiwi_crc == KIWI_MPA_CRC_REQUIRED && !crc)
		return false;
	return true;
}

static void run_init(struct run *r, const struct opts *o, const struct scen *s)
{
	int n;

	memset(r, 0, sizeof(*r));
	r->o = o;
	r->s = s;
	my_cfg(r, o->crc);
	kiwi_cfg(r);
	r->sink_stag = 0x00c0ffee;
	r->sink_to = 0x1000;
	n = snprintf(r->pd, sizeof(r->pd), "%s/%s", o->tag, s->name);
	if (s->recvs >= 0)
		n += snprintf(r->pd + n, sizeof(r->pd) - n, " recvs=%d",
			      s->recvs);
	if (s->out == OUT_REQ)
		n += snprintf(r->pd + n, sizeof(r->pd) - n,
			      " sends=%d reads=%d", REQ_SENDS, REQ_READS);
	r->pd_len = n;
}

static void run_free(struct run *r)
{
	buf_free(&r->exp);
	buf_free(&r->exp_rresp);
}

/* the FPDU stream after the MPA exchange: RTR, then the scenario's */
static int build_fpdus(struct run *r, struct buf *b)
{
	struct kiwi_tx_cfg tc = { .crc = r->res.crc,
				  .markers = r->res.markers_tx };
	struct kiwi_hdr h;

	kiwi_tx_init(&r->tx, &tc);
	if (r->res.p2p) {
		if (kiwi_mpa_rtr_hdr(&r->res, &h))
			return -1;
		put_fpdu(r, b, &h, NULL, 0, false);
	}
	return r->s->fpdu(r, b);
}

/*
 * The Terminate kiwi must send for the scenario's error, starting at
 * octet pos of kiwi's FPDU stream (where its Markers fall, if any).
 */
static void build_term(const struct run *r, u32 pos, struct buf *out)
{
	struct kiwi_tx_cfg tc = { .crc = r->res.crc,
				  .markers = r->res.markers_rx, .pos = pos };
	struct kiwi_tx t;
	struct kiwi_hdr h;
	int n;

	kiwi_term_build(&h, r->s->err, r->bad, r->bad_len, 1);
	kiwi_tx_init(&t, &tc);
	out->len = 0;
	buf_reserve(out, KIWI_WIRE_HDR_MAX + 32);
	n = kiwi_fpdu_build(&t, &h, NULL, 0, out->p, out->cap);
	if (n < 0) {
		fprintf(stderr, "Terminate build: %d\n", n);
		exit(2);
	}
	out->len = n;
}

static void expect_term(struct run *r)
{
	build_term(r, 0, &r->exp);
}

/*
 * What kiwi's CM must answer an MPA Request, decided by the core with
 * kiwi's policy: nothing (close), a Reply with R, or the accepting Reply
 * with the victim's private data.  Returns the error found.
 */
static enum kiwi_err mpa_model(struct run *r, const struct buf *req,
			       struct buf *reply)
{
	static struct kiwi_mpa_parser p;
	struct kiwi_mpa_result res;
	enum kiwi_err err;
	u32 used;
	int rv, n;

	reply->len = 0;
	kiwi_mpa_parser_init(&p, false);
	rv = kiwi_mpa_parse(&p, req->p, req->len, &used);
	if (rv < 0)
		return p.err;
	if (rv == 0)
		return KIWI_ERR_MPA_REQREP;
	err = kiwi_mpa_accept(&r->kiwi, &p.f, &res);
	buf_reserve(reply, sizeof(struct kiwi_mpa_rr) + KIWI_MPA_PD_MAX);
	if (err)
		n = kiwi_mpa_rep_build(&res, true, NULL, 0, reply->p,
				       reply->cap);
	else
		n = kiwi_mpa_rep_build(&res, false, KIWI_ADV_VICTIM_PD,
				       strlen(KIWI_ADV_VICTIM_PD), reply->p,
				       reply->cap);
	if (n < 0) {
		fprintf(stderr, "kiwi_mpa_rep_build: %d\n", n);
		exit(2);
	}
	reply->len = n;
	return err;
}

static const char *term_desc(enum kiwi_err err, char *s, size_t n)
{
	const struct kiwi_err_desc *d = kiwi_err_desc(err);

	snprintf(s, n, "Terminate %u/%u/0x%02x (%s)%s", d->layer, d->etype,
		 d->ecode, d->name,
		 d->hdrs == KIWI_TERM_HDR_NONE ? "" :
		 d->hdrs == KIWI_TERM_HDR_DDP ? " with M, D and the DDP header" :
		 " with M, D, the DDP header (R and the RDMAP header for a Read Request)");
	return s;
}

/* ---- checking what kiwi sent ---- */

static void term_explain(const char *who, const u8 *p, u32 len,
			 const struct run *r, u32 pos)
{
	struct kiwi_rx_cfg rc = { .crc = r->res.crc,
				  .markers = r->res.markers_rx, .pos = pos };
	struct kiwi_rx rx;
	struct kiwi_rx_event ev;
	u32 off = 0;

	kiwi_rx_init(&rx, &rc);
	while (off < len) {
		off += kiwi_rx_feed(&rx, p + off, len - off, &ev);
		if (ev.type == KIWI_RX_ERROR) {
			diag("%s: the core rejects it: %s", who,
			     kiwi_err_desc(ev.err)->name);
			return;
		}
		if (ev.type == KIWI_RX_HDR) {
			const struct kiwi_term_info *t = &ev.hdr->term;

			if (ev.hdr->opcode != KIWI_RDMAP_TERMINATE) {
				diag("%s: opcode %u, not a Terminate", who,
				     ev.hdr->opcode);
				return;
			}
			diag("%s: Terminate layer %u type %u code 0x%02x M=%d D=%d R=%d seg_len %u qn %u msn %u",
			     who, t->layer, t->etype, t->ecode, t->m, t->d,
			     t->r, t->seg_len, ev.hdr->qn, ev.hdr->msn);
			return;
		}
	}
}

/*
 * Check the bytes kiwi sent after its MPA Reply: any Read Responses the
 * scenario allows (each a valid FPDU carrying the RO MR's bytes), then
 * exactly the expected Terminate, or (control) exactly the expected Read
 * Response.  Returns 0 when they match; explains itself otherwise.
 */
static int check_stream(const struct run *r, const u8 *p, u32 len,
			bool verbose, u32 *nresp_out)
{
	struct kiwi_rx_cfg rc = { .crc = r->res.crc,
				  .markers = r->res.markers_rx };
	struct kiwi_rx rx;
	struct kiwi_rx_event ev;
	struct buf e = { 0 };
	u32 off = 0, start = 0, nresp = 0;
	bool in_resp = false, found = false;
	u64 to = 0;
	u32 i;

	if (r->s->out == OUT_OK || r->s->out == OUT_SILENT) {
		if (len == r->exp_rresp.len &&
		    !memcmp(p, r->exp_rresp.p, len))
			return 0;
		if (verbose) {
			hexdump("expected (Read Response)", r->exp_rresp.p,
				r->exp_rresp.len, 0);
			hexdump("received", p, len, 0);
			term_explain("received", p, len, r, 0);
		}
		return -1;
	}

	kiwi_rx_init(&rx, &rc);
	while (off < len && !found) {
		u32 used = kiwi_rx_feed(&rx, p + off, len - off, &ev);

		switch (ev.type) {
		case KIWI_RX_HDR:
			if (ev.hdr->opcode == KIWI_RDMAP_READ_RESP &&
			    r->rresp_ok && ev.hdr->stag == r->sink_stag) {
				in_resp = true;
				to = ev.hdr->to;
				break;
			}
			found = true;
			break;
		case KIWI_RX_DATA:
			kiwi_rx_crc_data(&rx, p + off + ev.off, ev.len);
			for (i = 0; in_resp && i < ev.len; i++) {
				u64 at = r->src_off + (to - r->sink_to) + i;

				if (p[off + ev.off + i] != kiwi_adv_pattern(at)) {
					if (verbose)
						diag("Read Response byte at source offset %llu is 0x%02x, not 0x%02x",
						     (unsigned long long)at,
						     p[off + ev.off + i],
						     kiwi_adv_pattern(at));
					return -1;
				}
			}
			to += ev.len;
			break;
		case KIWI_RX_DONE:
			if (in_resp)
				nresp++;
			in_resp = false;
			start = rx.pos;
			break;
		case KIWI_RX_ERROR:
			/* compare from the FPDU the core cannot accept */
			found = true;
			break;
		case KIWI_RX_MORE:
			break;
		}
		off += used;
	}
	if (nresp_out)
		*nresp_out = nresp;
	/* start: where the last whole FPDU ended, the Terminate's place */
	build_term(r, start, &e);
	if (len - start == e.len && !memcmp(p + start, e.p, len - start)) {
		buf_free(&e);
		return 0;
	}
	if (verbose) {
		u32 d = 0;

		while (d < e.len && start + d < len && p[start + d] == e.p[d])
			d++;
		diag("first difference at byte %u of the Terminate (stream offset %u)",
		     d, start + d);
		hexdump("expected", e.p, e.len, 0);
		hexdump("received", p + start, len - start, 0);
		term_explain("expected", e.p, e.len, r, start);
		if (len > start)
			term_explain("received", p + start, len - start, r,
				     start);
	}
	buf_free(&e);
	return -1;
}

/* ---- the socket ---- */

enum end { END_EOF, END_RST, END_TIMEOUT, END_ERROR, END_FULL };

static const char *end_name(enum end e)
{
	static const char *const n[] = { "EOF", "RST", "timeout", "error",
					 "too much data" };

	return n[e];
}

#define READ_CAP	(200U << 20)

/* read until EOF/RST, the deadline, or (stop_at) that many bytes */
static enum end read_all(int fd, struct buf *b, long long deadline,
			 u32 stop_at)
{
	for (;;) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		long long left = deadline - now_ms();
		ssize_t n;

		if (stop_at && b->len >= stop_at)
			return END_TIMEOUT;
		if (left <= 0)
			return END_TIMEOUT;
		if (poll(&pfd, 1, left > 1000 ? 1000 : left) < 0) {
			if (errno == EINTR)
				continue;
			return END_ERROR;
		}
		if (!pfd.revents)
			continue;
		if (b->len >= READ_CAP)
			return END_FULL;
		buf_reserve(b, 1 << 16);
		n = recv(fd, b->p + b->len, 1 << 16, 0);
		if (n == 0)
			return END_EOF;
		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			return errno == ECONNRESET ? END_RST : END_ERROR;
		}
		b->len += n;
	}
}

/* send everything; a peer that closes early is not an error here */
static int send_all(int fd, const u8 *p, u32 len, long long deadline);

static u32 chunk;	/* --chunk N: send in N-byte TCP segments */

/* with --chunk, pieces a few milliseconds apart: one TCP segment each */
static int send_some(int fd, const u8 *p, u32 len, long long deadline)
{
	u32 off = 0;
	int rv;

	if (!chunk)
		return send_all(fd, p, len, deadline);
	while (off < len) {
		u32 n = len - off < chunk ? len - off : chunk;

		rv = send_all(fd, p + off, n, deadline);
		if (rv)
			return rv;
		off += n;
		usleep(500);
	}
	return 0;
}

static int send_all(int fd, const u8 *p, u32 len, long long deadline)
{
	u32 off = 0;

	while (off < len) {
		struct pollfd pfd = { .fd = fd, .events = POLLOUT };
		ssize_t n;

		if (now_ms() >= deadline)
			return -ETIMEDOUT;
		if (poll(&pfd, 1, 200) <= 0)
			continue;
		n = send(fd, p + off, len - off, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			return -errno;
		}
		off += n;
	}
	return 0;
}

static int dial(const struct opts *o, bool small_rcvbuf)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_port = htons(o->port) };
	int fd, one = 1, small = 4096;

	if (inet_pton(AF_INET, o->addr, &sa.sin_addr) != 1)
		return -EINVAL;
	fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0)
		return -errno;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	/* before connect, so the window scale stays small too */
	if (small_rcvbuf)
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		int e = -errno;

		close(fd);
		return e;
	}
	return fd;
}

/* ---- one scenario against kiwi ---- */

static void live_mpa(struct run *r, int fd, const char *label)
{
	struct buf req = { 0 }, got = { 0 };
	long long deadline = now_ms() + r->o->timeout_ms;
	enum kiwi_err err;
	enum end e;
	char what[160];
	int rv;

	r->s->mpa(r, &req);
	err = mpa_model(r, &req, &r->exp);
	if (err != r->s->err)
		diag("the core finds %s in this Request, not %s",
		     kiwi_err_desc(err)->name, kiwi_err_desc(r->s->err)->name);
	if (r->s->out == OUT_CLOSE)
		r->exp.len = 0;
	rv = send_some(fd, req.p, req.len, deadline);
	if (rv)
		diag("sending the Request: %s", strerror(-rv));
	e = read_all(fd, &got, deadline, 0);
	if (r->s->out == OUT_CLOSE)
		snprintf(what, sizeof(what), "no reply (%s)",
			 kiwi_err_desc(r->s->err)->name);
	else
		snprintf(what, sizeof(what), "an MPA Reply with R (%s)",
			 kiwi_err_desc(r->s->err)->name);
	if (got.len == r->exp.len && !memcmp(got.p, r->exp.p, got.len)) {
		tap_ok(1, "%s: %s: kiwi sends %s, byte for byte", label,
		    r->s->what, what);
	} else {
		tap_ok(0, "%s: %s: kiwi sends %s, byte for byte", label,
		    r->s->what, what);
		hexdump("expected", r->exp.p, r->exp.len, 0);
		hexdump("received", got.p, got.len, 0);
	}
	tap_ok(e == END_EOF || e == END_RST,
	    "%s: then the connection is closed (%s)", label, end_name(e));
	buf_free(&req);
	buf_free(&got);
}

static volatile sig_atomic_t released;

static void on_release(int sig)
{
	(void)sig;
	released = 1;
}

/*
 * OUT_HOLD, everything sent: once kiwi has had time to take it in, it
 * must have started its Read Responses (they wait, unread, in our small
 * receive buffer) and kept the connection open.  Say "holding", then
 * hold without reading until SIGTERM or SIGINT (the case's signal to let
 * go), for at most 6 x --timeout; closing with unread data resets the
 * connection.
 */
static void live_hold(struct run *r, int fd, const char *label)
{
	struct sigaction sa = { .sa_handler = on_release };
	struct pollfd pfd = { .fd = fd, .events = POLLRDHUP };
	long long until;
	int unread = 0;

	/*
	 * Kept to the end, as in live_drain(): timeout(1) passes the case's
	 * SIGTERM on to us and then to its process group, and on a loaded
	 * host the second copy comes after we went on (status 143, seen in
	 * the dereg pass).
	 */
	released = 0;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	usleep(1000 * 1000);
	if (ioctl(fd, FIONREAD, &unread))
		unread = -1;
	if (poll(&pfd, 1, 0) < 0)
		pfd.revents = POLLERR;
	tap_ok(unread > 0 && !pfd.revents,
	    "%s: %s: kiwi started its Read Responses (%d bytes unread here) and keeps the connection open",
	    label, r->s->what, unread);
	diag("holding the connection");
	until = now_ms() + 6LL * r->o->timeout_ms;
	while (!released && now_ms() < until)
		usleep(50 * 1000);
	tap_ok(released, "%s: held the connection until told to let go", label);
}

/*
 * What kiwi sent after an invalidation: Read Response FPDUs carrying the
 * RO MR's bytes in order, then at most a Terminate, then nothing; the
 * stream may stop inside an FPDU (a reset).  Returns the Read Response
 * payload bytes, or -1 if anything else came.
 */
static long long drain_check(const struct run *r, const u8 *p, u32 len)
{
	struct kiwi_rx_cfg rc = { .crc = r->res.crc,
				  .markers = r->res.markers_rx };
	struct kiwi_rx rx;
	struct kiwi_rx_event ev;
	long long got = 0;
	bool in_resp = false, term = false;
	u64 to = 0;
	u32 off = 0, i;

	kiwi_rx_init(&rx, &rc);
	while (off < len) {
		u32 used = kiwi_rx_feed(&rx, p + off, len - off, &ev);

		switch (ev.type) {
		case KIWI_RX_HDR:
			if (term) {
				diag("an FPDU after kiwi's Terminate");
				return -1;
			}
			if (ev.hdr->opcode == KIWI_RDMAP_TERMINATE) {
				const struct kiwi_term_info *t = &ev.hdr->term;

				diag("then kiwi's Terminate layer %u type %u code 0x%02x",
				     t->layer, t->etype, t->ecode);
				term = true;
				break;
			}
			if (ev.hdr->opcode != KIWI_RDMAP_READ_RESP ||
			    ev.hdr->stag != r->sink_stag) {
				diag("an FPDU with opcode %u", ev.hdr->opcode);
				return -1;
			}
			in_resp = true;
			to = ev.hdr->to;
			break;
		case KIWI_RX_DATA:
			kiwi_rx_crc_data(&rx, p + off + ev.off, ev.len);
			for (i = 0; in_resp && i < ev.len; i++) {
				/* the Requests all read from offset 0 */
				u64 at = to - r->sink_to + i;

				if (p[off + ev.off + i] != kiwi_adv_pattern(at)) {
					diag("Read Response byte at source offset %llu is 0x%02x, not 0x%02x",
					     (unsigned long long)at,
					     p[off + ev.off + i],
					     kiwi_adv_pattern(at));
					return -1;
				}
			}
			if (in_resp)
				got += ev.len;
			to += ev.len;
			break;
		case KIWI_RX_DONE:
			in_resp = false;
			break;
		case KIWI_RX_ERROR:
			diag("an FPDU the core refuses: %s",
			     kiwi_err_desc(ev.err)->name);
			return -1;
		case KIWI_RX_MORE:
			break;
		}
		off += used;
	}
	return got;
}

/*
 * OUT_DRAIN, the first hold_at bytes sent: hold as live_hold() does
 * until SIGTERM or SIGINT (the case's signal that the victim's MRs are
 * invalidated; timeout(1) passes these on), then the rest, then read
 * everything with the window open.
 */
static void live_drain(struct run *r, int fd, const char *label,
		       const u8 *rest, u32 rest_len)
{
	struct sigaction sa = { .sa_handler = on_release };
	struct buf got = { 0 };
	long long until, n;
	int unread = 0, big = 8 << 20;
	enum end e;

	/*
	 * Kept to the end: timeout(1) passes a signal on to us and to its
	 * process group, and on a loaded host the second copy may come
	 * after we went on.
	 */
	released = 0;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	usleep(1000 * 1000);
	if (ioctl(fd, FIONREAD, &unread))
		unread = -1;
	tap_ok(unread > 0, "%s: kiwi started its Read Responses (%d bytes unread here)",
	    label, unread);
	diag("holding the connection");
	until = now_ms() + 6LL * r->o->timeout_ms;
	while (!released && now_ms() < until)
		usleep(50 * 1000);
	tap_ok(released, "%s: held until the victim's MRs were invalidated",
	    label);
	if (send_all(fd, rest, rest_len, now_ms() + r->o->timeout_ms))
		diag("sending the rest of the Write failed (kiwi closed?)");
	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &big, sizeof(big));
	e = read_all(fd, &got, now_ms() + 4LL * r->o->timeout_ms, 0);
	n = drain_check(r, got.p, got.len);
	diag("%lld of the %u Read Response bytes asked came (%u bytes in all)",
	     n, r->drain_total, got.len);
	tap_ok(n >= 0 && n < r->drain_total,
	    "%s: %s: kiwi sends only the RO MR's bytes and stops its Read Responses short",
	    label, r->s->what);
	tap_ok(e == END_EOF || e == END_RST,
	    "%s: then the connection is closed (%s)", label, end_name(e));
	buf_free(&got);
}

/*
 * A valid MPA Request, and kiwi's Reply parsed by the core; what follows
 * the Reply stays in got, exp_rep is the Reply kiwi must have sent and
 * *used its length.  0, or -1 (explained) when there was no usable Reply.
 */
static int mpa_start(struct run *r, int fd, struct buf *got,
		     struct buf *exp_rep, u32 *used_out, long long deadline)
{
	static struct kiwi_mpa_parser p;
	struct buf req = { 0 };
	u32 used = 0, rest;
	enum kiwi_err err;
	enum end e;
	int rv;

	req_valid(r, &req);
	mpa_model(r, &req, exp_rep);
	rv = send_some(fd, req.p, req.len, deadline);
	/* the Reply, parsed by the core; whatever follows it is kept */
	kiwi_mpa_parser_init(&p, true);
	while (!rv) {
		u32 before = got->len;

		e = read_all(fd, got, deadline, before + 1);
		if (got->len == before) {
			rv = -1;
			diag("no MPA Reply: %s after %u bytes", end_name(e),
			     got->len);
			break;
		}
		rv = kiwi_mpa_parse(&p, got->p + used, got->len - used, &rest);
		used += rest;
		if (rv == 1) {
			rv = 0;
			break;
		}
		if (rv < 0) {
			diag("malformed MPA Reply: %s",
			     kiwi_err_desc(p.err)->name);
			break;
		}
	}
	if (!rv) {
		err = kiwi_mpa_connect(&r->my, &p.f, &r->res);
		if (err) {
			diag("MPA exchange failed: %s", kiwi_err_desc(err)->name);
			rv = -1;
		}
	}
	buf_free(&req);
	*used_out = used;
	return rv ? -1 : 0;
}

static void live_fpdu(struct run *r, int fd, const char *label)
{
	struct buf got = { 0 }, out = { 0 }, exp_rep = { 0 };
	long long deadline = now_ms() + r->o->timeout_ms;
	u32 used = 0;
	enum end e = END_ERROR;
	char what[200];
	int rv = 0;

	if (r->s->out == OUT_OK)
		snprintf(what, sizeof(what),
			 "kiwi answers with the expected Read Responses byte for byte and no Terminate");
	else if (r->s->out == OUT_SILENT)
		snprintf(what, sizeof(what),
			 "kiwi sends nothing back (no Terminate for a Terminate)");
	else
		term_desc(r->s->err, what, sizeof(what));

	rv = mpa_start(r, fd, &got, &exp_rep, &used, deadline);
	if (r->s->out == OUT_OK || r->s->out == OUT_HOLD ||
	    r->s->out == OUT_DRAIN) {
		bool same = used == exp_rep.len && !memcmp(got.p, exp_rep.p, used);

		tap_ok(!rv && same,
		    "%s: MPA Reply (rev 2, enhanced, p2p Write RTR, CRC %s, IRD/ORD %u/%u, victim's private data) byte for byte",
		    label, r->res.crc ? "on" : "off", r->kiwi.ird,
		    r->kiwi.ord);
		if (!same) {
			hexdump("expected", exp_rep.p, exp_rep.len, 0);
			hexdump("received", got.p, used, 0);
		}
	}
	if (rv) {
		hexdump("received", got.p, got.len, 0);
		tap_ok(0, "%s: %s: %s, byte for byte", label, r->s->what, what);
		tap_ok(0, "%s: then the connection is closed", label);
		goto out;
	}
	/* keep only what follows the Reply */
	memmove(got.p, got.p + used, got.len - used);
	got.len -= used;

	if (build_fpdus(r, &out)) {
		tap_ok(0, "%s: %s: cannot build the FPDUs against this victim",
		    label, r->s->what);
		goto out;
	}
	if (r->s->out == OUT_TERM)
		expect_term(r);
	if (r->s->out == OUT_DRAIN) {
		rv = send_some(fd, out.p, r->hold_at, deadline);
		if (rv)
			diag("sending: %s", strerror(-rv));
		live_drain(r, fd, label, out.p + r->hold_at,
			   out.len - r->hold_at);
		goto out;
	}
	if (r->split) {
		rv = send_some(fd, out.p, r->split, deadline);
		usleep(1000 * 1000);
		if (!rv)
			rv = send_some(fd, out.p + r->split, out.len - r->split,
				      deadline);
	} else {
		rv = send_some(fd, out.p, out.len, deadline);
	}
	if (rv)
		diag("sending: %s (after kiwi closed?)", strerror(-rv));
	if (r->s->out == OUT_HOLD) {
		live_hold(r, fd, label);
		goto out;
	}
	if (r->s->small_rcvbuf) {
		int big = 8 << 20;

		/* let kiwi take in every Request, then open the window */
		usleep(500 * 1000);
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &big, sizeof(big));
	}
	if (r->s->out == OUT_OK) {
		/* the Read Response, then our FIN, then kiwi's */
		e = read_all(fd, &got, deadline, r->exp_rresp.len);
		shutdown(fd, SHUT_WR);
		e = read_all(fd, &got, now_ms() + r->o->timeout_ms, 0);
	} else {
		/* with Read Responses backed up, draining takes longer */
		e = read_all(fd, &got, now_ms() + r->o->timeout_ms *
			     (r->s->small_rcvbuf ? 4 : 1), 0);
	}
	{
		u32 nresp = 0;
		int bad = check_stream(r, got.p, got.len, false, &nresp);

		if (nresp)
			diag("%u valid Read Response FPDUs (the RO MR's bytes) came first",
			     nresp);
		tap_ok(!bad, "%s: %s: %s%s", label, r->s->what, what,
		    r->s->out == OUT_OK ? "" : ", byte for byte");
		if (bad) {
			check_stream(r, got.p, got.len, true, NULL);
			diag("kiwi's stream ended with %s", end_name(e));
		}
	}
	tap_ok(e == END_EOF || e == END_RST,
	    "%s: then the connection is closed (%s)", label, end_name(e));
out:
	buf_free(&got);
	buf_free(&out);
	buf_free(&exp_rep);
}

/* OUT_REQ: kiwi's stream as the requester, parsed by the core */
struct kstream {
	struct kiwi_rx rx;
	struct kiwi_hdr h;	/* of the FPDU in progress */
	u32 off;		/* bytes of got parsed */
	bool after;		/* our scenario's bytes are sent */
	u32 nterm;		/* after: Terminates */
	struct kiwi_term_info term;	/* the first of them */
	u32 nother;		/* after: FPDUs of other kinds */
	enum kiwi_err err;	/* the core refused kiwi's stream */
};

static void kstream_feed(struct run *r, struct kstream *k,
			 const struct buf *got)
{
	struct kiwi_rx_event ev;

	while (k->off < got->len && !k->err) {
		u32 used = kiwi_rx_feed(&k->rx, got->p + k->off,
					got->len - k->off, &ev);

		switch (ev.type) {
		case KIWI_RX_HDR:
			k->h = *ev.hdr;
			break;
		case KIWI_RX_DATA:
			kiwi_rx_crc_data(&k->rx, got->p + k->off + ev.off,
					 ev.len);
			break;
		case KIWI_RX_DONE:
			if (k->after && k->h.opcode == KIWI_RDMAP_TERMINATE) {
				if (!k->nterm++)
					k->term = k->h.term;
			} else if (k->after) {
				k->nother++;
			} else if (k->h.opcode == KIWI_RDMAP_SEND && k->h.last) {
				r->nsend++;
			} else if (k->h.opcode == KIWI_RDMAP_READ_REQ &&
				   r->nrreq < REQ_READS) {
				r->rreq[r->nrreq++] = k->h;
			}
			break;
		case KIWI_RX_ERROR:
			k->err = ev.err;
			break;
		case KIWI_RX_MORE:
			break;
		}
		k->off += used;
	}
}

static void live_req(struct run *r, int fd, const char *label)
{
	const struct scen *s = r->s;
	const struct kiwi_err_desc *d = kiwi_err_desc(s->err);
	bool want_term = s->err != KIWI_OK && d->term, good;
	struct buf got = { 0 }, out = { 0 }, exp_rep = { 0 };
	struct kiwi_rx_cfg rc;
	struct kiwi_tx_cfg tc;
	struct kstream k;
	long long deadline = now_ms() + r->o->timeout_ms;
	u32 used = 0;
	enum end e = END_ERROR;
	char what[200];
	int rv;

	if (mpa_start(r, fd, &got, &exp_rep, &used, deadline)) {
		tap_ok(0, "%s: MPA exchange with the victim", label);
		goto out;
	}
	memmove(got.p, got.p + used, got.len - used);
	got.len -= used;
	memset(&k, 0, sizeof(k));
	rc = (struct kiwi_rx_cfg){ .crc = r->res.crc,
				   .markers = r->res.markers_rx };
	kiwi_rx_init(&k.rx, &rc);
	tc = (struct kiwi_tx_cfg){ .crc = r->res.crc,
				   .markers = r->res.markers_tx };
	kiwi_tx_init(&r->tx, &tc);
	if (s->before_rtr) {
		/* kiwi holds the victim's WRs until the RTR comes */
		read_all(fd, &got, now_ms() + 1000, 0);
		tap_ok(got.len == 0,
		    "%s: kiwi sends nothing before our RTR (%u bytes)", label,
		    got.len);
	} else {
		struct kiwi_hdr h;

		if (r->res.p2p && !kiwi_mpa_rtr_hdr(&r->res, &h)) {
			put_fpdu(r, &out, &h, NULL, 0, false);
			send_some(fd, out.p, out.len, deadline);
			out.len = 0;
		}
		while (r->nsend < REQ_SENDS || r->nrreq < REQ_READS) {
			u32 before = got.len;

			e = read_all(fd, &got, deadline, before + 1);
			kstream_feed(r, &k, &got);
			if (got.len == before || k.err)
				break;
		}
		tap_ok(r->nsend == REQ_SENDS && r->nrreq == REQ_READS && !k.err,
		    "%s: kiwi sends the victim's %d Sends and %d Read Requests (saw %u and %u%s%s)",
		    label, REQ_SENDS, REQ_READS, r->nsend, r->nrreq,
		    k.err ? ", then " : "",
		    k.err ? kiwi_err_desc(k.err)->name : "");
	}
	k.after = true;
	if (s->fpdu(r, &out)) {
		tap_ok(0, "%s: %s: cannot build it", label, s->what);
		goto out;
	}
	rv = send_some(fd, out.p, out.len, deadline);
	if (rv)
		diag("sending: %s", strerror(-rv));
	if (s->cut == CUT_RST) {
		struct linger lg = { .l_onoff = 1, .l_linger = 0 };

		/* kiwi is in the middle of the FPDU: reset (our caller closes) */
		usleep(500 * 1000);
		setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
		tap_ok(!rv, "%s: %s: sent, then we reset the connection",
		    label, s->what);
		goto out;
	}
	if (s->cut == CUT_FIN) {
		usleep(500 * 1000);
		shutdown(fd, SHUT_WR);
	}
	e = read_all(fd, &got, now_ms() + r->o->timeout_ms, 0);
	kstream_feed(r, &k, &got);
	if (s->cut == CUT_FIN) {
		/* an FPDU cut by our FIN: kiwi may say so or just close */
		good = !k.err && !k.nother && k.off == got.len;
		tap_ok(good, "%s: %s: kiwi sends nothing but, perhaps, a Terminate (%u)",
		    label, s->what, k.nterm);
	} else if (want_term) {
		good = k.nterm == 1 && !k.nother && !k.err &&
		       k.off == got.len && k.term.layer == d->layer &&
		       k.term.etype == d->etype && k.term.ecode == d->ecode;
		tap_ok(good, "%s: %s: kiwi answers %s", label, s->what,
		    term_desc(s->err, what, sizeof(what)));
	} else {
		good = !k.nterm && !k.nother && !k.err && k.off == got.len;
		tap_ok(good, "%s: %s: kiwi sends nothing back", label,
		    s->what);
	}
	if (!good)
		diag("after ours: %u Terminates (first %u/%u/0x%02x), %u other FPDUs, %u bytes unparsed%s%s",
		     k.nterm, k.term.layer, k.term.etype, k.term.ecode,
		     k.nother, got.len - k.off, k.err ? ", core error " : "",
		     k.err ? kiwi_err_desc(k.err)->name : "");
	tap_ok(e == END_EOF || e == END_RST,
	    "%s: then the connection is closed (%s)", label, end_name(e));
out:
	buf_free(&got);
	buf_free(&out);
	buf_free(&exp_rep);
}

static bool selected(const struct opts *o, const char *name)
{
	const char *s = o->only;
	size_t n = strlen(name);

	if (!s)
		return true;
	while ((s = strstr(s, name))) {
		if ((s == o->only || s[-1] == ',') &&
		    (s[n] == ',' || s[n] == 0))
			return true;
		s += n;
	}
	return false;
}

static int live(const struct opts *o)
{
	unsigned int i;

	for (i = 0; i < NSCEN; i++) {
		const struct scen *s = &scens[i];
		char label[128];
		struct run r;
		int fd;

		if (!selected(o, s->name) ||
		    !scen_applies(s, o->crc, o->kiwi_crc, o->kiwi_markers))
			continue;
		/* it takes the victim's MRs away: only when asked for */
		if ((s->out == OUT_HOLD || s->out == OUT_DRAIN) && !o->only)
			continue;
		snprintf(label, sizeof(label), "%s/%s", o->tag, s->name);
		run_init(&r, o, s);
		fd = dial(o, s->small_rcvbuf);
		if (fd < 0) {
			tap_ok(0, "%s: connect to %s:%d: %s", label, o->addr,
			    o->port, strerror(-fd));
			continue;
		}
		if (s->phase == PH_MPA)
			live_mpa(&r, fd, label);
		else if (s->out == OUT_REQ)
			live_req(&r, fd, label);
		else
			live_fpdu(&r, fd, label);
		close(fd);
		run_free(&r);
	}
	printf("1..%d\n", tap_n);
	return tap_failed ? 1 : 0;
}

/* ---- self-test: the frames against a model of kiwi's receiver ---- */

struct model {
	const struct victim *v;
	struct kiwi_mpa_result res;
	u32 recvs;
	u32 outstanding;
	bool rtr_seen;
	bool in_fpdu;		/* the stream ends inside an FPDU */
	u8 last_op;		/* opcode of the last header seen */
	struct kiwi_tx tx;	/* what the model sends: Read Responses */
	struct buf *out;
};

/* the Read Response for an accepted Read Request from the RO MR */
static void model_rresp(struct model *m, const struct kiwi_hdr *rq)
{
	struct kiwi_hdr h;
	u8 *data = malloc(rq->read_size ? rq->read_size : 1);
	u32 i, n;

	for (i = 0; i < rq->read_size; i++)
		data[i] = kiwi_adv_pattern(rq->src_to - m->v->ro_addr + i);
	kiwi_hdr_init(&h, KIWI_RDMAP_READ_RESP);
	h.stag = rq->sink_stag;
	h.to = rq->sink_to;
	n = kiwi_tx_wire_len(&m->tx, &h, rq->read_size);
	buf_reserve(m->out, n);
	m->out->len += kiwi_fpdu_build(&m->tx, &h, data, rq->read_size,
				       m->out->p + m->out->len, n);
	free(data);
}

/* what kiwi's receive path must conclude about one header (after the core) */
static enum kiwi_err model_hdr(struct model *m, const struct kiwi_hdr *h,
			       u32 payload)
{
	const struct victim *v = m->v;

	if (!m->rtr_seen) {
		m->rtr_seen = true;
		return kiwi_mpa_rtr_check(&m->res, h, payload);
	}
	switch (h->opcode) {
	case KIWI_RDMAP_WRITE:
		if (h->stag == v->stag) {
			if (h->to < v->addr || h->to + payload > v->addr + v->len)
				return KIWI_ERR_DDP_T_BOUNDS;
			return KIWI_OK;
		}
		if (h->stag == v->ro_stag)
			return KIWI_ERR_RDMAP_ACCESS;
		return KIWI_ERR_DDP_T_STAG;
	case KIWI_RDMAP_READ_REQ:
		if (h->src_stag == v->ro_stag || h->src_stag == v->stag) {
			u64 base = h->src_stag == v->ro_stag ? v->ro_addr : v->addr;
			u32 len = h->src_stag == v->ro_stag ? v->ro_len : v->len;

			if (h->src_to < base ||
			    h->src_to + h->read_size > base + len)
				return KIWI_ERR_RDMAP_BOUNDS;
		} else {
			return KIWI_ERR_RDMAP_STAG;
		}
		/* nobody drains: every Request stays outstanding */
		if (++m->outstanding > m->res.ird)
			return KIWI_ERR_RDMAP_STREAM;
		if (m->out && h->src_stag == v->ro_stag &&
		    h->read_size <= 65536)
			model_rresp(m, h);
		return KIWI_OK;
	case KIWI_RDMAP_TERMINATE:
		return KIWI_OK;	/* the stream ends; nothing to answer */
	case KIWI_RDMAP_SEND:
	case KIWI_RDMAP_SEND_INV:
		if (!m->recvs)
			return KIWI_ERR_DDP_U_MSN_NOBUF;
		if (h->mo + payload > v->recv_len)
			return KIWI_ERR_DDP_U_TOOLONG;
		/* the victim's MRs are all ibv_reg_mr() ones */
		if (h->opcode == KIWI_RDMAP_SEND_INV && h->last)
			return KIWI_ERR_RDMAP_INVALIDATE;
		if (h->last)
			m->recvs--;
		return KIWI_OK;
	}
	return KIWI_ERR_RDMAP_OPCODE;
}

/* run a stream through the core and the model; the first error or OK */
static enum kiwi_err model_stream(struct model *m, const u8 *p, u32 len,
				  u8 *bad, u32 *bad_len, u32 *nfpdu)
{
	struct kiwi_rx_cfg rc = { .crc = m->res.crc,
				  .markers = m->res.markers_rx };
	struct kiwi_rx rx;
	struct kiwi_rx_event ev;
	enum kiwi_err err;
	u32 off = 0;
	const u8 *raw;

	*nfpdu = 0;
	kiwi_rx_init(&rx, &rc);
	while (off < len) {
		u32 used = kiwi_rx_feed(&rx, p + off, len - off, &ev);

		switch (ev.type) {
		case KIWI_RX_HDR:
			m->in_fpdu = true;
			m->last_op = ev.hdr->opcode;
			raw = kiwi_rx_raw_hdr(&rx, bad_len);
			memcpy(bad, raw, *bad_len);
			err = model_hdr(m, ev.hdr, ev.payload_len);
			if (err)
				return err;
			break;
		case KIWI_RX_DATA:
			kiwi_rx_crc_data(&rx, p + off + ev.off, ev.len);
			break;
		case KIWI_RX_DONE:
			m->in_fpdu = false;
			(*nfpdu)++;
			break;
		case KIWI_RX_ERROR:
			raw = kiwi_rx_raw_hdr(&rx, bad_len);
			memcpy(bad, raw, *bad_len);
			return ev.err;
		case KIWI_RX_MORE:
			break;
		}
		off += used;
	}
	return KIWI_OK;
}

static const struct victim model_victim = {
	.stag = 0x00000105, .addr = 0x7f1234560000ULL, .len = 65536,
	.ro_stag = 0x000002c3, .ro_addr = 0x7f2000000000ULL,
	.ro_len = 16U << 20, .recv_len = 1024, .recvs = 4, .ird = 4, .ord = 4,
};

static void selftest_one(const struct opts *o, const struct scen *s)
{
	struct buf req = { 0 }, reply = { 0 }, stream = { 0 }, mine = { 0 };
	char label[128], what[200];
	struct kiwi_mpa_parser *pp;
	enum kiwi_err err;
	struct run r;
	u32 used, n;

	snprintf(label, sizeof(label), "selftest %s/%s", o->tag, s->name);
	run_init(&r, o, s);
	if (s->phase == PH_MPA) {
		bool good = true;

		s->mpa(&r, &req);
		err = mpa_model(&r, &req, &reply);
		tap_ok(err == s->err, "%s: the core, as kiwi's CM, finds %s (wanted %s)",
		    label, kiwi_err_desc(err)->name,
		    kiwi_err_desc(s->err)->name);
		if (s->out == OUT_CLOSE) {
			/* unparseable: nothing to answer */
			good = kiwi_err_desc(err)->term == false;
		} else {
			/* a Reply with R that the initiator's core decodes */
			pp = calloc(1, sizeof(*pp));
			kiwi_mpa_parser_init(pp, true);
			good = kiwi_mpa_parse(pp, reply.p, reply.len, &used) == 1 &&
			       used == reply.len && pp->f.r &&
			       kiwi_mpa_connect(&r.my, &pp->f, &r.res) ==
			       KIWI_ERR_MPA_REJECTED;
			free(pp);
		}
		tap_ok(good, "%s: expected answer: %s", label,
		    s->out == OUT_CLOSE ? "none, close" :
		    "an MPA Reply with R the core decodes as a reject");
		goto out;
	}

	/* the MPA exchange with the model, as kiwi would do it */
	req_valid(&r, &req);
	err = mpa_model(&r, &req, &reply);
	pp = calloc(1, sizeof(*pp));
	kiwi_mpa_parser_init(pp, true);
	if (err || kiwi_mpa_parse(pp, reply.p, reply.len, &used) != 1 ||
	    kiwi_mpa_connect(&r.my, &pp->f, &r.res)) {
		tap_ok(0, "%s: the MPA exchange succeeds", label);
		free(pp);
		goto out;
	}
	free(pp);
	{
		struct model m = { .v = &o->v,
				   .rtr_seen = o->no_p2p,
				   .recvs = s->recvs >= 0 ? (u32)s->recvs :
							    o->v.recvs };
		struct kiwi_mpa_parser *kp = calloc(1, sizeof(*kp));
		u8 bad[KIWI_WIRE_HDR_MAX];
		u32 bad_len = 0;

		/* kiwi's view of the negotiation */
		kiwi_mpa_parser_init(kp, false);
		kiwi_mpa_parse(kp, req.p, req.len, &used);
		kiwi_mpa_accept(&r.kiwi, &kp->f, &m.res);
		free(kp);

		if (build_fpdus(&r, &stream)) {
			tap_ok(0, "%s: frames build", label);
			goto out;
		}
		{
			struct kiwi_tx_cfg tc = { .crc = m.res.crc,
					.markers = m.res.markers_tx };

			kiwi_tx_init(&m.tx, &tc);
			m.out = &mine;
		}
		err = model_stream(&m, stream.p, stream.len, bad, &bad_len, &n);
		if (s->out == OUT_HOLD) {
			/* the Write cut short is still being placed */
			tap_ok(err == KIWI_OK && n == s->nfpdu + !o->no_p2p &&
			    m.in_fpdu && m.last_op == KIWI_RDMAP_WRITE,
			    "%s: every FPDU passes the core and the model, the last one is a Write still in progress (%u whole FPDUs, %s)",
			    label, n, kiwi_err_desc(err)->name);
			goto out;
		} else if (s->out == OUT_DRAIN) {
			tap_ok(err == KIWI_OK && n == s->nfpdu + !o->no_p2p &&
			    r.hold_at > 0 && r.hold_at < stream.len,
			    "%s: every FPDU passes the core and the model, the hold falls inside the last (%u FPDUs, %s)",
			    label, n, kiwi_err_desc(err)->name);
			goto out;
		} else if (s->out == OUT_OK || s->out == OUT_SILENT) {
			tap_ok(err == KIWI_OK && n == s->nfpdu + !o->no_p2p,
			    "%s: every FPDU passes the core and the model (%u FPDUs, %s)",
			    label, n, kiwi_err_desc(err)->name);
		} else {
			tap_ok(err == s->err,
			    "%s: the core and the model, as kiwi's receiver, find %s (wanted %s)",
			    label, kiwi_err_desc(err)->name,
			    kiwi_err_desc(s->err)->name);
			/* kiwi's Terminate, built from what it received */
			{
				struct kiwi_tx t;
				struct kiwi_tx_cfg tc = { .crc = m.res.crc,
						.markers = m.res.markers_tx };
				struct kiwi_hdr h;
				int k;

				kiwi_term_build(&h, err, bad, bad_len, 1);
				kiwi_tx_init(&t, &tc);
				mine.len = 0;
				buf_reserve(&mine, 256);
				k = kiwi_fpdu_build(&t, &h, NULL, 0, mine.p,
						    mine.cap);
				mine.len = k > 0 ? k : 0;
			}
			expect_term(&r);
		}
	}
	if (s->out == OUT_OK || s->out == OUT_SILENT) {
		tap_ok(mine.len == r.exp_rresp.len &&
		    !memcmp(mine.p, r.exp_rresp.p, mine.len),
		    "%s: the expected Read Responses are what the model sends",
		    label);
	} else {
		tap_ok(mine.len == r.exp.len && !memcmp(mine.p, r.exp.p, mine.len),
		    "%s: the expected %s is what the model sends", label,
		    term_desc(s->err, what, sizeof(what)));
	}
	/* the checker accepts the right answer and refuses a flipped bit */
	{
		int okay = !check_stream(&r, mine.p, mine.len, false, NULL);
		int caught = 1;
		u32 i;

		for (i = 0; i < mine.len && caught; i += 1 + i / 8) {
			mine.p[i] ^= 0x10;
			caught = check_stream(&r, mine.p, mine.len, false, NULL) != 0;
			mine.p[i] ^= 0x10;
		}
		if (mine.len)
			caught = caught && check_stream(&r, mine.p,
							mine.len - 1,
							false, NULL) != 0;
		else	/* silence expected: one stray byte is refused */
			caught = check_stream(&r, zeros, 1, false, NULL) != 0;
		tap_ok(okay && caught,
		    "%s: the checker accepts the expected bytes and refuses them with any byte altered or cut",
		    label);
	}
out:
	run_free(&r);
	buf_free(&req);
	buf_free(&reply);
	buf_free(&stream);
	buf_free(&mine);
}

static int selftest(struct opts *o)
{
	static const u8 policies[] = { KIWI_MPA_CRC_OFF, KIWI_MPA_CRC_REQUIRED };
	unsigned int i, c, k;

	o->v = model_victim;
	o->kiwi_ird = model_victim.ird;
	o->kiwi_ord = model_victim.ord;
	for (k = 0; k < 2; k++) {
		for (c = 0; c < 2; c++) {
			char tag[64];

			o->crc = c;
			o->kiwi_crc = policies[k];
			snprintf(tag, sizeof(tag), "%s%skiwi-crc-%s/crc-%s",
				 o->no_p2p ? "no-p2p/" : "",
				 o->markers ? "markers/" : "",
				 k ? "required" : "off", c ? "on" : "off");
			o->tag = tag;
			/* kiwi as the requester is only tried live */
			for (i = 0; i < NSCEN; i++)
				if (scen_applies(&scens[i], o->crc, o->kiwi_crc,
						 o->kiwi_markers) &&
				    selected(o, scens[i].name) &&
				    scens[i].out != OUT_REQ)
					selftest_one(o, &scens[i]);
		}
	}
	return tap_failed ? 1 : 0;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: adversary --selftest\n"
		"       adversary -a ADDR -p PORT --victim-file F [--crc on|off]\n"
		"                 [--kiwi-crc off|preferred|required] [--kiwi-ird N]\n"
		"                 [--kiwi-ord N] [--tag T] [--only N1,N2] [--timeout SEC]\n"
		"       adversary --list\n");
	exit(2);
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "selftest", no_argument, NULL, 'S' },
		{ "list", no_argument, NULL, 'L' },
		{ "addr", required_argument, NULL, 'a' },
		{ "port", required_argument, NULL, 'p' },
		{ "victim-file", required_argument, NULL, 'v' },
		{ "crc", required_argument, NULL, 'c' },
		{ "kiwi-crc", required_argument, NULL, 'k' },
		{ "kiwi-ird", required_argument, NULL, 'i' },
		{ "kiwi-ord", required_argument, NULL, 'o' },
		{ "tag", required_argument, NULL, 't' },
		{ "only", required_argument, NULL, 'n' },
		{ "timeout", required_argument, NULL, 'T' },
		{ "no-p2p", no_argument, NULL, 'P' },
		{ "markers", no_argument, NULL, 'M' },
		{ "chunk", required_argument, NULL, 'C' },
		{ "kiwi-markers", no_argument, NULL, 'K' },
		{ 0 }
	};
	struct opts o = { .port = 0, .kiwi_crc = KIWI_MPA_CRC_OFF,
			  .kiwi_ird = 4, .kiwi_ord = 4, .timeout_ms = 20000,
			  .tag = "adv" };
	const char *vfile = NULL;
	bool self = false;
	unsigned int i;
	int c;

	setvbuf(stdout, NULL, _IOLBF, 0);
	while ((c = getopt_long(argc, argv, "a:p:", lo, NULL)) != -1) {
		switch (c) {
		case 'S':
			self = true;
			break;
		case 'L':
			/* name, phase, outcome, CRC need, description */
			for (i = 0; i < NSCEN; i++)
				printf("%s %s %s %s %s\n", scens[i].name,
				       scens[i].phase == PH_MPA ? "mpa" : "fpdu",
				       outcome_name[scens[i].out],
				       scens[i].kiwi_crc_required ? "kiwi-crc-required" :
				       scens[i].crc > 0 ? "crc" : "any",
				       scens[i].what);
			return 0;
		case 'a':
			o.addr = optarg;
			break;
		case 'p':
			o.port = atoi(optarg);
			break;
		case 'v':
			vfile = optarg;
			break;
		case 'c':
			o.crc = !strcmp(optarg, "on");
			break;
		case 'k':
			if (!strcmp(optarg, "off"))
				o.kiwi_crc = KIWI_MPA_CRC_OFF;
			else if (!strcmp(optarg, "preferred"))
				o.kiwi_crc = KIWI_MPA_CRC_PREFERRED;
			else if (!strcmp(optarg, "required"))
				o.kiwi_crc = KIWI_MPA_CRC_REQUIRED;
			else
				usage();
			break;
		case 'i':
			o.kiwi_ird = atoi(optarg);
			break;
		case 'o':
			o.kiwi_ord = atoi(optarg);
			break;
		case 't':
			o.tag = optarg;
			break;
		case 'n':
			o.only = optarg;
			break;
		case 'T':
			o.timeout_ms = atoi(optarg) * 1000;
			break;
		case 'P':
			o.no_p2p = true;
			break;
		case 'M':
			o.markers = true;
			break;
		case 'C':
			chunk = atoi(optarg);
			break;
		case 'K':
			o.kiwi_markers = true;
			break;
		default:
			usage();
		}
	}
	if (self) {
		selftest(&o);
		/* and once without peer-to-peer mode (no RTR) */
		o.no_p2p = true;
		o.only = "control,send-bad-msn,write-bounds";
		selftest(&o);
		/* and with Markers both ways */
		o.no_p2p = false;
		o.only = NULL;
		o.markers = true;
		o.kiwi_markers = true;
		selftest(&o);
		printf("1..%d\n", tap_n);
		return tap_failed ? 1 : 0;
	}
	if (!o.addr || !o.port || !vfile)
		usage();
	if (victim_load(&o.v, vfile)) {
		fprintf(stderr, "adversary: no complete %s line in %s\n",
			KIWI_ADV_INFO_TAG, vfile);
		return 2;
	}
	return live(&o);
}
