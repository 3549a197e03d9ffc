"""What a fresh interpreter imports: the import-weight tests of the core, the CLI and the plugins."""

from __future__ import annotations

import json
import subprocess
import sys


def imported_by(code: str, modules: tuple[str, ...]) -> list[str]:
    """Runs `code` in a fresh interpreter and returns which of `modules` it has imported by its end;
    the code failing (an assertion of its own, say) fails the test with its stderr."""
    probe = f"{code}\nimport json, sys\nprint(json.dumps(sorted(m for m in {modules!r} if m in sys.modules)))\n"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.splitlines()[-1])
