#!/usr/bin/python3
"""Open a speedscope JSON file in the speedscope app of the npm package, in
headless Chromium, the way the package's own `speedscope FILE` command does
(index.html#localProfilePath=JS, where JS calls
speedscope.loadFileFromBase64(name, data)), driven over the Chrome DevTools
protocol. Prints one line per finding; exit status 0 when the page logged no
error and every expected text appears in the page, 1 otherwise, 77 when
something needed is missing.

usage: speedscope_view.py INDEX_HTML PROFILE_JSON SCREENSHOT_PNG TEXT...
"""
import base64
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request

try:
    import websocket  # Debian python3-websocket
except ImportError:
    print("missing: python3-websocket")
    sys.exit(77)


def main():
    index, profile, shot, texts = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if not chromium:
        print("missing: chromium")
        sys.exit(77)
    tmp = tempfile.mkdtemp(prefix="ustack-ss-")
    js = os.path.join(tmp, "load.js")
    with open(profile, "rb") as f:
        data = base64.b64encode(f.read()).decode()
    with open(js, "w") as f:
        f.write("speedscope.loadFileFromBase64(%s, %s)" %
                (json.dumps(os.path.basename(profile)), json.dumps(data)))
    prof = os.path.join(tmp, "profile")
    proc = subprocess.Popen(
        [chromium, "--headless=new", "--no-sandbox", "--disable-gpu",
         "--disable-dev-shm-usage", "--no-first-run", "--user-data-dir=" + prof,
         "--remote-debugging-port=0", "--window-size=1400,900", "about:blank"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    errors, ok = [], False
    try:
        port = None
        for _ in range(300):  # Chromium writes its port here once it listens
            try:
                with open(os.path.join(prof, "DevToolsActivePort")) as f:
                    port = int(f.readline())
                break
            except (OSError, ValueError):
                time.sleep(0.1)
        if not port:
            print("error: chromium did not start its DevTools endpoint")
            sys.exit(1)
        pages = json.load(urllib.request.urlopen("http://127.0.0.1:%d/json/list" % port))
        ws_url = [p for p in pages if p.get("type") == "page"][0]["webSocketDebuggerUrl"]
        ws = websocket.create_connection(ws_url, timeout=30)
        seq = [0]

        def send(method, **params):
            seq[0] += 1
            ws.send(json.dumps({"id": seq[0], "method": method, "params": params}))
            want = seq[0]
            while True:
                m = json.loads(ws.recv())
                note(m)
                if m.get("id") == want:
                    return m.get("result", {})

        def note(m):
            meth, p = m.get("method"), m.get("params", {})
            if meth == "Runtime.exceptionThrown":
                d = p.get("exceptionDetails", {})
                errors.append("exception: %s %s" % (d.get("text"),
                              d.get("exception", {}).get("description", "")))
            elif meth == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
                errors.append("console.%s: %s" % (p["type"], " ".join(
                    str(a.get("value", a.get("description", ""))) for a in p.get("args", []))))
            elif meth == "Page.javascriptDialogOpening":
                # speedscope reports a file it cannot import with alert(),
                # which blocks the page until dismissed
                errors.append("dialog: %s" % p.get("message"))
                seq[0] += 1
                ws.send(json.dumps({"id": seq[0], "method": "Page.handleJavaScriptDialog",
                                    "params": {"accept": True}}))
            elif meth == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
                e = p["entry"]
                errors.append("log: %s %s" % (e.get("text"), e.get("url", "")))

        send("Runtime.enable")
        send("Log.enable")
        send("Page.enable")
        url = "file://%s#localProfilePath=%s" % (os.path.abspath(index), js)
        send("Page.navigate", url=url)
        body = ""
        deadline = time.time() + 30
        while time.time() < deadline:
            r = send("Runtime.evaluate", expression="document.body ? document.body.innerText : ''",
                     returnByValue=True)
            body = r.get("result", {}).get("value", "") or ""
            if all(t in body for t in texts):
                ok = True
                break
            time.sleep(0.3)
        time.sleep(0.5)  # let late errors of the first render arrive
        send("Runtime.evaluate", expression="1")
        png = send("Page.captureScreenshot", format="png")
        with open(shot, "wb") as f:
            f.write(base64.b64decode(png.get("data", "")))
        ws.close()
        for t in texts:
            print("%s: %r" % ("found" if t in body else "MISSING", t))
        if not ok:
            print("page text: %r" % body[:300])
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
        shutil.rmtree(tmp, ignore_errors=True)
    for e in errors:
        print("error: " + e)
    sys.exit(0 if ok and not errors else 1)


if __name__ == "__main__":
    main()
