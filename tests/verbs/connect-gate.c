// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libconnect-gate.so: an LD_PRELOAD shim that holds a client's
 * rdma_connect() until its server has returned from rdma_listen(), through
 * a file: the server's rdma_listen() creates it, the client's
 * rdma_connect() waits for it.
 *
 * perftest -R (tests/cases/35-datapath.sh) needs it: after the parameter
 * exchange on its first connection, the client resolves, creates its data
 * QPs and connects them at once, while the server only then creates its
 * listener for them, on the same port (create_rdma_cm_connection(): a
 * handshake, then rdma_cm_client_connection() on one side and
 * rdma_cm_server_connection() on the other).  A client that gets there
 * first is refused, and perftest's own retry of that reuses the cm_ids it
 * has just destroyed.
 *
 *   KIWI_LISTEN_GATE=FILE         (server) a successful rdma_listen()
 *                                 creates FILE
 *   KIWI_LISTEN_GATE_SKIP=N       the first N calls do not (default 0)
 *   KIWI_CONNECT_GATE=FILE        (client) rdma_connect() waits for FILE
 *   KIWI_CONNECT_GATE_SKIP=N      the first N calls do not (default 0)
 *   KIWI_CONNECT_GATE_TIMEOUT=S   give up waiting after S seconds (60), say
 *                                 so on stderr and connect anyway
 *   KIWI_CONNECT_GATE_CONSUME=1   a connect that found FILE removes it, so
 *                                 the next one waits for the next listen
 *   KIWI_LISTEN_DELAY_MS=N        (server) rdma_listen() sleeps N ms first,
 *                                 as a descheduled server would: the race
 *                                 the gate closes, made certain
 *
 * A call that had to wait says for how long on stderr.
 *
 * Debian's qperf 0.4.11 (tests/cases/67-middleware.sh) has the same race:
 * cm_open_server() sends the client its port before it calls rdma_listen()
 * (moved after it upstream in qperf 118a571, "Fix rdmacm race", after
 * 0.4.11), and it listens once per test.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <rdma/rdma_cma.h>

typedef int (*kiwi_connect_fn)(struct rdma_cm_id *id,
			       struct rdma_conn_param *param);
typedef int (*kiwi_listen_fn)(struct rdma_cm_id *id, int backlog);

static unsigned int kiwi_connect_calls, kiwi_listen_calls;

static long kiwi_env_long(const char *name, long dflt)
{
	const char *v = getenv(name);

	return v && *v ? strtol(v, NULL, 10) : dflt;
}

/* The gate FILE if this call (number CALL) is subject to it. */
static const char *kiwi_gate(const char *name, const char *skip,
			     unsigned int call)
{
	const char *file = getenv(name);

	if (!file || !*file || (long)call < kiwi_env_long(skip, 0))
		return NULL;
	return file;
}

static void kiwi_gate_wait(const char *file)
{
	long timeout = kiwi_env_long("KIWI_CONNECT_GATE_TIMEOUT", 60);
	struct timespec tick = { .tv_nsec = 10 * 1000 * 1000 };
	long n;

	for (n = 0; n < timeout * 100; n++) {
		if (!access(file, F_OK)) {
			if (n)
				fprintf(stderr,
					"connect-gate: rdma_connect() held %ld ms\n",
					n * 10);
			return;
		}
		nanosleep(&tick, NULL);
	}
	fprintf(stderr, "connect-gate: %s did not appear within %ld s\n",
		file, timeout);
}

__attribute__((visibility("default")))
int rdma_listen(struct rdma_cm_id *id, int backlog)
{
	unsigned int call;
	kiwi_listen_fn real;
	const char *file;
	int ret, fd;
	long delay;

	real = (kiwi_listen_fn)dlsym(RTLD_NEXT, "rdma_listen");
	if (!real) {
		errno = ENOSYS;
		return -1;
	}
	call = __atomic_fetch_add(&kiwi_listen_calls, 1, __ATOMIC_RELAXED);
	delay = kiwi_env_long("KIWI_LISTEN_DELAY_MS", 0);
	if (delay > 0) {
		struct timespec ts = { .tv_sec = delay / 1000,
				       .tv_nsec = delay % 1000 * 1000000 };

		nanosleep(&ts, NULL);
	}
	ret = real(id, backlog);
	file = kiwi_gate("KIWI_LISTEN_GATE", "KIWI_LISTEN_GATE_SKIP", call);
	if (!ret && file) {
		fd = open(file, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
		if (fd < 0)
			perror("connect-gate: listen gate");
		else
			close(fd);
	}
	return ret;
}

__attribute__((visibility("default")))
int rdma_connect(struct rdma_cm_id *id, struct rdma_conn_param *param)
{
	unsigned int call;
	kiwi_connect_fn real;
	const char *file;

	real = (kiwi_connect_fn)dlsym(RTLD_NEXT, "rdma_connect");
	if (!real) {
		errno = ENOSYS;
		return -1;
	}
	call = __atomic_fetch_add(&kiwi_connect_calls, 1, __ATOMIC_RELAXED);
	file = kiwi_gate("KIWI_CONNECT_GATE", "KIWI_CONNECT_GATE_SKIP", call);
	if (file) {
		kiwi_gate_wait(file);
		if (kiwi_env_long("KIWI_CONNECT_GATE_CONSUME", 0))
			unlink(file);
	}
	return real(id, param);
}
