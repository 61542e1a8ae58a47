"""What the mock server claims to implement of the server checklist."""

from __future__ import annotations

#: Items of the server checklist (`wire.md` §13) this server implements; each is checked by
#: tests/mock_server/test_claims.py against a server started with `--api-key`. S40 (FIM) is not.
CLAIMED_S_ITEMS: tuple[str, ...] = (
    *(f"S{i}" for i in range(1, 22)),
    "S21b",
    *(f"S{i}" for i in range(22, 40)),
    "S41",
)
