"""tracegrad.nn (in progress)."""
