"""``workers/rq_adapter.py`` pinned to the RQ range ``pyproject.toml`` allows.

For the lowest version the range allows (its ``>=`` bound) and the highest PyPI serves
within it, RQ alone is installed with pip into a folder of its own (``--target``, no
dependencies: the rest is the project's environment; pip's cache makes a second run
quick), put first on ``PYTHONPATH``, and ``test_rq_internals.py`` runs in a subprocess
against it. A release that changes what the module relies on fails here, naming the
version, before it reaches a worker.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
CONTRACT = ROOT / "tests" / "integration" / "test_rq_internals.py"
PIP_TIMEOUT_S = 240
RUN_TIMEOUT_S = 240


def rq_requirement() -> Requirement:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    [requirement] = [
        Requirement(line)
        for line in project["dependencies"]
        if Requirement(line).name.lower() == "rq"
    ]
    return requirement


def lowest_allowed(requirement: Requirement) -> str:
    [version] = [spec.version for spec in requirement.specifier if spec.operator == ">="]
    return version


def install_rq(spec: str, target: Path) -> str:
    """pip-install ``spec`` (RQ alone) into ``target``; returns the version installed."""
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "--no-deps",
            "--target",
            str(target),
            spec,
        ],
        check=True,
        timeout=PIP_TIMEOUT_S,
    )
    found = re.search(
        r"""VERSION\s*=\s*['"]([^'"]+)['"]""",
        (target / "rq" / "version.py").read_text(encoding="utf-8"),
    )
    assert found, "rq/version.py names no VERSION"
    return found.group(1)


def run_contract(target: Path, version: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "COV_"))}
    env["PYTHONPATH"] = os.pathsep.join(
        filter(None, [str(target), str(ROOT), os.environ.get("PYTHONPATH", "")])
    )
    env["TURNGRAPH_RQ_UNDER_TEST"] = version
    env["TURNGRAPH_RQ_TARGET"] = str(target)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(CONTRACT)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
    )


def contract_tests() -> int:
    return len(re.findall(r"^def test_", CONTRACT.read_text(encoding="utf-8"), re.M))


@pytest.mark.parametrize("end", ["lowest", "highest"])
def test_rq_internals_hold_at_both_ends_of_the_allowed_range(
    end: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    requirement = rq_requirement()
    spec = f"rq=={lowest_allowed(requirement)}" if end == "lowest" else str(requirement)
    target = tmp_path_factory.mktemp(f"rq-{end}")
    version = install_rq(spec, target)
    assert requirement.specifier.contains(version), (version, str(requirement))
    run = run_contract(target, version)
    summary = run.stdout.strip().splitlines()[-1] if run.stdout.strip() else ""
    assert run.returncode == 0, f"rq {version}:\n{run.stdout[-4000:]}\n{run.stderr[-2000:]}"
    assert summary.startswith(f"{contract_tests()} passed"), (version, summary)
