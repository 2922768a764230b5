"""Pure renderers: planned objects in, plain manifest dicts out (no cdk8s, no I/O)."""
