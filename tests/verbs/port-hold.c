// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Local TCP ports held the way another program's connections hold them
 * (tests/cases/38-load.sh): a listener on ADDR:PORT and COUNT connections
 * to it from ADDR, each client socket on a port TCP took from
 * ip_local_port_range.  rdma_cm picks its ports from the same range
 * without looking at TCP's, so a connect of an iWARP provider that binds
 * rdma_cm's port meets these.
 *
 *   port-hold ADDR PORT COUNT
 *	prints "port-hold: held N ports (LOW-HIGH)" once all COUNT are
 *	connected, then sleeps until killed; exits 1 if any socket call
 *	fails.
 *
 * The connections wait in the listener's accept queue (never accepted:
 * COUNT must stay below net.core.somaxconn, 4096).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <sys/resource.h>
#include <sys/socket.h>

int main(int argc, char **argv)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	struct sockaddr_in me;
	socklen_t len;
	struct rlimit rl;
	int lfd, fd, i, one = 1;
	unsigned int lo = 65535, hi = 0, port;
	long count;

	if (argc != 4 || inet_pton(AF_INET, argv[1], &sa.sin_addr) != 1) {
		fprintf(stderr, "usage: port-hold ADDR PORT COUNT\n");
		return 2;
	}
	sa.sin_port = htons(atoi(argv[2]));
	count = atol(argv[3]);
	/* one descriptor per connection, and a few */
	rl.rlim_cur = rl.rlim_max = count + 64;
	if (setrlimit(RLIMIT_NOFILE, &rl)) {
		perror("port-hold: RLIMIT_NOFILE");
		return 1;
	}
	lfd = socket(AF_INET, SOCK_STREAM, 0);
	if (lfd < 0 ||
	    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) ||
	    listen(lfd, count)) {
		perror("port-hold: listener");
		return 1;
	}
	for (i = 0; i < count; i++) {
		fd = socket(AF_INET, SOCK_STREAM, 0);
		if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
			fprintf(stderr, "port-hold: connection %d: %s\n", i,
				strerror(errno));
			return 1;
		}
		len = sizeof(me);
		if (getsockname(fd, (struct sockaddr *)&me, &len)) {
			perror("port-hold: getsockname");
			return 1;
		}
		port = ntohs(me.sin_port);
		lo = port < lo ? port : lo;
		hi = port > hi ? port : hi;
	}
	printf("port-hold: held %ld ports (%u-%u)\n", count, lo, hi);
	fflush(stdout);
	for (;;)
		pause();
}
