"""`pathkit list ...` and `pathkit info NAME`: what the loaded plugins provide."""

from __future__ import annotations

import difflib

import typer
from rich.markup import escape

from pathkit_core.cli.common import console, print_json, print_table, user_errors
from pathkit_core.contracts import PathkitError
from pathkit_core.plugins import get_plugin_manager


def _list_plugins(as_json: bool) -> None:
    registry = get_plugin_manager()
    records = [r.as_dict() for r in sorted(registry.records.values(), key=lambda r: r.name)]
    if as_json:
        print_json(records)
        return
    rows = []
    for r in records:
        comps = "; ".join(f"{k}: {', '.join(v)}" for k, v in r["components"].items() if v)
        status = "ok" if r["status"] == "ok" else f"{r['status']}: {r['error']}" if r["error"] else r["status"]
        if r["clashes"]:
            status += "; clash: " + "; ".join(r["clashes"])
        if r["deprecations"]:
            status += "; deprecated imports: " + "; ".join(r["deprecations"])
        rows.append((r["name"], r["distribution"], r["version"], status, comps))
    print_table("pathkit plugins", ["plugin", "distribution", "version", "status", "components"], rows)


def _addresses(registry, kind: str) -> list[tuple[str, str]]:
    """(name to use, registered name): each plain name, then `distribution:name` for each registration
    that shares its name with another plugin's (all of them reachable)."""
    out = []
    for name in registry.names(kind):
        out.append((name, name))
        ranked = registry.providers.get((kind, name), [])
        if len(ranked) > 1:
            out += [(registry.qualified(kind, name, p), name) for p in ranked]
    return out


def _list_kind(kind: str, as_json: bool) -> None:
    registry = get_plugin_manager()
    items = []
    for address, name in _addresses(registry, kind):
        info = registry.get(kind, address).describe()
        owner = registry.owner_of(kind, address)
        info["name"] = address
        info["plugin"] = owner.name if owner else ""
        info["distribution"] = owner.distribution if owner else ""
        clashing = registry.conflicts.get((kind, name))
        if clashing:
            info["clash"] = f"{name!r} is registered by {', '.join(clashing)}; the plain name is {clashing[0]}'s"
        items.append(info)
    if as_json:
        print_json(items)
        return
    extra = registry.bases[kind].list_columns
    rows = [
        (i["name"], *(", ".join(i[c]) if isinstance(i[c], list) else i[c] for c in extra),
         i["distribution"], i["description"] + (f" [clash: {i['clash']}]" if i.get("clash") else ""))
        for i in items
    ]
    print_table(f"{kind}s", ["name", *extra, "distribution", "description"], rows)


def _task_users(registry, task: str) -> dict[str, list[str]]:
    """The datasets, generators and metrics registered for a task."""
    task_cls = registry.get("task", task)
    return {"datasets": [n for n in registry.names("dataset") if registry.get("dataset", n).task == task],
            "generators": [n for n in registry.names("generator") if task_cls.solved_by(registry.get("generator", n))],
            "metrics": [n for n in registry.names("metric") if task in registry.get("metric", n).tasks]}


def register(app: typer.Typer) -> None:
    @app.command("list")
    @user_errors
    def list_cmd(
        what: str = typer.Argument(
            "plugins", help="plugins, or a component kind in the plural: tasks, encoders, generators, datasets, "
            "metrics, segmenters, or any kind a plugin adds"
        ),
        as_json: bool = typer.Option(False, "--json", help="Print JSON instead of a table."),
    ) -> None:
        """List plugins, or the registered components of one kind."""
        kind_of = {f"{k}s": k for k in get_plugin_manager().kinds}
        if what == "plugins":
            _list_plugins(as_json)
        elif what in kind_of:
            _list_kind(kind_of[what], as_json)
        else:
            options = ["plugins", *kind_of]
            close = difflib.get_close_matches(what, options, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise PathkitError(f"cannot list {what!r}{hint}; choose one of {', '.join(options)}")

    @app.command("info")
    @user_errors
    def info_cmd(
        name: str = typer.Argument(..., help="A component name (task, encoder, generator, dataset, metric, ...)."),
        as_json: bool = typer.Option(False, "--json"),
    ) -> None:
        """Show everything known about a component."""
        registry = get_plugin_manager()
        qualified = [p.component for kind in registry.kinds if (p := registry.provider_of(kind, name))]
        found = qualified or registry.find(name) or registry.find(name.partition(":")[0])
        if not found:
            every = sorted({n for kind in registry.kinds for n in registry.names(kind)})
            close = difflib.get_close_matches(name, every, n=3, cutoff=0.5)
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            raise PathkitError(f"no component named {name!r}{hint}")
        infos = []
        for comp in found:
            info = comp.describe()
            owner = registry.owner_of(comp.kind, name)
            info["plugin"] = owner.as_dict() if owner else None
            if comp.kind == "task":
                info.update(_task_users(registry, comp.name))
            if ":" in name:
                info["view"] = name.partition(":")[2]
            infos.append(info)
        if as_json:
            print_json(infos)
            return
        for info in infos:
            shown_apart = ("plugin", "options", "layout") if info["kind"] in ("dataset", "metric") else ("plugin",)
            rows = [(k, v) for k, v in info.items() if k not in shown_apart]
            if info["plugin"]:
                rows.append(("plugin", f"{info['plugin']['name']} ({info['plugin']['distribution']} "
                                       f"{info['plugin']['version']})"))
            print_table(f"{info['kind']} {info['name']}", ["field", "value"], rows, target=console)
            if info["kind"] == "dataset":
                _print_dataset_usage(info)
            elif info["kind"] == "metric" and info.get("options"):
                _print_options(info, "--option")


def _print_dataset_usage(info: dict) -> None:
    """A dataset's expected layout and its options (`--dataset-option NAME=VALUE`)."""
    if info.get("layout"):
        console.print(f"[bold]expected layout[/]: {escape(info['layout'])}", highlight=False)
    options = info.get("options") or []
    if not options:
        console.print("this dataset declares no options")
        return
    _print_options(info, "--dataset-option")


def _print_options(info: dict, flag: str) -> None:
    """A component's option table (`DatasetOption` records)."""
    rows = [(o["name"], o["type"], "" if o["default"] is None else str(o["default"]), o["help"])
            for o in info["options"]]
    print_table(f"options of {info['name']} ({flag} NAME=VALUE)", ["option", "type", "default", "meaning"],
                rows, target=console)
