/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Minimal TAP output for the protocol core's tests. */
#ifndef KIWI_TAP_H
#define KIWI_TAP_H

#include <stdarg.h>
#include <stdio.h>

static int tap_n, tap_fail;

static inline int tap_ok(int cond, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static inline int tap_ok(int cond, const char *fmt, ...)
{
	va_list ap;

	tap_n++;
	if (!cond)
		tap_fail++;
	printf("%sok %d - ", cond ? "" : "not ", tap_n);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	return cond;
}

#define ok(cond, ...) tap_ok(!!(cond), __VA_ARGS__)

static inline void tap_diag(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));

static inline void tap_diag(const char *fmt, ...)
{
	va_list ap;

	printf("# ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
}

#endif /* KIWI_TAP_H */
