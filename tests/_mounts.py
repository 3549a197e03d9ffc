"""Run a command with a small or read-only filesystem mounted, in a private mount namespace.

`unshare --user --map-root-user --mount` gives the command its own mount table (no root on the
host needed where user namespaces are allowed), so a tmpfs of a few hundred KiB can stand for a
full disk and a read-only tmpfs for a read-only mount; both vanish when the command ends.
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
from pathlib import Path

import pytest


def run_on_tmpfs(mount_point: Path, command: list[str], *, size_kib: int, read_only: bool = False,
                 setup: str = "", env: dict[str, str] | None = None,
                 timeout: float = 300) -> subprocess.CompletedProcess:
    """Mount a tmpfs of `size_kib` at `mount_point`, run `setup` (shell) then `command` there.

    Skips the calling test where this machine does not allow it.
    """
    if shutil.which("unshare") is None:
        pytest.skip("unshare is not available")
    mount_point.mkdir(parents=True, exist_ok=True)
    probe = subprocess.run(["unshare", "-rm", "sh", "-c", f"mount -t tmpfs -o size=64k tmpfs {mount_point}"],
                           capture_output=True, text=True)
    if probe.returncode != 0:
        pytest.skip(f"cannot mount a private tmpfs here: {probe.stderr.strip()}")
    options = f"size={size_kib}k" + (",ro" if read_only else "")
    script = (f"mount -t tmpfs -o {options} tmpfs {shlex.quote(str(mount_point))} && "
              f"{setup + ' && ' if setup else ''}exec {shlex.join(command)}")
    return subprocess.run(["unshare", "-rm", "sh", "-c", script], capture_output=True, text=True,
                          env=env, timeout=timeout)
