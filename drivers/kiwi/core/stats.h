/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The per-device counters, the one list of them, included with KIWI_STAT
 * defined for the enum (core.h) and the names (device.c) that `rdma
 * statistic` and hw_counters show (operability.md says what each counts).
 */
KIWI_STAT(KIWI_STAT_TX_FPDUS, "tx_fpdus")
/* ULP payload of the FPDUs sent */
KIWI_STAT(KIWI_STAT_TX_BYTES, "tx_bytes")
KIWI_STAT(KIWI_STAT_RX_FPDUS, "rx_fpdus")
KIWI_STAT(KIWI_STAT_RX_BYTES, "rx_bytes")	/* ULP payload placed */
KIWI_STAT(KIWI_STAT_CRC_ERRORS, "crc_errors")
/* Terminates by layer (KIWI_LAYER_*) */
KIWI_STAT(KIWI_STAT_TERM_SENT_RDMAP, "term_sent_rdmap")
KIWI_STAT(KIWI_STAT_TERM_SENT_DDP, "term_sent_ddp")
KIWI_STAT(KIWI_STAT_TERM_SENT_LLP, "term_sent_llp")
KIWI_STAT(KIWI_STAT_TERM_RCVD_RDMAP, "term_rcvd_rdmap")
KIWI_STAT(KIWI_STAT_TERM_RCVD_DDP, "term_rcvd_ddp")
KIWI_STAT(KIWI_STAT_TERM_RCVD_LLP, "term_rcvd_llp")
KIWI_STAT(KIWI_STAT_MPA_REQ_SENT, "mpa_req_sent")
KIWI_STAT(KIWI_STAT_MPA_REQ_RCVD, "mpa_req_rcvd")
KIWI_STAT(KIWI_STAT_MPA_REP_SENT, "mpa_rep_sent")	/* accepting Replies */
KIWI_STAT(KIWI_STAT_MPA_REP_RCVD, "mpa_rep_rcvd")
KIWI_STAT(KIWI_STAT_MPA_REJ_SENT, "mpa_rej_sent")	/* Replies with R set */
KIWI_STAT(KIWI_STAT_MPA_REJ_RCVD, "mpa_rej_rcvd")
KIWI_STAT(KIWI_STAT_CONNECT_TIMEOUTS, "connect_timeouts")
/* a handshake gave up its turn's wait */
KIWI_STAT(KIWI_STAT_ORDER_WAITS_EXPIRED, "order_waits_expired")
/* rdma_cm's port taken: TCP chose */
KIWI_STAT(KIWI_STAT_CONNECT_PORT_FALLBACKS, "connect_port_fallbacks")
KIWI_STAT(KIWI_STAT_DOORBELLS, "doorbells")
KIWI_STAT(KIWI_STAT_COMPLETIONS, "completions")
KIWI_STAT(KIWI_STAT_COMPLETIONS_FLUSHED, "completions_flushed")
KIWI_STAT(KIWI_STAT_RX_DEFERRED, "rx_deferred")	/* arrivals handed to rx_work */
/* Read Responses sent from another CPU */
KIWI_STAT(KIWI_STAT_RRESP_DEFERRED, "rresp_deferred")
/* kernel posts sent in the poster's context */
KIWI_STAT(KIWI_STAT_POSTS_DIRECT, "posts_direct")
KIWI_STAT(KIWI_STAT_FASTREG_WRS, "fastreg_wrs")	/* REG_MR WRs executed */
/* ... on an MR registered before */
KIWI_STAT(KIWI_STAT_FASTREG_REMAPS, "fastreg_remaps")
/* LOCAL_INV, Read with local invalidate */
KIWI_STAT(KIWI_STAT_LOCAL_INVS, "local_invalidations")
/* Send with Invalidate honoured */
KIWI_STAT(KIWI_STAT_REMOTE_INVS, "remote_invalidations")
/* tagged FPDUs placed into FR MRs */
KIWI_STAT(KIWI_STAT_FASTREG_PLACED, "fastreg_placed")
/* payload copied with its CRC, one pass */
KIWI_STAT(KIWI_STAT_TX_CRC_COPY_BYTES, "tx_crc_copy_bytes")
/* payload CRC'd in a pass of its own */
KIWI_STAT(KIWI_STAT_TX_CRC_PASS_BYTES, "tx_crc_pass_bytes")
