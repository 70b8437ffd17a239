"""tracegrad.optim (in progress)."""
