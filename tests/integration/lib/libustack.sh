# Sourced by the tests that compile a program against the library: sets
#   LIB  the archive to link: $CHECK_DIR/libustack.a (ASan+UBSan, what
#        make check builds) when it is there, else build/libustack.a
#   san  the compiler flags that archive needs ($SAN_FLAGS or nothing)
#   libs the libraries it needs ($LIB_LDLIBS)
# so that every such test links the same library the same way.
LIB=$TOP/$CHECK_DIR/libustack.a
[ -f "$LIB" ] || LIB=$TOP/build/libustack.a
san=
case "$LIB" in "$TOP/$CHECK_DIR/"*) san=${SAN_FLAGS:-} ;; esac
libs=${LIB_LDLIBS:--lpthread -ldl -lbpf -ldw -lelf}
