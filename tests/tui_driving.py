"""Driving the debugger in tests: terminal sizes, async test bodies, the screen as text."""

from __future__ import annotations

import asyncio
import functools

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
