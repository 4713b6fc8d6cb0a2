/* SPDX-License-Identifier: MIT */
/* Shared between bench_full.c and the generated full_gen.c (gen_full.sh). */
#ifndef BENCH_FULL_H
#define BENCH_FULL_H

#include <stdint.h>

#define FULL_NOIPA __attribute__((noipa))
/* keeps a value opaque and live: no tail calls, no folding */
#define FULL_KEEP(x) __asm__ volatile("" : "+r"(x))
#define FULL_NFN 64

typedef int (*full_fn)(uint32_t s, int d);
extern full_fn const full_tab[FULL_NFN];

/* The capture point at the bottom of every path (bench_full.c). */
int full_leaf(uint32_t s);

#endif
