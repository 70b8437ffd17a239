"""Driving the debugger in tests: terminal sizes, async test bodies, the screen as text,
answering its prompts."""

from __future__ import annotations

import asyncio
import functools

from textual.widgets import Input

BIG = (120, 40)
SMALL = (80, 24)


def run_async(test):
    """Run an async test body with asyncio.run (no pytest-asyncio plugin is installed)."""
    @functools.wraps(test)
    def wrapper(*args, **kwargs):
        return asyncio.run(test(*args, **kwargs))
    return wrapper


def screen_text(app) -> str:
    """What the terminal shows, as plain text (one line per row)."""
    strips = app.screen._compositor.render_strips()
    return "\n".join("".join(segment.text for segment in strip) for strip in strips)


async def answer(pilot, key: str, text: str) -> None:
    """Open a prompt with ``key``, give it ``text`` and press enter (the text is set at
    once: typing it key by key costs a screen refresh per character; test_tui_app's
    go-to-step test types into the prompt key by key)."""
    await pilot.press(key)
    pilot.app.screen.query_one(Input).value = text
    await pilot.press("enter")
