// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libdb-legacy.so: an LD_PRELOAD shim that makes kiwi.ko look like a
 * kernel without the SQ doorbell method (kiwi-abi.h): the method's ioctl
 * fails with EPROTONOSUPPORT, as ib_uverbs answers for a method it does
 * not know, so that libkiwi's fallback to the POST_SEND doorbell runs
 * (tests/cases/60-fastpath.sh).  Every other ioctl passes through.  The
 * first refusal appends a line to the file KIWI_DB_LEGACY_LOG names, so
 * that the test can tell the shim was in the way.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <unistd.h>
#include <rdma/ib_user_ioctl_cmds.h>
#include <rdma/rdma_user_ioctl_cmds.h>
#include <sys/ioctl.h>

#include "kiwi-abi.h"

typedef int (*kiwi_ioctl_fn)(int fd, unsigned long req, void *arg);

__attribute__((visibility("default")))
int ioctl(int fd, unsigned long req, ...)
{
	const struct ib_uverbs_ioctl_hdr *hdr;
	static kiwi_ioctl_fn real;
	va_list ap;
	void *arg;

	va_start(ap, req);
	arg = va_arg(ap, void *);
	va_end(ap);
	hdr = arg;
	if (req == RDMA_VERBS_IOCTL && hdr &&
	    hdr->object_id == UVERBS_OBJECT_QP &&
	    hdr->method_id == KIWI_IB_METHOD_QP_DOORBELL) {
		static int told;
		const char *log = getenv("KIWI_DB_LEGACY_LOG");

		if (log && !__atomic_exchange_n(&told, 1, __ATOMIC_RELAXED)) {
			int lfd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);

			if (lfd >= 0) {
				(void)!write(lfd, "refused\n", 8);
				close(lfd);
			}
		}
		errno = EPROTONOSUPPORT;
		return -1;
	}
	if (!real)
		real = (kiwi_ioctl_fn)dlsym(RTLD_NEXT, "ioctl");
	if (!real) {
		errno = ENOSYS;
		return -1;
	}
	return real(fd, req, arg);
}
