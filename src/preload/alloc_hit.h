/* SPDX-License-Identifier: MIT */
/*
 * What libustack-alloc.so (src/preload/alloc.c) tells the uprobes of
 * record --alloc-via=preload (src/bpf/alloc.bpf.h): the flags of
 * ustack_alloc_hit() and the names of the three functions probed.
 */
#ifndef USTACK_PRELOAD_ALLOC_HIT_H
#define USTACK_PRELOAD_ALLOC_HIT_H

/* the block was not put in the table (full): its free will not be seen */
#define USTACK_ALLOC_UNTRACKED 1ull

#define USTACK_ALLOC_HIT_SYM "ustack_alloc_hit"
#define USTACK_FREE_HIT_SYM "ustack_free_hit"
#define USTACK_ALLOC_TALLY_SYM "ustack_alloc_tally"
#define USTACK_ALLOC_PRELOAD_NAME "libustack-alloc.so"

#endif
