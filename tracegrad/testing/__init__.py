"""tracegrad.testing (in progress)."""
