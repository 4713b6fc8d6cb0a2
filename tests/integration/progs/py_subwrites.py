# SPDX-License-Identifier: MIT
# py_subwrites.py N: the main thread writes N times to /dev/null through
# main_outer -> main_leaf while a second thread runs code in a
# sub-interpreter that writes N times through sub_outer -> sub_leaf. Prints
# "main M" and "sub S", the writes each made. record_python.sh checks that
# every recorded Python path is one of the two, whole, never mixed: a
# sub-interpreter's thread state names the thread that made it (3.11,
# 3.12), not the one that runs it.
import os
import sys
import threading
import time

try:
    import _interpreters as interps  # 3.13
except ImportError:
    import _xxsubinterpreters as interps  # 3.11, 3.12

N = int(sys.argv[1])
go_r, go_w = os.pipe()
SUB = f"""
import os
fd = os.open("/dev/null", os.O_WRONLY)
def sub_leaf():
    os.write(fd, b"s")
def sub_outer():
    os.read({go_r}, 1)
    for _ in range({N}):
        sub_leaf()
sub_outer()
"""
# a second for the recorder to find the interpreter (pyenv's python3.X is
# a stub until libpython is mapped; the recorder looks again on a timer)
time.sleep(1)
iid = interps.create()
t = threading.Thread(target=interps.run_string, args=(iid, SUB))
t.start()
fd = os.open("/dev/null", os.O_WRONLY)


def main_leaf():
    os.write(fd, b"m")


def main_outer():
    os.write(go_w, b"x")  # both write at once from here on
    for _ in range(N):
        main_leaf()


main_outer()
t.join()
time.sleep(1)  # the recorder reads the code objects while the program lives
print("main %d" % N)
print("sub %d" % N)
