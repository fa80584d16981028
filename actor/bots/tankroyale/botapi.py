"""One repair to the official Python bot API, applied by every bot of ours that uses it.

The bot API (robocode-tank-royale 1.4) learns of a disconnect only from an abnormal close: it reads the
socket with `async for`, which websockets ends quietly when the server closes cleanly (code 1000 or 1001,
what a server sends when it shuts down). The bot then never hears it was disconnected, `start()` never
returns, and the API's non-daemon socket thread keeps the process alive forever: a tank that should
retry or exit hangs, and so does any interpreter that ran one. We treat the quiet end as the close it is.
"""

from __future__ import annotations

from typing import Any

_PATCHED = "_saclstm_clean_close"


def end_on_clean_close() -> None:
    """Make a clean close from the server reach the bot as a disconnect (idempotent)."""
    from robocode_tank_royale.bot_api.internal.websocket_handler import WebSocketHandler

    if getattr(WebSocketHandler, _PATCHED, False):
        return
    receive = WebSocketHandler.receive_messages

    async def receive_then_close(self: Any) -> None:
        await receive(self)
        if not self.closed_event.is_set():  # the loop ended without the API's own close handling
            ws = self.websocket
            await self.on_close(ws, getattr(ws, "close_code", None) or 1000, getattr(ws, "close_reason", None) or "")

    WebSocketHandler.receive_messages = receive_then_close  # type: ignore[method-assign]
    setattr(WebSocketHandler, _PATCHED, True)
