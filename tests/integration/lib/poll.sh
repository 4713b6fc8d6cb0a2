# Sourced by tests that poll a trace still being written (a handshake, "the
# trace shows X yet?"): $POLL_USTACK is the ustack those looks run, the
# release build (USTACK_RELEASE, default $TOP/build/ustack, which make check
# builds), else $USTACK. A look is not what a test checks; the ASan build
# costs ten times its CPU (a report of a small trace: ~0.1 s against
# ~0.01 s), and a handshake makes up to ten looks a second. What a test
# checks it still reads with $USTACK.
POLL_USTACK=${USTACK_RELEASE:-$TOP/build/ustack}
[ -x "$POLL_USTACK" ] || POLL_USTACK=$USTACK
