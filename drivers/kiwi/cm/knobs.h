/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The connection knobs, the one list of them, included where a table of
 * them is built (cm.h, cm_policy.c, device.c) with KIWI_KNOB defined.
 * Each is a per-device sysfs file and, where cm_policy.c says so, a
 * module parameter of the same name (the default a device copies when it
 * is created): the MPA policy, then how soon a connection whose
 * peer or path died is declared dead (set on each connection's TCP socket
 * when it enters RDMA mode, cm.md).
 *
 * KIWI_KNOB(knob, name, names, max, default): a value is one of names (a
 * list in cm_policy.c) or, without names, a number up to max.
 *
 * FPDUs up to 64 KiB go to peers that offer them too (kiwi, or siw, whose
 * Reply echoes the Request's flags; hardware RNICs build their own flags
 * and never offer it): chosen by measurement (benchmarks.md).  A dead
 * peer or path fails the connection after 30 s of unacknowledged data,
 * or when an idle connection's keepalive probes (after 30 s, then three
 * 10 s apart) go unanswered; TCP's own default would take about 15
 * minutes and never notice an idle one.
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
 * Whether the device refuses what the iWARP RNICs (cxgb4, irdma) refuse
 * and siw accepts, so that what works on kiwi works on them; 0 accepts
 * what siw accepts (Documentation/rnic-compat.md).  A per-device setting
 * only, with no module parameter (cm_policy.c declares none), read when
 * a QP is created.
 */
KIWI_KNOB(KIWI_RNIC_STRICT, rnic_strict, kiwi_pol_bool, 0, 1)
