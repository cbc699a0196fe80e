/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The part of libibverbs' private provider ABI (IBVERBS_PRIVATE_34) that
 * libkiwi uses.
 *
 * Debian's libibverbs-dev installs verbs.h but not the internal header that
 * declares the provider interface, so an out-of-tree provider has to declare
 * it itself.  Every structure below must have exactly the layout rdma-core
 * uses for private ABI 34 (rdma-core 34 through 56; checked against 44.0 and
 * 56.1, where these layouts are identical).  Type and function names carry a
 * kiwi_ prefix so that nothing here can clash with a future public header;
 * the C linkage names of the imported functions are rdma-core's.
 *
 * struct verbs_context itself is public (infiniband/verbs.h) and is used
 * from there.
 */
#ifndef KIWI_VERBS_PRIVATE_H
#define KIWI_VERBS_PRIVATE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <infiniband/verbs.h>
#include <rdma/ib_user_verbs.h>

/* The private ABI number this header describes. */
#define KIWI_IBVERBS_PABI	34

/* Kinds of struct kiwi_verbs_match_ent. */
enum {
	KIWI_VERBS_MATCH_SENTINEL = 0,
	KIWI_VERBS_MATCH_PCI = 1,
	KIWI_VERBS_MATCH_MODALIAS = 2,
	KIWI_VERBS_MATCH_DRIVER_ID = 3,
};

/* Log levels of __verbs_log(). */
enum {
	KIWI_VERBS_LOG_NONE,
	KIWI_VERBS_LOG_ERR,
	KIWI_VERBS_LOG_WARN,
	KIWI_VERBS_LOG_INFO,
	KIWI_VERBS_LOG_DEBUG,
};

/* rdma-core: struct verbs_match_ent */
struct kiwi_verbs_match_ent {
	void *driver_data;
	union {
		const char *modalias;
		uint64_t driver_id;
	} u;
	uint16_t vendor;
	uint16_t device;
	uint8_t kind;
};

/* Opaque to providers that do not override match_device. */
struct kiwi_verbs_sysfs_dev;
struct kiwi_verbs_device;

/* rdma-core: struct verbs_device_ops */
struct kiwi_verbs_device_ops {
	const char *name;
	uint32_t match_min_abi_version;
	uint32_t match_max_abi_version;
	const struct kiwi_verbs_match_ent *match_table;
	const struct kiwi_verbs_device_ops **static_providers;
	bool (*match_device)(struct kiwi_verbs_sysfs_dev *sysfs_dev);
	struct verbs_context *(*alloc_context)(struct ibv_device *device,
					       int cmd_fd, void *private_data);
	struct verbs_context *(*import_context)(struct ibv_device *device,
						int cmd_fd);
	struct kiwi_verbs_device *(*alloc_device)(
		struct kiwi_verbs_sysfs_dev *sysfs_dev);
	void (*uninit_device)(struct kiwi_verbs_device *device);
};

/* rdma-core: struct list_node (ccan) */
struct kiwi_list_node {
	struct kiwi_list_node *next, *prev;
};

/* rdma-core: struct verbs_device; the library owns all but `device'. */
struct kiwi_verbs_device {
	struct ibv_device device;	/* must be first */
	const struct kiwi_verbs_device_ops *ops;
	atomic_int refcount;
	struct kiwi_list_node entry;
	struct kiwi_verbs_sysfs_dev *sysfs;
	uint64_t core_support;
};

/* rdma-core: enum ibv_mr_type and struct verbs_mr */
enum kiwi_ibv_mr_type {
	KIWI_IBV_MR_TYPE_MR,
	KIWI_IBV_MR_TYPE_NULL_MR,
	KIWI_IBV_MR_TYPE_IMPORTED_MR,
	KIWI_IBV_MR_TYPE_DMABUF_MR,
};

struct kiwi_verbs_mr {
	struct ibv_mr ibv_mr;
	enum kiwi_ibv_mr_type mr_type;
	int access;
};

/*
 * rdma-core: struct verbs_context_ops, 76 function pointers in alphabetical
 * order.  verbs_set_ops() copies every non-NULL member into the context.
 */
struct kiwi_verbs_context_ops {
	int (*advise_mr)(struct ibv_pd *pd, enum ibv_advise_mr_advice advice,
			 uint32_t flags, struct ibv_sge *sg_list,
			 uint32_t num_sges);
	struct ibv_dm *(*alloc_dm)(struct ibv_context *context,
				   struct ibv_alloc_dm_attr *attr);
	struct ibv_mw *(*alloc_mw)(struct ibv_pd *pd, enum ibv_mw_type type);
	struct ibv_mr *(*alloc_null_mr)(struct ibv_pd *pd);
	struct ibv_pd *(*alloc_parent_domain)(
		struct ibv_context *context,
		struct ibv_parent_domain_init_attr *attr);
	struct ibv_pd *(*alloc_pd)(struct ibv_context *context);
	struct ibv_td *(*alloc_td)(struct ibv_context *context,
				   struct ibv_td_init_attr *init_attr);
	void (*async_event)(struct ibv_context *context,
			    struct ibv_async_event *event);
	int (*attach_counters_point_flow)(struct ibv_counters *counters,
					  struct ibv_counter_attach_attr *attr,
					  struct ibv_flow *flow);
	int (*attach_mcast)(struct ibv_qp *qp, const union ibv_gid *gid,
			    uint16_t lid);
	int (*bind_mw)(struct ibv_qp *qp, struct ibv_mw *mw,
		       struct ibv_mw_bind *mw_bind);
	int (*close_xrcd)(struct ibv_xrcd *xrcd);
	void (*cq_event)(struct ibv_cq *cq);
	struct ibv_ah *(*create_ah)(struct ibv_pd *pd,
				    struct ibv_ah_attr *attr);
	struct ibv_counters *(*create_counters)(
		struct ibv_context *context,
		struct ibv_counters_init_attr *init_attr);
	struct ibv_cq *(*create_cq)(struct ibv_context *context, int cqe,
				    struct ibv_comp_channel *channel,
				    int comp_vector);
	struct ibv_cq_ex *(*create_cq_ex)(
		struct ibv_context *context,
		struct ibv_cq_init_attr_ex *init_attr);
	struct ibv_flow *(*create_flow)(struct ibv_qp *qp,
					struct ibv_flow_attr *flow_attr);
	struct ibv_flow_action *(*create_flow_action_esp)(
		struct ibv_context *context,
		struct ibv_flow_action_esp_attr *attr);
	struct ibv_qp *(*create_qp)(struct ibv_pd *pd,
				    struct ibv_qp_init_attr *attr);
	struct ibv_qp *(*create_qp_ex)(
		struct ibv_context *context,
		struct ibv_qp_init_attr_ex *qp_init_attr_ex);
	struct ibv_rwq_ind_table *(*create_rwq_ind_table)(
		struct ibv_context *context,
		struct ibv_rwq_ind_table_init_attr *init_attr);
	struct ibv_srq *(*create_srq)(struct ibv_pd *pd,
				      struct ibv_srq_init_attr *srq_init_attr);
	struct ibv_srq *(*create_srq_ex)(
		struct ibv_context *context,
		struct ibv_srq_init_attr_ex *srq_init_attr_ex);
	struct ibv_wq *(*create_wq)(struct ibv_context *context,
				    struct ibv_wq_init_attr *wq_init_attr);
	int (*dealloc_mw)(struct ibv_mw *mw);
	int (*dealloc_pd)(struct ibv_pd *pd);
	int (*dealloc_td)(struct ibv_td *td);
	int (*dereg_mr)(struct kiwi_verbs_mr *vmr);
	int (*destroy_ah)(struct ibv_ah *ah);
	int (*destroy_counters)(struct ibv_counters *counters);
	int (*destroy_cq)(struct ibv_cq *cq);
	int (*destroy_flow)(struct ibv_flow *flow);
	int (*destroy_flow_action)(struct ibv_flow_action *action);
	int (*destroy_qp)(struct ibv_qp *qp);
	int (*destroy_rwq_ind_table)(struct ibv_rwq_ind_table *rwq_ind_table);
	int (*destroy_srq)(struct ibv_srq *srq);
	int (*destroy_wq)(struct ibv_wq *wq);
	int (*detach_mcast)(struct ibv_qp *qp, const union ibv_gid *gid,
			    uint16_t lid);
	void (*free_context)(struct ibv_context *context);
	int (*free_dm)(struct ibv_dm *dm);
	int (*get_srq_num)(struct ibv_srq *srq, uint32_t *srq_num);
	struct ibv_dm *(*import_dm)(struct ibv_context *context,
				    uint32_t dm_handle);
	struct ibv_mr *(*import_mr)(struct ibv_pd *pd, uint32_t mr_handle);
	struct ibv_pd *(*import_pd)(struct ibv_context *context,
				    uint32_t pd_handle);
	int (*modify_cq)(struct ibv_cq *cq, struct ibv_modify_cq_attr *attr);
	int (*modify_flow_action_esp)(struct ibv_flow_action *action,
				      struct ibv_flow_action_esp_attr *attr);
	int (*modify_qp)(struct ibv_qp *qp, struct ibv_qp_attr *attr,
			 int attr_mask);
	int (*modify_qp_rate_limit)(struct ibv_qp *qp,
				    struct ibv_qp_rate_limit_attr *attr);
	int (*modify_srq)(struct ibv_srq *srq, struct ibv_srq_attr *srq_attr,
			  int srq_attr_mask);
	int (*modify_wq)(struct ibv_wq *wq, struct ibv_wq_attr *wq_attr);
	struct ibv_qp *(*open_qp)(struct ibv_context *context,
				  struct ibv_qp_open_attr *attr);
	struct ibv_xrcd *(*open_xrcd)(
		struct ibv_context *context,
		struct ibv_xrcd_init_attr *xrcd_init_attr);
	int (*poll_cq)(struct ibv_cq *cq, int num_entries, struct ibv_wc *wc);
	int (*post_recv)(struct ibv_qp *qp, struct ibv_recv_wr *wr,
			 struct ibv_recv_wr **bad_wr);
	int (*post_send)(struct ibv_qp *qp, struct ibv_send_wr *wr,
			 struct ibv_send_wr **bad_wr);
	int (*post_srq_ops)(struct ibv_srq *srq, struct ibv_ops_wr *op,
			    struct ibv_ops_wr **bad_op);
	int (*post_srq_recv)(struct ibv_srq *srq, struct ibv_recv_wr *recv_wr,
			     struct ibv_recv_wr **bad_recv_wr);
	int (*query_device_ex)(struct ibv_context *context,
			       const struct ibv_query_device_ex_input *input,
			       struct ibv_device_attr_ex *attr,
			       size_t attr_size);
	int (*query_ece)(struct ibv_qp *qp, struct ibv_ece *ece);
	int (*query_port)(struct ibv_context *context, uint8_t port_num,
			  struct ibv_port_attr *port_attr);
	int (*query_qp)(struct ibv_qp *qp, struct ibv_qp_attr *attr,
			int attr_mask, struct ibv_qp_init_attr *init_attr);
	int (*query_qp_data_in_order)(struct ibv_qp *qp, enum ibv_wr_opcode op,
				      uint32_t flags);
	int (*query_rt_values)(struct ibv_context *context,
			       struct ibv_values_ex *values);
	int (*query_srq)(struct ibv_srq *srq, struct ibv_srq_attr *srq_attr);
	int (*read_counters)(struct ibv_counters *counters,
			     uint64_t *counters_value, uint32_t ncounters,
			     uint32_t flags);
	struct ibv_mr *(*reg_dm_mr)(struct ibv_pd *pd, struct ibv_dm *dm,
				    uint64_t dm_offset, size_t length,
				    unsigned int access);
	struct ibv_mr *(*reg_dmabuf_mr)(struct ibv_pd *pd, uint64_t offset,
					size_t length, uint64_t iova, int fd,
					int access);
	struct ibv_mr *(*reg_mr)(struct ibv_pd *pd, void *addr, size_t length,
				 uint64_t hca_va, int access);
	int (*req_notify_cq)(struct ibv_cq *cq, int solicited_only);
	int (*rereg_mr)(struct kiwi_verbs_mr *vmr, int flags,
			struct ibv_pd *pd, void *addr, size_t length,
			int access);
	int (*resize_cq)(struct ibv_cq *cq, int cqe);
	int (*set_ece)(struct ibv_qp *qp, struct ibv_ece *ece);
	void (*unimport_dm)(struct ibv_dm *dm);
	void (*unimport_mr)(struct ibv_mr *mr);
	void (*unimport_pd)(struct ibv_pd *pd);
};

#define KIWI_VERBS_CONTEXT_OPS_COUNT	76

/*
 * Legacy write() command buffers: the command header followed by the
 * kernel's core request (rdma-core's struct ibv_<name>, declared with
 * DECLARE_CMD in kern-abi.h).  The ibv_cmd_* helpers treat bytes beyond
 * this as driver request data and bytes beyond the core response as driver
 * response data, for both the write() and the ioctl() paths.
 */
#define KIWI_DECLARE_CMD(_name)						\
	struct kiwi_ibv_##_name {					\
		struct ib_uverbs_cmd_hdr hdr;				\
		struct ib_uverbs_##_name core;				\
	}

KIWI_DECLARE_CMD(get_context);
KIWI_DECLARE_CMD(query_port);
KIWI_DECLARE_CMD(alloc_pd);
KIWI_DECLARE_CMD(reg_mr);
KIWI_DECLARE_CMD(create_cq);
KIWI_DECLARE_CMD(create_qp);
KIWI_DECLARE_CMD(query_qp);
KIWI_DECLARE_CMD(modify_qp);
KIWI_DECLARE_CMD(create_srq);
KIWI_DECLARE_CMD(modify_srq);
KIWI_DECLARE_CMD(query_srq);

/*
 * Functions exported by libibverbs.so.1 with symbol version
 * IBVERBS_PRIVATE_34.  The library registers a provider through
 * verbs_register_driver_34 (the private ABI number is part of the name).
 */
void verbs_register_driver_34(const struct kiwi_verbs_device_ops *ops);
void __verbs_log(struct verbs_context *ctx, uint32_t level,
		 const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void *_verbs_init_and_alloc_context(struct ibv_device *device, int cmd_fd,
				    size_t alloc_size,
				    struct verbs_context *context_offset,
				    uint32_t driver_id);
void verbs_uninit_context(struct verbs_context *context);
void verbs_set_ops(struct verbs_context *vctx,
		   const struct kiwi_verbs_context_ops *ops);

int ibv_cmd_get_context(struct verbs_context *context,
			struct kiwi_ibv_get_context *cmd, size_t cmd_size,
			struct ib_uverbs_get_context_resp *resp,
			size_t resp_size);
int ibv_cmd_query_device_any(struct ibv_context *context,
			     const struct ibv_query_device_ex_input *input,
			     struct ibv_device_attr_ex *attr, size_t attr_size,
			     struct ib_uverbs_ex_query_device_resp *resp,
			     size_t *resp_size);
int ibv_cmd_query_port(struct ibv_context *context, uint8_t port_num,
		       struct ibv_port_attr *port_attr,
		       struct kiwi_ibv_query_port *cmd, size_t cmd_size);
int ibv_cmd_alloc_pd(struct ibv_context *context, struct ibv_pd *pd,
		     struct kiwi_ibv_alloc_pd *cmd, size_t cmd_size,
		     struct ib_uverbs_alloc_pd_resp *resp, size_t resp_size);
int ibv_cmd_dealloc_pd(struct ibv_pd *pd);
int ibv_cmd_reg_mr(struct ibv_pd *pd, void *addr, size_t length,
		   uint64_t hca_va, int access, struct kiwi_verbs_mr *vmr,
		   struct kiwi_ibv_reg_mr *cmd, size_t cmd_size,
		   struct ib_uverbs_reg_mr_resp *resp, size_t resp_size);
int ibv_cmd_dereg_mr(struct kiwi_verbs_mr *vmr);
int ibv_cmd_create_cq(struct ibv_context *context, int cqe,
		      struct ibv_comp_channel *channel, int comp_vector,
		      struct ibv_cq *cq, struct kiwi_ibv_create_cq *cmd,
		      size_t cmd_size, struct ib_uverbs_create_cq_resp *resp,
		      size_t resp_size);
int ibv_cmd_destroy_cq(struct ibv_cq *cq);
int ibv_cmd_create_qp(struct ibv_pd *pd, struct ibv_qp *qp,
		      struct ibv_qp_init_attr *attr,
		      struct kiwi_ibv_create_qp *cmd, size_t cmd_size,
		      struct ib_uverbs_create_qp_resp *resp, size_t resp_size);
int ibv_cmd_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *qp_attr,
		     int attr_mask, struct ibv_qp_init_attr *qp_init_attr,
		     struct kiwi_ibv_query_qp *cmd, size_t cmd_size);
int ibv_cmd_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr,
		      int attr_mask, struct kiwi_ibv_modify_qp *cmd,
		      size_t cmd_size);
int ibv_cmd_destroy_qp(struct ibv_qp *qp);
int ibv_cmd_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
		      struct ibv_send_wr **bad_wr);
int ibv_cmd_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr,
		      struct ibv_recv_wr **bad_wr);
int ibv_cmd_create_srq(struct ibv_pd *pd, struct ibv_srq *srq,
		       struct ibv_srq_init_attr *attr,
		       struct kiwi_ibv_create_srq *cmd, size_t cmd_size,
		       struct ib_uverbs_create_srq_resp *resp,
		       size_t resp_size);
int ibv_cmd_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *srq_attr,
		       int srq_attr_mask, struct kiwi_ibv_modify_srq *cmd,
		       size_t cmd_size);
int ibv_cmd_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *srq_attr,
		      struct kiwi_ibv_query_srq *cmd, size_t cmd_size);
int ibv_cmd_destroy_srq(struct ibv_srq *srq);

/*
 * Build-time checks.  What can be checked against the installed public
 * headers is; the rest pins the layout we derived so that an accidental
 * edit cannot go unnoticed.
 */
#define KIWI_PTR	sizeof(void *)

/* verbs_context is public; the library requires `context' to be its last
 * member (it grows downwards) and providers embed it. */
_Static_assert(offsetof(struct verbs_context, context) +
	       sizeof(struct ibv_context) == sizeof(struct verbs_context),
	       "ibv_context must end struct verbs_context");
_Static_assert(offsetof(struct ibv_context, device) == 0,
	       "ibv_context layout");

_Static_assert(offsetof(struct kiwi_verbs_match_ent, u) == KIWI_PTR &&
	       offsetof(struct kiwi_verbs_match_ent, vendor) == 16 &&
	       offsetof(struct kiwi_verbs_match_ent, kind) == 20 &&
	       sizeof(struct kiwi_verbs_match_ent) == 24,
	       "verbs_match_ent layout");
_Static_assert(offsetof(struct kiwi_verbs_device_ops, match_table) ==
	       2 * KIWI_PTR &&
	       sizeof(struct kiwi_verbs_device_ops) == 9 * KIWI_PTR,
	       "verbs_device_ops layout");
_Static_assert(offsetof(struct kiwi_verbs_device, device) == 0 &&
	       offsetof(struct kiwi_verbs_device, ops) ==
	       sizeof(struct ibv_device) &&
	       offsetof(struct kiwi_verbs_device, core_support) ==
	       sizeof(struct ibv_device) + 5 * KIWI_PTR,
	       "verbs_device layout");
_Static_assert(offsetof(struct kiwi_verbs_mr, ibv_mr) == 0 &&
	       offsetof(struct kiwi_verbs_mr, mr_type) ==
	       sizeof(struct ibv_mr),
	       "verbs_mr layout");
_Static_assert(sizeof(struct kiwi_verbs_context_ops) ==
	       KIWI_VERBS_CONTEXT_OPS_COUNT * KIWI_PTR,
	       "verbs_context_ops must have 76 members");
_Static_assert(offsetof(struct kiwi_verbs_context_ops, poll_cq) ==
	       53 * KIWI_PTR &&
	       offsetof(struct kiwi_verbs_context_ops, unimport_pd) ==
	       75 * KIWI_PTR,
	       "verbs_context_ops order");
/* The library's ibv_cmd_* helpers compute the driver-data offset from their
 * own struct sizes: ours must have no padding, for every command we pass. */
#define KIWI_CMD_ASSERT(_name)						\
	_Static_assert(sizeof(struct kiwi_ibv_##_name) ==		\
		       sizeof(struct ib_uverbs_cmd_hdr) +		\
		       sizeof(struct ib_uverbs_##_name) &&		\
		       offsetof(struct kiwi_ibv_##_name, core) ==	\
		       sizeof(struct ib_uverbs_cmd_hdr), #_name " cmd")
KIWI_CMD_ASSERT(get_context);
KIWI_CMD_ASSERT(query_port);
KIWI_CMD_ASSERT(alloc_pd);
KIWI_CMD_ASSERT(reg_mr);
KIWI_CMD_ASSERT(create_cq);
KIWI_CMD_ASSERT(create_qp);
KIWI_CMD_ASSERT(query_qp);
KIWI_CMD_ASSERT(modify_qp);
KIWI_CMD_ASSERT(create_srq);
KIWI_CMD_ASSERT(modify_srq);
KIWI_CMD_ASSERT(query_srq);

#endif /* KIWI_VERBS_PRIVATE_H */
