/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* kiwi: what the top floor (main.c, device.c) shares. */
#ifndef KIWI_H
#define KIWI_H

#include "verbs/verbs.h"
#include "cm/cm.h"

/* device.c */
extern const struct ib_device_ops kiwi_dev_ops;
void kiwi_dev_attrs_init(void);

#endif /* KIWI_H */
