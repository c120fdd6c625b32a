"""The OpenMP wait policy is the entry point's choice: set when absent, an operator's kept, and
never touched by importing cuzk."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from cuzk.openmp import DEFAULT_WAIT_POLICY, configure_openmp


def test_sets_the_default_when_absent(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    assert configure_openmp() == DEFAULT_WAIT_POLICY == os.environ["OMP_WAIT_POLICY"]


def test_an_operator_choice_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OMP_WAIT_POLICY", "ACTIVE")
    assert configure_openmp() == "ACTIVE" == os.environ["OMP_WAIT_POLICY"]


def test_importing_cuzk_leaves_the_environment_alone() -> None:
    """A library import has no process-wide side effect (the field kernels' package included);
    the ``cuzk`` command sets the policy itself."""
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    code = (
        "import os, cuzk.field, cuzk.poly, cuzk.gadgets.poseidon, cuzk.engine;"
        "print(os.environ.get('OMP_WAIT_POLICY'))"
    )
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "None"


def test_the_cuzk_command_sets_it(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from cuzk.cli.main import main

    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    missing = str(tmp_path / "missing")
    assert main(["verify", "--vk", missing, "--proof", missing, "--inputs", missing]) == 2
    assert os.environ["OMP_WAIT_POLICY"] == DEFAULT_WAIT_POLICY
