/* SPDX-License-Identifier: MIT */
/*
 * Allocation profiling (record --alloc): the programs on the allocator's
 * functions. Included at the end of record.bpf.c (one object, one
 * skeleton), after the probe helpers it uses.
 */
