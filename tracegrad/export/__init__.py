"""tracegrad.export (in progress)."""
