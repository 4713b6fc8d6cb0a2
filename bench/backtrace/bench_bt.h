/* SPDX-License-Identifier: MIT */
/* Shared between bench_bt.c and the generated bench_gen.c (see run.sh). */
#ifndef BENCH_BT_H
#define BENCH_BT_H

#include <stdint.h>

#define NOIPA __attribute__((noipa))
/* keeps a value opaque and live: no tail calls, no folding */
#define KEEP(x) __asm__ volatile("" : "+r"(x))
#define BENCH_NGEN 512

typedef int (*bench_gen_fn)(uint32_t s, int d);
extern bench_gen_fn const bench_gen_tab[BENCH_NGEN];

/* The capture point at the bottom of every path (bench_bt.c). */
int bench_leaf(uint32_t s);

#endif
