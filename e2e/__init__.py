"""End-to-end runs against real third-party harnesses; not part of `make test` (see the Makefile)."""
