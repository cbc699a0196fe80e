/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* kiwi's debugfs object counts, read by the verbs test programs. */
#ifndef KIWI_OBJECTS_H
#define KIWI_OBJECTS_H

#include <stdio.h>
#include <string.h>

#define OBJECTS_FILE	"/sys/kernel/debug/kiwi/objects"

/* Returns the count of `name', or -1 when absent or unreadable. */
static inline long kiwi_count(const char *name)
{
	char line[128], key[64];
	long val, found = -1;
	FILE *f = fopen(OBJECTS_FILE, "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%63s %ld", key, &val) == 2 &&
		    !strcmp(key, name))
			found = val;
	fclose(f);
	return found;
}

#endif /* KIWI_OBJECTS_H */
