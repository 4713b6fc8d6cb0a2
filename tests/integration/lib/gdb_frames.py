# gdb's frames of every thread, for the tests that compare ustack with gdb
# (snapshot_core.sh, stack_switch.sh): gdb -batch -nx -ex "source THIS" ...
# prints "TID n" then "#i 0xpc name kind" (kind: normal, inline, tailcall),
# past main and the entry point, at most $GDB_FRAMES_MAX (default 256)
# frames a thread.
import os
import gdb

limit = int(os.environ.get("GDB_FRAMES_MAX", "256"))
gdb.execute("set backtrace past-main on")
gdb.execute("set backtrace past-entry on")
for inf in gdb.inferiors():
    for th in sorted(inf.threads(), key=lambda t: t.ptid[1]):
        th.switch()
        print("TID %d" % th.ptid[1])
        f = gdb.newest_frame()
        i = 0
        while f is not None and i < limit:
            kind = {gdb.INLINE_FRAME: "inline", gdb.TAILCALL_FRAME: "tailcall"}.get(f.type(), "normal")
            print("#%d 0x%x %s %s" % (i, f.pc(), f.name() or "??", kind))
            i += 1
            try:
                f = f.older()
            except gdb.error:
                break
