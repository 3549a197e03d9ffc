"""Report sections of the `survival` task: Kaplan-Meier curves of the predicted risk groups (median
split and terciles) with the log-rank p, from lifelines (docs/survival.md)."""

from __future__ import annotations

from typing import Any

from pathkit_core.report.figures import new_figure
from pathkit_core.report.page import Section, esc, table
from pathkit_tasks.survival.target import parse_risk, parse_target

GROUPINGS = (("median split", 2), ("terciles", 3))
COLOURS = ("#0072B2", "#E69F00", "#D55E00")


def test_arrays(run: Any) -> tuple[list[str], Any, Any, Any] | None:
    """(ids, risk, time, event) of the test cases with both a prediction and a reference."""
    import numpy as np

    refs = run.references()
    ids, rows = [], []
    for cid, pred in (run.predictions or {}).items():
        try:
            time, event = parse_target(refs.get(cid))
            rows.append((parse_risk(pred), time, event))
        except ValueError:
            continue
        ids.append(cid)
    if len(rows) < 4:
        return None
    array = np.asarray(rows, dtype=np.float64)
    return ids, array[:, 0], array[:, 1], array[:, 2].astype(int)


def p_text(p: float) -> str:
    """A p-value in three significant digits (small ones in scientific notation), "n/a" for NaN."""
    return "n/a" if p != p else f"{p:.3g}"


def risk_groups(risk: Any, n_groups: int) -> Any:
    """Group 0 (lowest risk) .. n_groups - 1 by the risk quantiles of these cases (ties stay together)."""
    import numpy as np

    cuts = np.quantile(risk, [k / n_groups for k in range(1, n_groups)])
    return np.searchsorted(cuts, risk, side="left")


def _km_panel(ax: Any, risk: Any, time: Any, event: Any, n_groups: int, title: str) -> tuple[float, list[dict]]:
    import numpy as np
    from lifelines import KaplanMeierFitter
    from lifelines.statistics import multivariate_logrank_test

    groups = risk_groups(risk, n_groups)
    names = ["low risk", "high risk"] if n_groups == 2 else ["low risk", "middle risk", "high risk"]
    rows = []
    for g in range(n_groups):
        keep = groups == g
        if not keep.any():
            continue
        km = KaplanMeierFitter().fit(time[keep], event[keep], label=f"{names[g]} (n={int(keep.sum())})")
        km.plot_survival_function(ax=ax, ci_show=False, color=COLOURS[g])
        median = float(km.median_survival_time_)
        rows.append({"grouping": title, "group": names[g], "n": int(keep.sum()), "events": int(event[keep].sum()),
                     "median_survival": median if np.isfinite(median) else None})
    p = (float(multivariate_logrank_test(time, groups, event).p_value) if len(set(groups.tolist())) > 1
         else float("nan"))
    ax.set_title(f"{title}: log-rank p = {p_text(p)}", fontsize="small")
    ax.set_xlabel("time")
    ax.set_ylabel("survival probability")
    ax.set_ylim(0, 1.02)
    return p, rows


def survival_sections(run: Any) -> list[Section]:
    arrays = test_arrays(run)
    if arrays is None:
        return []
    ids, risk, time, event = arrays
    fig, axes = new_figure(9.6, 4.0, ncols=2)
    summary_rows, data = [], []
    for ax, (title, n_groups) in zip(axes[0], GROUPINGS, strict=True):
        p, rows = _km_panel(ax, risk, time, event, n_groups, title)
        summary_rows += [[r["grouping"], r["group"], r["n"], r["events"], r["median_survival"], p_text(p)]
                         for r in rows]
    groups2, groups3 = risk_groups(risk, 2), risk_groups(risk, 3)
    data = {"id": ids, "risk": risk.tolist(), "time": time.tolist(), "event": event.tolist(),
            "median_group": groups2.tolist(), "tercile": groups3.tolist()}
    body = run.figures.figure("kaplan_meier_risk_groups", fig, "Kaplan-Meier curves of the test cases grouped by "
                              "predicted risk (median split; terciles) with the log-rank test", data)
    body += table(["grouping", "group", "cases", "events", "median survival", "log-rank p"], summary_rows)
    body += (f'<p class="note">{esc(len(ids))} test cases, {esc(int(event.sum()))} events. Groups are cut at the '
             "quantiles of the predicted risk on these cases; the log-rank test compares the groups' curves "
             "(lifelines' multivariate_logrank_test).</p>")
    return [Section("Kaplan-Meier curves by predicted risk", body, key="survival-km", order=100)]
