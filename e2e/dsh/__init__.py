"""`make e2e-dsh`: the real DeepSeek Harness (DSH) headless against `dshkit serve`, case by case,
checked against its own log, the mock's journal and dshkit's loop (`python -m e2e.dsh --help`)."""
