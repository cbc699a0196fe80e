/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The connection knobs, the one list of them, included with KIWI_KNOB
 * defined where a table is built (cm.h, cm_policy.c, device.c).  Each is
 * a per-device sysfs file and, where cm_policy.c says so, a module
 * parameter giving new devices their default: the MPA policy, then how
 * soon a dead peer or path fails a connection (cm.md).
 *
 * KIWI_KNOB(knob, name, names, max, default): a value is one of names (a
 * list in cm_policy.c) or, without names, a number up to max.
 *
 * FPDUs up to 64 KiB go to peers that offer them too (kiwi, siw; RNICs
 * never do).  A dead peer or path fails the connection after 30 s of
 * unacknowledged data, or an idle one after unanswered keepalives (30 s,
 * then three 10 s apart); TCP's defaults take about 15 minutes.
 */
KIWI_KNOB(KIWI_POL_CRC, mpa_crc, kiwi_pol_crc, 0, KIWI_MPA_CRC_OFF)
KIWI_KNOB(KIWI_POL_REV, mpa_rev, kiwi_pol_rev, 0, 2)
KIWI_KNOB(KIWI_POL_P2P, mpa_p2p, kiwi_pol_bool, 0, 1)
KIWI_KNOB(KIWI_POL_RTR, mpa_rtr, kiwi_pol_rtr, 0, KIWI_RTR_WRITE)
KIWI_KNOB(KIWI_POL_MARKERS, mpa_markers, kiwi_pol_bool, 0, 0)
KIWI_KNOB(KIWI_POL_FPDU, mpa_fpdu_max, NULL, 65535, 65535)
KIWI_KNOB(KIWI_TCP_USER_TIMEOUT, tcp_user_timeout_ms, NULL,
	  KIWI_TIMEOUT_MAX_MS, 30000)
KIWI_KNOB(KIWI_TCP_KEEPALIVE, tcp_keepalive_s, NULL, MAX_TCP_KEEPIDLE, 30)
/*
 * Refuse what the RNICs (cxgb4, irdma) refuse and siw accepts, so that
 * what works on kiwi works on them; 0 accepts what siw does
 * (rnic-compat.md).  Per device only, read when a QP is created.
 */
KIWI_KNOB(KIWI_RNIC_STRICT, rnic_strict, kiwi_pol_bool, 0, 1)
