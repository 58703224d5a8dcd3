"""The house rules of docs/development.md ("The map"): no import circle anywhere, the packages
in layers importing only downward (both as pyproject.toml's [tool.importlinter] contracts say),
and no package too large to read."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "strongroom"
MAX_PACKAGE_LINES = 3_000


def test_no_import_circle_and_every_package_imports_only_the_layers_below_it():
    lint = Path(sys.executable).with_name("lint-imports")
    result = subprocess.run(
        [str(lint), "--no-cache"], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "2 kept, 0 broken" in result.stdout


def test_no_package_is_over_3000_lines():
    sizes = {
        package.name: sum(len(f.read_text().splitlines()) for f in package.rglob("*.py"))
        for package in PACKAGE.iterdir()
        if (package / "__init__.py").exists()
    }
    assert len(sizes) > 10
    too_large = {name: lines for name, lines in sizes.items() if lines > MAX_PACKAGE_LINES}
    assert not too_large
