/* SPDX-License-Identifier: MIT */
/*
 * For the hostile_*.c programs that map a shared library's file by hand
 * (mmap, not dlopen) and call into it: the file offset of a symbol, read
 * from the file's own section headers. Test input is our own build output,
 * but every offset is still checked against the file's size.
 */
#ifndef HOSTILE_ELF_H
#define HOSTILE_ELF_H

#include <elf.h>
#include <stddef.h>
#include <string.h>

/* the file offset of symbol NAME in the symbol table of type SH_TYPE
 * (SHT_SYMTAB or SHT_DYNSYM) of the ELF file mapped at M (SIZE bytes); 0
 * when it is not there */
static inline size_t hostile_sym_offset(const unsigned char *m, size_t size, const char *name,
					unsigned int sh_type)
{
	const Elf64_Ehdr *eh = (const void *)m;
	const Elf64_Shdr *sh;
	const Elf64_Phdr *ph;

	if (size < sizeof(*eh) || memcmp(m, ELFMAG, SELFMAG) || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh->e_shoff + (size_t)eh->e_shnum * sizeof(*sh) > size ||
	    eh->e_phoff + (size_t)eh->e_phnum * sizeof(*ph) > size)
		return 0;
	sh = (const void *)(m + eh->e_shoff);
	ph = (const void *)(m + eh->e_phoff);
	for (int i = 0; i < eh->e_shnum; i++) {
		const Elf64_Shdr *st = &sh[i], *str;

		if (st->sh_type != sh_type || st->sh_link >= eh->e_shnum)
			continue;
		str = &sh[st->sh_link];
		if (st->sh_offset + st->sh_size > size || str->sh_offset + str->sh_size > size)
			return 0;
		for (size_t k = 0; k < st->sh_size / sizeof(Elf64_Sym); k++) {
			const Elf64_Sym *s = (const void *)(m + st->sh_offset + k * sizeof(Elf64_Sym));

			if (s->st_name >= str->sh_size ||
			    strcmp((const char *)m + str->sh_offset + s->st_name, name))
				continue;
			for (int j = 0; j < eh->e_phnum; j++)
				if (ph[j].p_type == PT_LOAD && s->st_value >= ph[j].p_vaddr &&
				    s->st_value < ph[j].p_vaddr + ph[j].p_filesz)
					return s->st_value - ph[j].p_vaddr + ph[j].p_offset;
		}
	}
	return 0;
}

#endif
