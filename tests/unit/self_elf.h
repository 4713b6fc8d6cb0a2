/* SPDX-License-Identifier: MIT */
/*
 * The test program's own ELF file, for the tests whose oracle is this
 * program (its functions, its build ID): its path, build ID and load bias.
 * Included by one test file each (static state).
 */
#ifndef USTACK_TEST_SELF_ELF_H
#define USTACK_TEST_SELF_ELF_H

#include <link.h>
#include <unistd.h>

#include "elf/elf_file.h"
#include "test.h"

static char self_path[4096];
static uint8_t self_bid[USTACK_BUILD_ID_MAX];
static int self_bid_len;
static uintptr_t self_bias;

static int self_first_object(struct dl_phdr_info *info, size_t size, void *data)
{
	self_bias = info->dlpi_addr;
	return 1; /* the main program comes first */
}

/* Path, bias and build ID of this program; SKIPs the test without
 * /proc/self/exe or without a build ID of at least @min_bid bytes. */
static __attribute__((unused)) void self_elf_load(int min_bid)
{
	ssize_t n = readlink("/proc/self/exe", self_path, sizeof(self_path) - 1);
	struct ustack_elf *elf;

	if (n <= 0)
		SKIP("no /proc/self/exe");
	self_path[n] = 0;
	dl_iterate_phdr(self_first_object, NULL);
	elf = ustack_elf__open(self_path);
	CHECK(elf);
	self_bid_len = ustack_elf__build_id(elf, self_bid, sizeof(self_bid));
	ustack_elf__close(elf);
	if (self_bid_len < min_bid)
		SKIP("test binary has no build ID (linker without --build-id)");
}

/* The file offset of @fn, a function of this program. */
static __attribute__((unused)) uint64_t self_offset_of(const void *fn)
{
	struct ustack_elf *elf = ustack_elf__open(self_path);
	uint64_t off = 0;

	CHECK(elf);
	CHECK_EQ(ustack_elf__vaddr_to_offset(elf, (uintptr_t)fn - self_bias, &off), 0);
	ustack_elf__close(elf);
	return off;
}

#endif
