"""A real headless Chromium (Debian's `chromium`), driven over the DevTools protocol
(CDP) with aiohttp's websocket client: enough to open a page, read an xterm.js
terminal's screen, type keys and take a screenshot.

Plain CDP rather than Playwright: Playwright's Python package pins a driver and a
browser build of its own (which cannot be downloaded here) and may not speak to the
distribution's Chromium of another version; CDP is the browser's own protocol and
aiohttp is already a dependency, so this works with whatever Chromium apt installs.

`terminal_text` reads what the terminal shows from xterm.js's public buffer API
(`terminal.buffer.active.getLine(y).translateToString()`): textual-serve draws the
screen on a canvas (WebGL), so the DOM holds no text, and its page keeps the Terminal
in a closure. The instance is found once on the page's heap (`Runtime.queryObjects`,
as DevTools' console `queryObjects()` does) by the shape of that API, so nothing here
depends on textual-serve's bundle beyond its using xterm.js."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import itertools
import shutil
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp

from daemon.testing import stop_process, wait_until_async

CHROMIUM_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                  "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync",
                  "--window-size=1280,900", "--remote-debugging-address=127.0.0.1",
                  "--remote-debugging-port=0")
START_TIMEOUT_S = 45.0  # a first start on a loaded CI machine took over 20 s
CALL_TIMEOUT_S = 10.0

# Stores the page's xterm.js Terminal on `window.__relayTerminal`, called on the array of
# every object of the page's heap: the one with the buffer API (and a size).
FIND_TERMINAL = """function () {
  for (const o of this) {
    try {
      if (o && typeof o.rows === 'number' && o.buffer && o.buffer.active
          && typeof o.buffer.active.getLine === 'function') {
        window.__relayTerminal = o;
        return true;
      }
    } catch (e) {}
  }
  return false;
}"""
SCREEN = """(() => {
  const t = window.__relayTerminal, b = t.buffer.active, lines = [];
  for (let y = 0; y < t.rows; y++) {
    const line = b.getLine(b.viewportY + y);
    lines.push(line ? line.translateToString(true) : '');
  }
  return lines.join('\\n');
})()"""


def chromium_path() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")

# Keys that are not a letter: DOM `code`, Windows virtual key code, text typed.
KEYS = {"Escape": ("Escape", 27, ""), "Enter": ("Enter", 13, "\r"),
        "/": ("Slash", 191, "/"), "?": ("Slash", 191, "?"), ":": ("Semicolon", 186, ":"),
        "-": ("Minus", 189, "-")}


class CdpError(Exception):
    pass


class Page:
    """One page target's CDP session."""

    def __init__(self, ws: aiohttp.ClientWebSocketResponse) -> None:
        self.ws = ws
        self.ids = itertools.count(1)
        self.pending: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self.reader = asyncio.get_running_loop().create_task(self._read())

    async def _read(self) -> None:
        async for message in self.ws:
            if message.type != aiohttp.WSMsgType.TEXT:
                break
            data = message.json()
            future = self.pending.pop(data.get("id", -1), None)
            if future is not None and not future.done():
                future.set_result(data)
        for future in self.pending.values():
            if not future.done():
                future.set_exception(CdpError("the DevTools connection closed"))

    async def call(self, method: str, **params: Any) -> dict[str, Any]:
        call_id = next(self.ids)
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self.pending[call_id] = future
        await self.ws.send_json({"id": call_id, "method": method, "params": params})
        answer = await asyncio.wait_for(future, CALL_TIMEOUT_S)
        if "error" in answer:
            raise CdpError(f"{method}: {answer['error']}")
        result: dict[str, Any] = answer["result"]
        return result

    async def evaluate(self, expression: str) -> Any:
        answer = await self.call("Runtime.evaluate", expression=expression,
                                 returnByValue=True)
        if "exceptionDetails" in answer:
            raise CdpError(f"{expression[:60]}…: {answer['exceptionDetails']}")
        return answer["result"].get("value")

    async def find_terminal(self) -> bool:
        """Look for the page's xterm.js Terminal (see the module's note); True once found."""
        if await self.evaluate("!!window.__relayTerminal"):
            return True
        prototype = await self.call("Runtime.evaluate", expression="Object.prototype")
        objects = await self.call("Runtime.queryObjects",
                                  prototypeObjectId=prototype["result"]["objectId"])
        found = await self.call("Runtime.callFunctionOn", functionDeclaration=FIND_TERMINAL,
                                objectId=objects["objects"]["objectId"],
                                returnByValue=True)
        await self.call("Runtime.releaseObjectGroup", objectGroup="")
        return bool(found["result"].get("value"))

    async def terminal_text(self) -> str:
        """What the terminal shows now, a line per row (trailing blanks trimmed)."""
        text: str = await self.evaluate(SCREEN)
        return text

    async def press(self, key: str) -> None:
        """Type one key into the terminal, as a user does: a keydown (with the key's text
        for a printable one) and a keyup. `key` is a character or a name in KEYS."""
        await self.evaluate("document.querySelector('.xterm-helper-textarea').focus()")
        if key not in KEYS and not (len(key) == 1 and key.isalpha()):
            raise ValueError(f"press() knows letters and {', '.join(KEYS)}; not {key!r}")
        code, key_code, text = KEYS.get(key) or (f"Key{key.upper()}", ord(key.upper()), key)
        event = {"key": key, "code": code, "windowsVirtualKeyCode": key_code}
        await self.call("Input.dispatchKeyEvent", type="keyDown" if text else "rawKeyDown",
                        **event, **({"text": text} if text else {}))
        await self.call("Input.dispatchKeyEvent", type="keyUp", **event)

    async def type_text(self, text: str) -> None:
        """Type `text` into the terminal as the browser's text input (as a paste of it)."""
        await self.evaluate("document.querySelector('.xterm-helper-textarea').focus()")
        await self.call("Input.insertText", text=text)

    async def screenshot(self, path: Path) -> Path:
        shot = await self.call("Page.captureScreenshot", format="png")
        path.write_bytes(base64.b64decode(shot["data"]))
        return path


@contextlib.asynccontextmanager
async def chromium(profile: Path, executable: str) -> AsyncIterator[Page]:
    """A headless Chromium with a new empty profile in `profile`, stopped on exit; yields
    its first page's CDP session."""
    profile.mkdir(parents=True, exist_ok=True)
    with (profile / "chromium.log").open("wb") as log:
        process = subprocess.Popen([executable, *CHROMIUM_FLAGS,
                                    f"--user-data-dir={profile}", "about:blank"],
                                   stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                   stderr=log)
    try:
        port_file = profile / "DevToolsActivePort"

        async def devtools_port() -> int | None:
            if process.poll() is not None:
                log = (profile / "chromium.log").read_text(errors="replace")[-2000:]
                raise AssertionError(f"chromium exited with {process.returncode}: {log}")
            lines = port_file.read_text().split() if port_file.exists() else []
            return int(lines[0]) if lines else None

        port = await wait_until_async(devtools_port, timeout=START_TIMEOUT_S,
                                      message="chromium's DevTools")
        timeout = aiohttp.ClientTimeout(total=CALL_TIMEOUT_S)
        async with aiohttp.ClientSession(timeout=timeout) as http:

            async def page_target() -> str | None:
                async with http.get(f"http://127.0.0.1:{port}/json/list") as answer:
                    targets = await answer.json()
                pages = [t["webSocketDebuggerUrl"] for t in targets if t["type"] == "page"]
                return pages[0] if pages else None

            target = await wait_until_async(page_target, timeout=START_TIMEOUT_S,
                                            message="a page target")
            async with http.ws_connect(target, max_msg_size=0) as ws:
                page = Page(ws)
                try:
                    yield page
                finally:
                    page.reader.cancel()
    finally:
        stop_process(process, timeout=10)
