// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * nldev-name DEV: print how the kernel says DEV's name was assigned, the
 * RDMA netlink attribute that rdma-core's rdma_rename (53 and later)
 * reads to leave user-named devices alone: "user", "unknown", or "none"
 * when the kernel does not send the attribute (before 6.11).  Exit 1 if
 * DEV is not found, 2 on a netlink error.
 *
 * Raw netlink, so that it builds without libnl; the attribute's number
 * is uapi, defined here for the older headers that lack it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <linux/netlink.h>
#include <rdma/rdma_netlink.h>

#define NLDEV_ATTR_NAME_ASSIGN_TYPE	101	/* RDMA_NLDEV_ATTR_NAME_ASSIGN_TYPE */
#define NAME_ASSIGN_TYPE_USER		1	/* RDMA_NAME_ASSIGN_TYPE_USER */

/* 0: DEV not in this message; 1: found, *out set */
static int parse_dev(struct nlmsghdr *h, const char *dev, const char **out)
{
	int len = h->nlmsg_len - NLMSG_HDRLEN;
	struct nlattr *a = (struct nlattr *)((char *)h + NLMSG_HDRLEN);
	const char *name = NULL;
	int assign = -1;

	while (len >= (int)sizeof(*a) && a->nla_len >= sizeof(*a) &&
	       a->nla_len <= len) {
		void *data = (char *)a + NLA_HDRLEN;
		int type = a->nla_type & NLA_TYPE_MASK;

		if (type == RDMA_NLDEV_ATTR_DEV_NAME)
			name = data;
		else if (type == NLDEV_ATTR_NAME_ASSIGN_TYPE)
			assign = *(unsigned char *)data;
		len -= NLA_ALIGN(a->nla_len);
		a = (struct nlattr *)((char *)a + NLA_ALIGN(a->nla_len));
	}
	if (!name || strcmp(name, dev))
		return 0;
	*out = assign < 0 ? "none" :
	       assign == NAME_ASSIGN_TYPE_USER ? "user" : "unknown";
	return 1;
}

int main(int argc, char **argv)
{
	struct {
		struct nlmsghdr h;
	} req = {
		.h.nlmsg_len = NLMSG_LENGTH(0),
		.h.nlmsg_type = RDMA_NL_GET_TYPE(RDMA_NL_NLDEV,
						 RDMA_NLDEV_CMD_GET),
		.h.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP,
		.h.nlmsg_seq = 1,
	};
	static char buf[65536];
	const char *res = NULL;
	int fd, done = 0;

	if (argc != 2) {
		fprintf(stderr, "usage: %s DEV\n", argv[0]);
		return 2;
	}
	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_RDMA);
	if (fd < 0 || send(fd, &req, req.h.nlmsg_len, 0) < 0) {
		perror("netlink");
		return 2;
	}
	while (!done) {
		int n = recv(fd, buf, sizeof(buf), 0);
		struct nlmsghdr *h = (struct nlmsghdr *)buf;

		if (n < 0) {
			perror("recv");
			return 2;
		}
		for (; NLMSG_OK(h, n); h = NLMSG_NEXT(h, n)) {
			if (h->nlmsg_type == NLMSG_DONE) {
				done = 1;
				break;
			}
			if (h->nlmsg_type == NLMSG_ERROR) {
				struct nlmsgerr *e = NLMSG_DATA(h);

				fprintf(stderr, "netlink: %s\n",
					strerror(-e->error));
				return 2;
			}
			if (!res)
				parse_dev(h, argv[1], &res);
		}
	}
	close(fd);
	if (!res) {
		fprintf(stderr, "%s: no such RDMA device\n", argv[1]);
		return 1;
	}
	printf("%s\n", res);
	return 0;
}
