// SPDX-License-Identifier: MIT
/*
 * Linked into the sanitizer build of the command ($(CHECK)/ustack) only:
 * the tests start it ~2,900 times, and each start and exit paid ~1,300
 * page faults for the sanitizer runtime's own .bss (5.7 MB, most of it
 * the stack depot's 4.4 MB table), which LeakSanitizer's exit check reads
 * whole, page by page: ~15 us each on this project's virtual machines.
 *
 * The array below aligns the executable's .bss at 2 MiB, and a
 * .preinit_array entry (run once the sanitizer runtime has started) backs
 * every whole 2 MiB of it with one transparent huge page (MADV_HUGEPAGE,
 * then MADV_COLLAPSE, which keeps what the runtime already wrote there):
 * `ustack --version` 2,300 -> 1,083 page faults. Where the kernel has no
 * MADV_COLLAPSE (< 6.1) or THP is off, the calls fail and nothing else
 * changes. Nothing here changes what the sanitizers check.
 */
#include <link.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>

#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25
#endif
#define HUGE_SZ (2ul << 20)

static char bss_align[1] __attribute__((aligned(HUGE_SZ), used));

static int main_bss(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	(void)data;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *p = &info->dlpi_phdr[i];
		uintptr_t a, e;

		if (p->p_type != PT_LOAD || !(p->p_flags & PF_W) || p->p_memsz <= p->p_filesz)
			continue;
		/* the zero-filled part after the file's bytes, whole 2 MiB only */
		a = (info->dlpi_addr + p->p_vaddr + p->p_filesz + HUGE_SZ - 1) & ~(HUGE_SZ - 1);
		e = (info->dlpi_addr + p->p_vaddr + p->p_memsz) & ~(HUGE_SZ - 1);
		if (e > a && !madvise((void *)a, e - a, MADV_HUGEPAGE))
			madvise((void *)a, e - a, MADV_COLLAPSE);
	}
	return 1; /* the executable is the first object: no other */
}

static void san_bss(int argc, char **argv, char **envp)
{
	(void)argc;
	(void)argv;
	(void)envp;
	dl_iterate_phdr(main_bss, NULL);
}

__attribute__((section(".preinit_array"), used)) static void (*san_bss_entry)(int, char **,
									       char **) = san_bss;
