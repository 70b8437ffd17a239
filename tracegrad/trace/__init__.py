"""Recording what autograd did: the tracer, the Trace data model and the .tgtrace file."""
