"""The environment owns the setting's differences (issue 33): a method looks its per-setting calls up
in a table keyed by the environment's setting, and never branches on the setting's name."""

import re
from pathlib import Path

PROGRAMS = Path(__file__).resolve().parents[2] / "programs"


def test_no_program_branches_on_the_setting_name():
    branch = re.compile(r"setting\s*[!=]=|[!=]=\s*[\"'](pool|corpus)[\"']")
    found = [f"{path.name}:{n}" for path in sorted(PROGRAMS.glob("*.py"))
             for n, line in enumerate(path.read_text().splitlines(), 1) if branch.search(line)]
    assert found == []
