"""Every parser of the client that reads text it did not write takes time linear in that text
(issue 27): hostile inputs of sizes n, 2n, 4n, 8n, and each doubling may cost at most ~2.5 times
the one before. A ratio within one run, never an absolute time: each size is timed as the minimum
of several batches of this process's CPU time (other processes on a busy machine do not count), a
batch long enough to measure (its call count fixed at the smallest size)."""

from __future__ import annotations

import time
from typing import Callable, List

import pytest

from svc.errors import parse_retry_after
from svc.rufid_algo import normalize_source
from svc.signature import derive_signature

MAX_RATIO = 2.5
BATCHES = 3
MIN_BATCH_SECONDS = 0.03
ATTEMPTS = 3


def _run(call: Callable[[str], object], text: str, reps: int) -> float:
    start = time.process_time()
    for _ in range(reps):
        try:
            call(text)
        except Exception:  # a refusal is an answer too: its time is what is measured
            pass
    return time.process_time() - start


def _batch_seconds(call: Callable[[str], object], text: str, reps: int) -> float:
    return min(_run(call, text, reps) for _ in range(BATCHES))


def _growth(call: Callable[[str], object], make: Callable[[int], str], n: int) -> List[float]:
    """The time ratios of sizes 2n/n, 4n/2n, 8n/4n, each the best of ATTEMPTS measurements (a
    busy machine can slow one size down; a super-linear path is over the bound every time). Stops
    at the first doubling over MAX_RATIO."""
    small = make(n)
    reps = 1
    while reps < 1_000_000 and _run(call, small, reps) < MIN_BATCH_SECONDS:  # also the warm-up
        reps *= 2
    ratios: List[float] = []
    for k in (1, 2, 4):
        low, high = make(n * k), make(n * 2 * k)
        ratio = float("inf")
        for _ in range(ATTEMPTS):
            ratio = min(ratio, _batch_seconds(call, high, reps) / _batch_seconds(call, low, reps))
            if ratio <= MAX_RATIO:
                break
        ratios.append(ratio)
        if ratio > MAX_RATIO:
            break
    return ratios


CASES = {
    # a Retry-After header of digits ending in a letter: the number-like check backtracked
    # quadratically (8,000 digits took 5 s)
    "retry-after digits": (parse_retry_after, lambda n: "1" * n + "x", 2_000),
    "retry-after point digits": (parse_retry_after, lambda n: "." + "1" * n + "e", 2_000),
    "plain trailing blanks": (lambda s: normalize_source(s, "ruby"), lambda n: "puts 1" + " " * n + "x", 100_000),
    "js block comments on one line": (lambda s: normalize_source(s, "js"), lambda n: "/**/" * (n // 4) + "x", 50_000),
    "python unterminated strings": (lambda s: normalize_source(s, "python"), lambda n: "'" * n, 50_000),
    "signature: binding annotations": (lambda s: derive_signature("add", "js", s), lambda n: "add: b " * (n // 7), 50_000),
    "signature: nested lists": (lambda s: derive_signature("add", "js", s), lambda n: "add = (" * (n // 14) + ")" * (n // 14), 50_000),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_parsers_take_linear_time(name: str) -> None:
    call, make, n = CASES[name]
    ratios = _growth(call, make, n)
    assert all(r <= MAX_RATIO for r in ratios), "%s: time ratios per doubling %s" % (name, ["%.2f" % r for r in ratios])


def test_retry_after_still_refuses_numbers_it_cannot_honour() -> None:
    assert parse_retry_after("1" * 400 + "x") is None
    assert parse_retry_after(".5e3") is None and parse_retry_after("-1") is None and parse_retry_after("Infinity") is None
    assert parse_retry_after("2.5") == 2.5
