"""Headless Chromium driven over the Chrome DevTools protocol (its websocket), for report tests.

`find_browser()` names the executable (`chromium`, the Debian package CI installs) or None;
`Browser()` starts it with the flags that work on a closed network and a fresh profile,
`browser.open(path)` loads a page from disk and returns a `Page` whose `evaluate(js)` runs a
script in it and whose `errors` are the console errors and uncaught exceptions seen so far.
"""

from __future__ import annotations

import itertools
import json
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-extensions", "--disable-dev-shm-usage", "--hide-scrollbars", "--mute-audio")


def find_browser() -> str | None:
    for name in CANDIDATES:
        found = shutil.which(name)
        if found:
            return found
    return None


class Page:
    def __init__(self, browser: Browser, session: str) -> None:
        self.browser = browser
        self.session = session
        self.errors: list[str] = []

    def send(self, method: str, **params: Any) -> dict[str, Any]:
        return self.browser.send(method, session=self.session, **params)

    def evaluate(self, expression: str) -> Any:
        reply = self.send("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in reply:
            raise AssertionError(f"script failed: {reply['exceptionDetails']}")
        return reply["result"].get("value")


class Browser:
    def __init__(self, executable: str | None = None, width: int = 1280, height: int = 900,
                 timeout: float = 30.0) -> None:
        import websocket

        self.executable = executable or find_browser()
        if self.executable is None:
            raise RuntimeError("no Chromium found")
        self.profile = Path(tempfile.mkdtemp(prefix="pathkit-chromium-"))
        self.timeout = timeout
        self.proc = subprocess.Popen([self.executable, *FLAGS, f"--user-data-dir={self.profile}",
                                      f"--window-size={width},{height}", "--remote-debugging-port=0",
                                      "about:blank"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        port_file = self.profile / "DevToolsActivePort"
        deadline = time.monotonic() + timeout
        while not (port_file.exists() and len(port_file.read_text().splitlines()) >= 2):
            if time.monotonic() > deadline or self.proc.poll() is not None:
                self.close()
                raise RuntimeError("Chromium did not open its DevTools port")
            time.sleep(0.05)
        port, path = port_file.read_text().splitlines()[:2]
        self.ws = websocket.create_connection(f"ws://127.0.0.1:{port}{path}", timeout=timeout,
                                              suppress_origin=True)
        self.ids = itertools.count(1)
        self.pages: dict[str, Page] = {}
        self.events: list[dict[str, Any]] = []

    def _dispatch(self, message: dict[str, Any]) -> None:
        page = self.pages.get(message.get("sessionId", ""))
        method, params = message.get("method"), message.get("params") or {}
        if page is not None:
            if method == "Runtime.exceptionThrown":
                details = params.get("exceptionDetails") or {}
                page.errors.append(f"exception: {(details.get('exception') or {}).get('description') or details}")
            elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
                page.errors.append("console: " + " ".join(str(a.get("value", a.get("description")))
                                                          for a in params.get("args", [])))
            elif method == "Log.entryAdded" and (params.get("entry") or {}).get("level") == "error":
                page.errors.append(f"log: {params['entry'].get('text')} {params['entry'].get('url', '')}")
        self.events.append(message)

    def send(self, method: str, session: str | None = None, **params: Any) -> dict[str, Any]:
        ident = next(self.ids)
        message: dict[str, Any] = {"id": ident, "method": method, "params": params}
        if session:
            message["sessionId"] = session
        self.ws.send(json.dumps(message))
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            reply = json.loads(self.ws.recv())
            if reply.get("id") == ident:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result") or {}
            self._dispatch(reply)
        raise TimeoutError(method)

    def wait_for(self, method: str, session: str) -> None:
        if any(e.get("method") == method and e.get("sessionId") == session for e in self.events):
            return
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            message = json.loads(self.ws.recv())
            self._dispatch(message)
            if message.get("method") == method and message.get("sessionId") == session:
                return
        raise TimeoutError(method)

    def open(self, path: Path) -> Page:
        target = self.send("Target.createTarget", url="about:blank")["targetId"]
        session = self.send("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        page = Page(self, session)
        self.pages[session] = page
        for domain in ("Page", "Runtime", "Log"):
            page.send(f"{domain}.enable")
        self.events.clear()
        page.send("Page.navigate", url=Path(path).resolve().as_uri())
        self.wait_for("Page.loadEventFired", session)
        return page

    def close(self) -> None:
        try:
            if getattr(self, "ws", None) is not None:
                self.ws.close()
        finally:
            if self.proc.poll() is None:
                self.proc.terminate()
                try:
                    self.proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
            shutil.rmtree(self.profile, ignore_errors=True)


# Figures that show: every <figure> image outside a folded part has loaded, has pixels and is laid
# out at a visible size.
FIGURES_JS = """(() => {
  const out = [];
  document.querySelectorAll('figure img').forEach(img => {
    const folded = img.closest('details:not([open])');
    if (folded) return;
    const r = img.getBoundingClientRect(), s = getComputedStyle(img);
    out.push({name: img.closest('figure').dataset.name, complete: img.complete, natural: img.naturalWidth,
              width: r.width, height: r.height, visible: s.visibility !== 'hidden' && s.display !== 'none'});
  });
  return out;
})()"""

OVERFLOW_JS = "document.documentElement.scrollWidth - window.innerWidth"


def filter_rows(page: Page, table_id: str, column: str, low: float | None = None, high: float | None = None,
                text: str = "") -> int:
    """Set the filters of table `table_id` (score `column` from low to high, a search text) as a user
    would, firing input events; the number of rows left visible."""
    script = f"""(() => {{
      const f = document.querySelector('div.filters[data-for="{table_id}"]');
      const set = (sel, v) => {{ const e = f.querySelector(sel); if (!e) return;
        e.value = v; e.dispatchEvent(new Event('input', {{bubbles: true}}));
        e.dispatchEvent(new Event('change', {{bubbles: true}})); }};
      const col = f.querySelector('.f-col');
      if (col) {{ const o = Array.from(col.options).find(o => o.text === {json.dumps(column)});
        if (!o) return -1; set('.f-col', o.value); }}
      set('.f-min', {json.dumps('' if low is None else str(low))});
      set('.f-max', {json.dumps('' if high is None else str(high))});
      set('.f-text', {json.dumps(text)});
      return Array.from(document.getElementById('{table_id}').tBodies[0].rows)
        .filter(r => r.style.display !== 'none').length;
    }})()"""
    return page.evaluate(script)
