"""Curve-test fixtures: a Python ``random.Random`` on the shared per-test seed (printed on
failure by the top-level ``seed`` fixture; scalars are Python ints mod r)."""

from __future__ import annotations

import random

import pytest


@pytest.fixture
def prng(seed: int) -> random.Random:
    return random.Random(seed)
