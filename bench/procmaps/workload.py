# Helper for bench/procmaps: a process with hundreds of mappings (python3
# with many extension modules and their libraries) that keeps calling into
# them, so stacks sampled from it cross many files. SIGUSR1 makes it idle
# (sleeping: no mmap/munmap churn competing for the target's mm locks).
import importlib, sys
MODS = """ssl hashlib sqlite3 ctypes decimal json csv zlib bz2 lzma array math cmath
select socket struct binascii unicodedata pyexpat xml.etree.ElementTree readline curses
mmap fcntl termios grp resource _posixsubprocess _multiprocessing _queue _asyncio
_bisect _blake2 _contextvars _datetime _heapq _json _lsprof _md5 _opcode _pickle
_random _sha1 _sha256 _sha512 _sha3 _socket _statistics _struct _uuid _zoneinfo
_crypt _dbm _gdbm _lzma _bz2 _ctypes _decimal _hashlib _ssl _sqlite3 _curses
_curses_panel uuid""".split()
loaded = 0
for m in MODS:
    try:
        importlib.import_module(m)
        loaded += 1
    except Exception:
        pass
import signal, time
busy = True
def _idle(signum, frame):
    global busy
    busy = False
signal.signal(signal.SIGUSR1, _idle)
import hashlib, zlib, bz2, lzma, json, decimal, sqlite3, unicodedata, xml.etree.ElementTree as ET
print(f"ready {loaded}", flush=True)
data = bytes(range(256)) * 256
db = sqlite3.connect(":memory:")
db.execute("create table t(a, b)")
db.executemany("insert into t values (?, ?)", [(i, str(i)) for i in range(2000)])
decimal.getcontext().prec = 60
while busy:
    hashlib.sha256(data).digest()
    hashlib.md5(data).digest()
    zlib.compress(data, 6)
    bz2.compress(data[:8192])
    lzma.compress(data[:8192])
    json.loads(json.dumps({"k": list(range(300))}))
    decimal.Decimal(2).sqrt()
    db.execute("select sum(a), count(b) from t where b like '%7%'").fetchone()
    unicodedata.normalize("NFKD", "Ça va très bien " * 50)
    ET.fromstring("<a>" + "<b x='1'>t</b>" * 200 + "</a>")
while True:
    time.sleep(3600)
