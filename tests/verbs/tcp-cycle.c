// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * cm-cycle's counterpart over plain TCP, the connection rate kiwi's is
 * reported against (tests/bench/perftest-wire.sh): the same steps as
 * cm-cycle's "ping" mode without the RDMA parts.
 *
 *   tcp-cycle server ADDR PORT TOTAL
 *	accepts TOTAL connections one after the other, each: the client's
 *	byte answered with one, then the client's close awaited, then
 *	closed; prints "server: accepted A errors E", exits 0 iff none
 *	failed.
 *   tcp-cycle client ADDR PORT CYCLES
 *	CYCLES times: connect, send a byte, wait for the server's, close;
 *	prints "client: cycles N failed F in MS ms", exits 0 iff none
 *	failed.
 *
 * Every wait has a time limit (30 s); ten failures in a row end the run.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#define WAIT_MS	30000

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

/* one byte (or the peer's close, n 0) within WAIT_MS: 1 byte, 0 EOF, -1 */
static int read_one(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	char c;

	if (poll(&p, 1, WAIT_MS) != 1)
		return -1;
	return (int)read(fd, &c, 1);
}

static int server(struct sockaddr_in *sa, long total)
{
	long accepted = 0, errors = 0, in_row = 0;
	int one = 1, l, fd;

	l = socket(AF_INET, SOCK_STREAM, 0);
	if (l < 0 || setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(l, (struct sockaddr *)sa, sizeof(*sa)) || listen(l, 128)) {
		perror("tcp-cycle: listen");
		return 1;
	}
	while (accepted < total && in_row < 10) {
		struct pollfd p = { .fd = l, .events = POLLIN };

		if (poll(&p, 1, WAIT_MS) != 1) {
			fprintf(stderr, "tcp-cycle: no connection in %d ms\n", WAIT_MS);
			errors++;
			break;
		}
		fd = accept(l, NULL, NULL);
		if (fd < 0) {
			errors++;
			in_row++;
			continue;
		}
		accepted++;
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		if (read_one(fd) != 1 || write(fd, "y", 1) != 1 ||
		    read_one(fd) != 0) {
			errors++;
			in_row++;
		} else {
			in_row = 0;
		}
		close(fd);
	}
	close(l);
	printf("server: accepted %ld errors %ld\n", accepted, errors);
	return !(accepted == total && !errors);
}

static int cycle(struct sockaddr_in *sa)
{
	int one = 1, fd, rv = -1;

	fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0)
		return -1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(fd, (struct sockaddr *)sa, sizeof(*sa)))
		fprintf(stderr, "tcp-cycle: connect: %s\n", strerror(errno));
	else if (write(fd, "x", 1) != 1)
		fprintf(stderr, "tcp-cycle: send: %s\n", strerror(errno));
	else if (read_one(fd) != 1)
		fprintf(stderr, "tcp-cycle: no byte from the server\n");
	else
		rv = 0;
	close(fd);
	return rv;
}

static int client(struct sockaddr_in *sa, long cycles)
{
	long n, failed = 0, in_row = 0;
	long long t0 = now_ms();

	for (n = 0; n < cycles && in_row < 10; n++) {
		if (cycle(sa)) {
			failed++;
			in_row++;
		} else {
			in_row = 0;
		}
	}
	printf("client: cycles %ld failed %ld in %lld ms\n", n, failed,
	       now_ms() - t0);
	return !(n == cycles && !failed);
}

int main(int argc, char **argv)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	long n;

	if (argc != 5 || (strcmp(argv[1], "server") && strcmp(argv[1], "client")) ||
	    inet_pton(AF_INET, argv[2], &sa.sin_addr) != 1 ||
	    (n = atol(argv[4])) <= 0) {
		fprintf(stderr, "usage: tcp-cycle server|client ADDR PORT N\n");
		return 2;
	}
	sa.sin_port = htons((unsigned short)atoi(argv[3]));
	setvbuf(stdout, NULL, _IOLBF, 0);
	return strcmp(argv[1], "server") ? client(&sa, n) : server(&sa, n);
}
