/* SPDX-License-Identifier: MIT */
#ifndef USTACK_COMMON_CACHE_DIR_H
#define USTACK_COMMON_CACHE_DIR_H

#include <stddef.h>

/**
 * Where ustack keeps what it derives from files (kallsyms images,
 * decompressed debug files): $USTACK_CACHE_DIR, else /var/cache/ustack for
 * root, else ~/.cache/ustack.
 * @param buf scratch for a path built from $HOME
 * @return the directory (@buf or a static string), "" when there is none
 */
const char *ustack_cache_dir(char *buf, size_t size);

#endif
