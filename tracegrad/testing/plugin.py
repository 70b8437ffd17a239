"""The tracegrad pytest plugin (pytest11 entry point). Imports nothing heavy at load."""
