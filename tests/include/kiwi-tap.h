/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * TAP output shared by kiwi's C test programs (tests/unit, tests/adversary,
 * tests/verbs).  Output is flushed per line so that a test killed by a
 * timeout or a guest panic still shows how far it got.
 */
#ifndef KIWI_TAP_H
#define KIWI_TAP_H

#include <stdarg.h>
#include <stdio.h>

static int tap_n, tap_failed;

static inline int tap_ok(int cond, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static inline int tap_ok(int cond, const char *fmt, ...)
{
	va_list ap;

	tap_n++;
	if (!cond)
		tap_failed++;
	printf("%sok %d - ", cond ? "" : "not ", tap_n);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
	return cond;
}

#define ok(cond, ...) tap_ok(!!(cond), __VA_ARGS__)

static inline void diag(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));

static inline void diag(const char *fmt, ...)
{
	va_list ap;

	printf("# ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

/* The plan line and the exit status of a test program. */
static inline int tap_end(void)
{
	printf("1..%d\n", tap_n);
	printf("# %d passed, %d failed\n", tap_n - tap_failed, tap_failed);
	fflush(stdout);
	return tap_failed ? 1 : 0;
}

#endif /* KIWI_TAP_H */
