/* SPDX-License-Identifier: MIT */
/* Library-internal logging through the callback set by ustack_set_print(). */
#ifndef USTACK_COMMON_LOG_H
#define USTACK_COMMON_LOG_H

#include <ustack/ustack.h>

__attribute__((format(printf, 2, 3)))
void ustack_log(enum ustack_print_level level, const char *fmt, ...);

#define pr_warn(fmt, ...)  ustack_log(USTACK_WARN, "ustack: " fmt, ##__VA_ARGS__)
#define pr_info(fmt, ...)  ustack_log(USTACK_INFO, "ustack: " fmt, ##__VA_ARGS__)
#define pr_debug(fmt, ...) ustack_log(USTACK_DEBUG, "ustack: " fmt, ##__VA_ARGS__)

#endif
