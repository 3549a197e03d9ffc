"""The command line's commands and flags are a promise (docs/api/stability.md): the app walked now
equals the committed snapshot, so a removed or renamed flag fails here."""

from __future__ import annotations

import json

import pytest

from tests.compat import cli_surface

REWRITE = ".venv/bin/python -m tests.compat.cli_surface --write"


@pytest.fixture(scope="module")
def now() -> dict[str, dict[str, list[str]]]:
    return cli_surface.surface()


@pytest.fixture(scope="module")
def snapshot() -> dict[str, dict[str, list[str]]]:
    return json.loads(cli_surface.SNAPSHOT.read_text(encoding="utf-8"))


def _removed(old: dict, new: dict) -> list[str]:
    gone = [f"command `{cmd}`" for cmd in old if cmd not in new]
    for cmd in old.keys() & new.keys():
        gone += [f"`{cmd}` {kind[:-1]} {name}" for kind in ("arguments", "options")
                 for name in old[cmd][kind] if name not in new[cmd][kind]]
    return sorted(gone)


def test_no_command_argument_or_flag_of_the_snapshot_is_gone(now, snapshot):
    removed = _removed(snapshot, now)
    assert not removed, ("removed from the command line (keep them, deprecated, for one release: "
                         f"docs/api/stability.md): {'; '.join(removed)}")


def test_every_command_and_flag_is_in_the_snapshot(now, snapshot):
    added = _removed(now, snapshot)
    assert not added, f"new command-line surface missing from cli_surface.json (document it, then run {REWRITE}): " \
        + "; ".join(added)


def test_the_snapshot_holds_the_core_commands_and_a_plugin_command(snapshot):
    from pathkit_core.cli import CORE_COMMANDS

    assert {f"pathkit {c}" for c in CORE_COMMANDS} <= snapshot.keys()
    assert "--workdir" in snapshot["pathkit run"]["options"]
    assert "pathkit score" in snapshot  # a command of the pathkit distribution's own plugins


def test_a_removed_flag_is_reported():
    old = {"pathkit run": {"arguments": [], "options": ["--seed", "--workdir"]}, "pathkit gone": {}}
    new = {"pathkit run": {"arguments": [], "options": ["--workdir"]}}
    assert _removed(old, new) == sorted(["`pathkit run` option --seed", "command `pathkit gone`"])
