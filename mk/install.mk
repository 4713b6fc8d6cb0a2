# make install / make uninstall, and what they install that is generated:
# ustack.pc and the man pages (scripts/md2man.py turns docs/cli/<cmd>.md
# into ustack-<cmd>.1; ustack.1 comes from `ustack --help`).
#   make install PREFIX=/usr DESTDIR=/tmp/stage
PREFIX  ?= /usr/local
LIBDIR  ?= $(PREFIX)/lib
INCDIR  ?= $(PREFIX)/include
BINDIR  ?= $(PREFIX)/bin
MANDIR  ?= $(PREFIX)/share/man
PCDIR   ?= $(LIBDIR)/pkgconfig
INSTALL ?= install

MAN_CMDS  := $(patsubst docs/cli/%.md,%,$(wildcard docs/cli/*.md))
MAN_PAGES := $(BUILD)/man/ustack.1 $(patsubst %,$(BUILD)/man/ustack-%.1,$(MAN_CMDS))
PUB_HDRS  := $(wildcard include/ustack/*.h)

.PHONY: install uninstall man

man: $(MAN_PAGES)

$(BUILD)/man/ustack-%.1: docs/cli/%.md scripts/md2man.py $(USTACK_H)
	@mkdir -p $(@D)
	python3 scripts/md2man.py --name ustack-$* --version $(VERSION) --see-also ustack $< >$@.tmp
	mv $@.tmp $@

$(BUILD)/man/ustack.1: $(BUILD)/ustack scripts/md2man.py
	@mkdir -p $(@D)
	$(BUILD)/ustack --help >$@.help
	python3 scripts/md2man.py --name ustack --version $(VERSION) --help-text $@.help \
	    --see-also $(subst $(eval) ,$(comma),$(patsubst %,ustack-%,$(MAN_CMDS))) >$@.tmp
	mv $@.tmp $@
comma := ,

# The libraries a static link of libustack.a needs: pthread and dl (part
# of libc since glibc 2.34, listed for older ones). libbpf and libdw are
# opened with dlopen() when the BPF backend or source lines need them
# (src/common/dl_syms.h), so they are no link dependency. The library
# itself uses no zlib (the CLI does, for pprof).
$(BUILD)/ustack.pc: Makefile mk/install.mk $(USTACK_H)
	@mkdir -p $(@D)
	printf '%s\n' \
	    'prefix=$(PREFIX)' \
	    'libdir=$(LIBDIR)' \
	    'includedir=$(INCDIR)' \
	    '' \
	    'Name: ustack' \
	    'Description: user-space stack traces without frame pointers (SFrame/CFI unwinding)' \
	    'Version: $(VERSION)' \
	    'Cflags: -I$${includedir}' \
	    'Libs: -L$${libdir} -lustack' \
	    'Libs.private: -lpthread -ldl' >$@
.PHONY: $(BUILD)/ustack.pc

install: all man $(BUILD)/ustack.pc
	$(INSTALL) -d $(DESTDIR)$(LIBDIR) $(DESTDIR)$(INCDIR)/ustack $(DESTDIR)$(BINDIR) \
	    $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(PCDIR)
	$(INSTALL) -m 644 $(BUILD)/libustack.a $(DESTDIR)$(LIBDIR)/libustack.a
	$(INSTALL) -m 755 $(BUILD)/libustack.so.$(VERSION) $(DESTDIR)$(LIBDIR)/libustack.so.$(VERSION)
	ln -sf libustack.so.$(VERSION) $(DESTDIR)$(LIBDIR)/$(SONAME)
	ln -sf $(SONAME) $(DESTDIR)$(LIBDIR)/libustack.so
	$(INSTALL) -m 644 $(PUB_HDRS) $(DESTDIR)$(INCDIR)/ustack/
	$(INSTALL) -m 644 $(BUILD)/ustack.pc $(DESTDIR)$(PCDIR)/ustack.pc
	$(INSTALL) -m 755 $(BUILD)/ustack $(DESTDIR)$(BINDIR)/ustack
	$(INSTALL) -d $(DESTDIR)$(LIBDIR)/ustack
	$(INSTALL) -m 755 $(BUILD)/libustack-alloc.so $(DESTDIR)$(LIBDIR)/ustack/libustack-alloc.so
	$(INSTALL) -m 644 $(MAN_PAGES) $(DESTDIR)$(MANDIR)/man1/

uninstall:
	rm -f $(DESTDIR)$(LIBDIR)/libustack.a $(DESTDIR)$(LIBDIR)/libustack.so.$(VERSION) \
	    $(DESTDIR)$(LIBDIR)/$(SONAME) $(DESTDIR)$(LIBDIR)/libustack.so \
	    $(DESTDIR)$(PCDIR)/ustack.pc $(DESTDIR)$(BINDIR)/ustack \
	    $(DESTDIR)$(LIBDIR)/ustack/libustack-alloc.so \
	    $(patsubst include/ustack/%,$(DESTDIR)$(INCDIR)/ustack/%,$(PUB_HDRS)) \
	    $(patsubst $(BUILD)/man/%,$(DESTDIR)$(MANDIR)/man1/%,$(MAN_PAGES))
	-rmdir $(DESTDIR)$(INCDIR)/ustack $(DESTDIR)$(LIBDIR)/ustack 2>/dev/null
