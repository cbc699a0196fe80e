// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * MPA FPDU framing (RFC 5044 sections 5 and 6): the receive-side stream
 * parser and the transmit-side framer, with CRC32c and Markers.
 *
 * The parser copies only headers, Markers and trailers; payload is handed
 * back as spans of the caller's buffer so it can go straight to its
 * destination. Markers sit every 512 octets of the FPDU stream (position
 * 0 is the first octet after the MPA Request/Reply) and point back to
 * the ULPDU Length of the FPDU they fall into; one that falls exactly
 * where an FPDU begins belongs to that FPDU and points at itself (0).
 * The CRC covers every FPDU octet before the CRC field, Markers included.
 */
#include "kiwi_proto.h"

#define KIWI_MK_MASK	(KIWI_MPA_MARKER_SPACING - 1)

enum {
	KIWI_TXS_IDLE = 0,
	KIWI_TXS_HDR,
	KIWI_TXS_DATA,
	KIWI_TXS_TRAILER,
};

static u32 kiwi_min(u32 a, u32 b)
{
	return a < b ? a : b;
}

static u32 kiwi_pad(u32 ulpdu)
{
	return (4 - ((ulpdu + KIWI_MPA_LEN_SIZE) & 3)) & 3;
}

u32 kiwi_mpa_mulpdu(u32 emss, bool markers)
{
	u32 over = 6 + emss % 4;
	u32 m;

	if (markers)
		over += 4 * ((emss + KIWI_MPA_MARKER_SPACING - 1) /
			     KIWI_MPA_MARKER_SPACING);
	if (emss <= over + KIWI_TERM_ULPDU_MAX)
		return 0;
	m = emss - over;
	/*
	 * The ULPDU Length is 16 bits, and so is FPDUPTR: with Markers the
	 * whole FPDU must span at most 64 KiB. Both caps keep ULPDU + Length
	 * 4-aligned.
	 */
	return kiwi_min(m, markers ? 0xfffc - 6 - 4 * 130 : 0xfffe);
}

static void kiwi_rx_next_fpdu(struct kiwi_rx *rx)
{
	rx->state = KIWI_RXS_HDR;
	rx->hdr_need = 4;
	rx->hdr_have = 0;
	rx->payload_left = 0;
	rx->trl_have = 0;
	rx->trl_need = 0;
	kiwi_rx_run_end(rx);
	rx->crc = ~0U;
}

void kiwi_rx_init(struct kiwi_rx *rx, const struct kiwi_rx_cfg *cfg)
{
	int i;

	memset(rx, 0, sizeof(*rx));
	rx->crc_on = cfg->crc;
	rx->markers = cfg->markers;
	rx->pos = cfg->pos;
	for (i = 0; i < KIWI_QN_MAX; i++)
		rx->q[i].msn = 1;
	kiwi_rx_next_fpdu(rx);
}

static u32 kiwi_rx_error(struct kiwi_rx *rx, struct kiwi_rx_event *ev,
			 enum kiwi_err err, u32 used)
{
	rx->state = KIWI_RXS_DEAD;
	rx->err = err;
	ev->type = KIWI_RX_ERROR;
	ev->err = err;
	return used;
}

/* octets before the CRC field are covered by the CRC */
static bool kiwi_rx_in_crc_field(const struct kiwi_rx *rx)
{
	return rx->state == KIWI_RXS_TRAILER &&
	       rx->trl_have >= rx->trl_need - KIWI_MPA_CRC_SIZE;
}

static bool kiwi_rx_marker_ok(const struct kiwi_rx *rx)
{
	u32 ptr = ((rx->mk[2] << 8) | rx->mk[3]) & ~3U;
	u32 at = rx->pos - KIWI_MPA_MARKER_LEN;

	if (rx->state == KIWI_RXS_HDR && rx->hdr_have == 0)
		return ptr == 0;
	return ptr == at - rx->len_pos;
}

static enum kiwi_err kiwi_rx_header(struct kiwi_rx *rx)
{
	enum kiwi_err err;
	u32 hl;

	err = kiwi_hdr_decode(&rx->hdr, &rx->wire, rx->hdr_have);
	if (err)
		return err;
	hl = rx->hdr_have - KIWI_MPA_LEN_SIZE;
	rx->payload_left = rx->ulpdu_len - hl;
	err = kiwi_ddp_check(rx->q, &rx->hdr, rx->payload_left);
	if (err)
		return err;
	rx->trl_need = kiwi_pad(rx->ulpdu_len) + KIWI_MPA_CRC_SIZE;
	rx->state = rx->payload_left ? KIWI_RXS_DATA : KIWI_RXS_TRAILER;
	return KIWI_OK;
}

/* framing bytes into the parser's own copy, with the CRC if they count */
static void kiwi_rx_take(struct kiwi_rx *rx, u8 *dst, const u8 *src, u32 len,
			 bool crc)
{
	if (crc)
		kiwi_rx_copy_data(rx, dst, src, len);
	else
		memcpy(dst, src, len);
}

/*
 * The steps of kiwi_rx_feed(), one a parser state: each takes what it
 * can of the @avail octets at @buf + *@used, adds them to *@used and
 * returns true when @ev holds an event for the caller (a header, a span
 * of payload, a whole FPDU, an error), false when it wants more octets.
 */
static bool kiwi_rx_feed_marker(struct kiwi_rx *rx, const u8 *buf, u32 avail,
				u32 *used, struct kiwi_rx_event *ev)
{
	u32 at = rx->pos & KIWI_MK_MASK;
	u32 take = kiwi_min(KIWI_MPA_MARKER_LEN - at, avail);

	kiwi_rx_take(rx, rx->mk + at, buf + *used, take,
		     !kiwi_rx_in_crc_field(rx));
	rx->pos += take;
	*used += take;
	if (at + take == KIWI_MPA_MARKER_LEN && !kiwi_rx_marker_ok(rx)) {
		kiwi_rx_error(rx, ev, KIWI_ERR_MPA_MARKER, *used);
		return true;
	}
	return false;
}

static bool kiwi_rx_feed_hdr(struct kiwi_rx *rx, const u8 *buf, u32 avail,
			     u32 *used, struct kiwi_rx_event *ev)
{
	enum kiwi_err err;
	u32 take;

	if (rx->hdr_have == 0)
		rx->len_pos = rx->pos;
	take = kiwi_min(avail, rx->hdr_need - rx->hdr_have);
	kiwi_rx_take(rx, rx->wire.raw + rx->hdr_have, buf + *used, take, true);
	rx->hdr_have += take;
	rx->pos += take;
	*used += take;
	if (rx->hdr_have < rx->hdr_need)
		return false;
	if (rx->hdr_need == 4) {
		/* the ULPDU Length and the control field: now the whole size */
		rx->ulpdu_len = be16_to_cpu(rx->wire.c.mpa_len);
		err = kiwi_hdr_need(&rx->wire, &rx->hdr_need);
	} else {
		err = kiwi_rx_header(rx);
		if (!err) {
			ev->type = KIWI_RX_HDR;
			ev->hdr = &rx->hdr;
			ev->payload_len = rx->payload_left;
			return true;
		}
	}
	if (err) {
		kiwi_rx_error(rx, ev, err, *used);
		return true;
	}
	return false;
}

/* payload is not copied: the event names the span of the caller's buffer */
static bool kiwi_rx_feed_data(struct kiwi_rx *rx, u32 avail, u32 *used,
			      struct kiwi_rx_event *ev)
{
	u32 take = kiwi_min(avail, rx->payload_left);

	ev->type = KIWI_RX_DATA;
	ev->off = *used;
	ev->len = take;
	rx->payload_left -= take;
	rx->pos += take;
	*used += take;
	if (!rx->payload_left)
		rx->state = KIWI_RXS_TRAILER;
	return true;
}

static bool kiwi_rx_feed_trailer(struct kiwi_rx *rx, const u8 *buf, u32 avail,
				 u32 *used, struct kiwi_rx_event *ev)
{
	u32 pad = rx->trl_need - KIWI_MPA_CRC_SIZE;
	u32 take = kiwi_min(avail, rx->trl_need - rx->trl_have);
	const u8 *src = buf + *used;

	if (rx->trl_have < pad) {
		u32 p = kiwi_min(take, pad - rx->trl_have);

		kiwi_rx_take(rx, rx->trl + rx->trl_have, src, p, true);
		memcpy(rx->trl + rx->trl_have + p, src + p, take - p);
	} else {
		memcpy(rx->trl + rx->trl_have, src, take);
	}
	rx->trl_have += take;
	rx->pos += take;
	*used += take;
	if (rx->trl_have < rx->trl_need)
		return false;
	if (rx->crc_on) {
		const u8 *c = rx->trl + pad;
		u32 wire = c[0] | (c[1] << 8) | (c[2] << 16) |
			   ((u32)c[3] << 24);

		kiwi_rx_run_end(rx);
		if (wire != ~rx->crc) {
			kiwi_rx_error(rx, ev, KIWI_ERR_MPA_CRC, *used);
			return true;
		}
	}
	ev->type = KIWI_RX_DONE;
	ev->hdr = &rx->hdr;
	kiwi_rx_next_fpdu(rx);
	return true;
}

u32 kiwi_rx_feed(struct kiwi_rx *rx, const u8 *buf, u32 len,
		 struct kiwi_rx_event *ev)
{
	u32 i = 0;

	memset(ev, 0, sizeof(*ev));
	if (rx->state == KIWI_RXS_DEAD)
		return kiwi_rx_error(rx, ev, rx->err, 0);

	while (i < len) {
		u32 avail = len - i;
		bool done = false;

		if (rx->markers) {
			u32 at = rx->pos & KIWI_MK_MASK;

			if (at < KIWI_MPA_MARKER_LEN) {
				if (kiwi_rx_feed_marker(rx, buf, avail, &i, ev))
					return i;
				continue;
			}
			avail = kiwi_min(avail, KIWI_MPA_MARKER_SPACING - at);
		}

		switch (rx->state) {
		case KIWI_RXS_HDR:
			done = kiwi_rx_feed_hdr(rx, buf, avail, &i, ev);
			break;
		case KIWI_RXS_DATA:
			done = kiwi_rx_feed_data(rx, avail, &i, ev);
			break;
		case KIWI_RXS_TRAILER:
			done = kiwi_rx_feed_trailer(rx, buf, avail, &i, ev);
			break;
		}
		if (done)
			return i;
	}
	ev->type = KIWI_RX_MORE;
	return i;
}

void kiwi_tx_init(struct kiwi_tx *tx, const struct kiwi_tx_cfg *cfg)
{
	memset(tx, 0, sizeof(*tx));
	tx->crc_on = cfg->crc;
	tx->markers = cfg->markers;
	tx->pos = cfg->pos;
}

int kiwi_tx_begin(struct kiwi_tx *tx, const struct kiwi_hdr *h,
		  u32 payload_len)
{
	int n;

	if (tx->state != KIWI_TXS_IDLE)
		return -EBUSY;
	n = kiwi_hdr_encode(h, payload_len, tx->wire.raw, sizeof(tx->wire));
	if (n < 0)
		return n;
	/* a Marker could not point back further than 16 bits reach */
	if (tx->markers && kiwi_tx_wire_len(tx, h, payload_len) > 0xffff)
		return -EMSGSIZE;
	tx->hdr_len = n;
	tx->hdr_off = 0;
	tx->payload_left = payload_len;
	tx->pad = kiwi_pad(n - KIWI_MPA_LEN_SIZE + payload_len);
	tx->trl_off = 0;
	memset(tx->trl, 0, sizeof(tx->trl));
	kiwi_tx_run_end(tx);
	tx->crc = ~0U;
	tx->state = KIWI_TXS_HDR;
	return 0;
}

static void kiwi_tx_emit(struct kiwi_tx *tx, u8 *buf, u32 *n,
			 const u8 *src, u32 len, bool crc)
{
	if (crc)
		kiwi_tx_copy_data(tx, buf + *n, src, len);
	else
		memcpy(buf + *n, src, len);
	*n += len;
	tx->pos += len;
}

/* the FPDU's CRC field at p, in wire order: zero with CRC off */
static void kiwi_tx_crc_field(struct kiwi_tx *tx, u8 *p)
{
	u32 c;

	kiwi_tx_run_end(tx);
	c = tx->crc_on ? ~tx->crc : 0;

	p[0] = c & 0xff;
	p[1] = (c >> 8) & 0xff;
	p[2] = (c >> 16) & 0xff;
	p[3] = c >> 24;
}

u32 kiwi_tx_next(struct kiwi_tx *tx, u8 *buf, u32 *payload)
{
	u32 n = 0;

	*payload = 0;
	while (tx->state != KIWI_TXS_IDLE) {
		u32 room = ~0U;
		u32 take;

		if (tx->markers) {
			u32 at = tx->pos & KIWI_MK_MASK;

			if (at == 0) {
				u8 mk[KIWI_MPA_MARKER_LEN] = { 0 };
				u32 ptr = 0;

				if (tx->state != KIWI_TXS_HDR || tx->hdr_off)
					ptr = tx->pos - tx->len_pos;
				mk[2] = ptr >> 8;
				mk[3] = ptr & 0xff;
				kiwi_tx_emit(tx, buf, &n, mk, sizeof(mk),
					     tx->state != KIWI_TXS_TRAILER ||
					     tx->trl_off < tx->pad);
				continue;
			}
			room = KIWI_MPA_MARKER_SPACING - at;
		}

		switch (tx->state) {
		case KIWI_TXS_HDR:
			if (tx->hdr_off == 0)
				tx->len_pos = tx->pos;
			take = kiwi_min(room, tx->hdr_len - tx->hdr_off);
			kiwi_tx_emit(tx, buf, &n, tx->wire.raw + tx->hdr_off,
				     take, true);
			tx->hdr_off += take;
			if (tx->hdr_off == tx->hdr_len)
				tx->state = tx->payload_left ? KIWI_TXS_DATA :
							       KIWI_TXS_TRAILER;
			break;

		case KIWI_TXS_DATA:
			take = kiwi_min(room, tx->payload_left);
			*payload = take;
			tx->payload_left -= take;
			tx->pos += take;
			if (!tx->payload_left)
				tx->state = KIWI_TXS_TRAILER;
			return n;

		case KIWI_TXS_TRAILER:
			if (tx->trl_off < tx->pad) {
				take = kiwi_min(room, tx->pad - tx->trl_off);
				kiwi_tx_emit(tx, buf, &n, tx->trl + tx->trl_off,
					     take, true);
				tx->trl_off += take;
				break;
			}
			if (tx->trl_off == tx->pad)
				kiwi_tx_crc_field(tx, tx->trl + tx->pad);
			take = kiwi_min(room, tx->pad + KIWI_MPA_CRC_SIZE -
					tx->trl_off);
			kiwi_tx_emit(tx, buf, &n, tx->trl + tx->trl_off, take,
				     false);
			tx->trl_off += take;
			if (tx->trl_off == tx->pad + KIWI_MPA_CRC_SIZE)
				tx->state = KIWI_TXS_IDLE;
			break;
		}
	}
	return n;
}

int kiwi_tx_head(struct kiwi_tx *tx, const struct kiwi_hdr *h,
		 u32 payload_len, u8 *buf, u32 cap)
{
	int n;

	if (tx->state != KIWI_TXS_IDLE || tx->markers)
		return -EINVAL;
	n = kiwi_hdr_encode(h, payload_len, buf, cap);
	if (n < 0)
		return n;
	tx->pad = kiwi_pad(n - KIWI_MPA_LEN_SIZE + payload_len);
	kiwi_tx_run_end(tx);
	tx->crc = ~0U;
	if (tx->crc_on)
		tx->crc = crc32c(tx->crc, buf, n);
	tx->pos += n + payload_len;
	return n;
}

u32 kiwi_tx_tail(struct kiwi_tx *tx, u8 *buf)
{
	u32 n = tx->pad + KIWI_MPA_CRC_SIZE;

	memset(buf, 0, tx->pad);
	kiwi_tx_crc_data(tx, buf, tx->pad);
	kiwi_tx_crc_field(tx, buf + tx->pad);
	tx->pos += n;
	return n;
}

u32 kiwi_tx_wire_len(const struct kiwi_tx *tx, const struct kiwi_hdr *h,
		     u32 payload_len)
{
	u32 hl = kiwi_hdr_len(h);
	u32 ulpdu = hl + payload_len;
	u32 left, pos, total = 0;

	if (!hl || payload_len > 0xffff - hl)
		return 0;
	left = KIWI_MPA_LEN_SIZE + ulpdu + kiwi_pad(ulpdu) + KIWI_MPA_CRC_SIZE;
	if (!tx->markers)
		return left;
	/* Markers go in front of any FPDU octet at a 512 boundary */
	pos = tx->pos;
	while (left) {
		u32 at = pos & KIWI_MK_MASK;
		u32 take;

		if (at == 0) {
			pos += KIWI_MPA_MARKER_LEN;
			total += KIWI_MPA_MARKER_LEN;
			continue;
		}
		take = kiwi_min(left, KIWI_MPA_MARKER_SPACING - at);
		pos += take;
		total += take;
		left -= take;
	}
	return total;
}

int kiwi_fpdu_build(struct kiwi_tx *tx, const struct kiwi_hdr *h,
		    const void *payload, u32 payload_len, u8 *out, u32 cap)
{
	u8 frame[KIWI_TX_FRAME_MAX];
	const u8 *src = payload;
	u32 used = 0;
	u32 need;
	int rv;

	if (tx->state != KIWI_TXS_IDLE)
		return -EBUSY;
	need = kiwi_tx_wire_len(tx, h, payload_len);
	if (!need)
		return kiwi_hdr_len(h) ? -EMSGSIZE : -EINVAL;
	if (need > cap)
		return -ENOSPC;
	rv = kiwi_tx_begin(tx, h, payload_len);
	if (rv)
		return rv;
	while (kiwi_tx_more(tx)) {
		u32 take;
		u32 n = kiwi_tx_next(tx, frame, &take);

		memcpy(out + used, frame, n);
		used += n;
		if (take) {
			kiwi_tx_copy_data(tx, out + used, src, take);
			src += take;
			used += take;
		}
	}
	return used;
}
