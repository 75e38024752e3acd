"""Tables (rich) and the plot (matplotlib, optional) of benchmark rows."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from rich.table import Table

MIB = 2**20


def _f(x: float | None, fmt: str, none: str = "-") -> str:
    return none if x is None else format(x, fmt)


def counts_cell(r: dict[str, Any]) -> str:
    """``ok`` / ``WRONG: failed 12 != 13, ...`` / the error / ``-``."""
    if not r.get("available", True):
        return "not installed"
    if not r.get("ok"):
        return f"FAILED: {r.get('error')}"
    if r.get("truth_ok"):
        return "ok"
    if r.get("truth_ok") is False:
        return "WRONG: " + ", ".join(f"{k} {v[0]} != {v[1]}" for k, v in r["mismatch"].items())
    return "-"


def _report_cells(r: dict[str, Any], shards: bool) -> list[str]:
    """The cell texts of one ``bench reports`` / ``bench shards`` row, shared by the rich
    table and the Markdown one; ``shards`` adds the threads and vs-one-by-one cells."""
    cells = [
        r["format"],
        f"{r['files']} x {r['size']}" if shards else r["size"],
        r["parser"],
        _f(r.get("median_s"), ".3f"),
        f"{r['min_s']:.3f}-{r['max_s']:.3f}" if r.get("min_s") is not None else "-",
        _f(r.get("mb_s"), ".0f"),
        _f(r.get("cpu_s"), ".2f"),
        _f(r["peak_rss"] / MIB if r.get("peak_rss") else None, ".1f"),
    ]
    if shards:
        cells += [
            str(r.get("threads") or "-"),
            _f(r.get("vs_one_by_one"), ".2f") + ("x" if r.get("vs_one_by_one") else ""),
        ]
    cells += [_f(r.get("vs_native"), ".1f") + ("x" if r.get("vs_native") else ""), counts_cell(r)]
    return cells


def _suite_cells(r: dict[str, Any]) -> list[str]:
    """The cell texts of one ``bench suite`` row, shared by the rich table and the Markdown one."""
    return [
        r["way"],
        _f(r.get("median_s"), ".2f"),
        f"{r['min_s']:.2f}-{r['max_s']:.2f}" if r.get("min_s") is not None else "-",
        _f(r.get("added_s"), "+.2f"),
        _f(r.get("added_pct"), "+.1f"),
        _f(r.get("agent_bytes"), "d"),
        counts_cell(r),
    ]


def reports_table(rows: list[dict[str, Any]], title: str) -> Table:
    """A rich ``Table`` of ``bench reports`` / ``bench shards`` rows."""
    from rich.table import Table

    shards = bool(rows) and rows[0]["bench"] == "shards"
    t = Table(title=title, title_justify="left")
    t.add_column("format")
    t.add_column("files x size" if shards else "size", justify="right")
    t.add_column("parser")
    t.add_column("median s", justify="right")
    t.add_column("min-max s", justify="right")
    t.add_column("MB/s", justify="right")
    t.add_column("CPU s", justify="right")
    t.add_column("peak RSS MiB", justify="right")
    if shards:
        t.add_column("threads", justify="right")
        t.add_column("vs one-by-one", justify="right")
    t.add_column("time / native", justify="right")
    t.add_column("counts vs truth")
    for r in rows:
        cells = _report_cells(r, shards)
        style = "red" if (not r.get("ok") and r.get("available", True)) or r.get("truth_ok") is False else None
        t.add_row(*cells, style=style)
    return t


def targets_table(checks: list[dict[str, Any]], title: str = "targets (reported, not asserted)") -> Table:
    """A rich ``Table`` of target checks (``{"format", "size", "target", "value", "unit",
    "met"}`` each; ``met`` None when nothing was measured)."""
    from rich.table import Table

    t = Table(title=title, title_justify="left")
    for name in ("format", "size", "target", "measured", "met"):
        t.add_column(name)
    for check in checks:
        met = {True: "yes", False: "NO", None: "n/a"}[check["met"]]
        value = "-" if check["value"] is None else f"{check['value']:.1f} {check['unit']}".strip()
        t.add_row(
            check["format"], check["size"], check["target"], value, met, style="red" if check["met"] is False else None
        )
    return t


def plot_reports(rows: list[dict[str, Any]], path: str, title: str) -> None:
    """Throughput (MB/s) and peak RSS (MiB) against file size for every parser, one
    column per format; counts that disagree with the truth are drawn with hollow markers.
    Needs matplotlib (``pip install matplotlib``); raises ``ImportError``
    without it."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter, NullFormatter

    fmts = [f for f in ("junit", "pytest-json") if any(r["format"] == f for r in rows)]
    fig, axes = plt.subplots(2, len(fmts), figsize=(6.5 * len(fmts), 8.5), squeeze=False)
    for col, fmt in enumerate(fmts):
        frows = [r for r in rows if r["format"] == fmt and r.get("ok")]
        names = list(dict.fromkeys(r["parser"] for r in frows))
        for name in names:
            pr = sorted((r for r in frows if r["parser"] == name), key=lambda r: r["bytes"])
            xs = [r["bytes"] / 1e6 for r in pr]
            style = dict(marker="o", linewidth=2.5 if name == "native" else 1.5, zorder=3 if name == "native" else 2)
            for row_i, key, scale in ((0, "mb_s", 1), (1, "peak_rss", 1 / MIB)):
                ys = [r[key] * scale for r in pr]
                ax = axes[row_i][col]
                (line,) = ax.plot(xs, ys, label=name, **style)
                bad = [(x, y) for x, y, r in zip(xs, ys, pr, strict=False) if r.get("truth_ok") is False]
                if bad:
                    ax.plot(
                        [b[0] for b in bad],
                        [b[1] for b in bad],
                        "o",
                        markersize=12,
                        markerfacecolor="none",
                        markeredgecolor="red",
                        label=f"{name}: wrong counts" if row_i == 0 else None,
                    )
        label = "JUnit XML" if fmt == "junit" else "pytest-json-report"
        ax = axes[0][col]
        ax.set_title(f"{label}: throughput")
        ax.set_ylabel("MB/s (median, higher is better)")
        ax.set_yscale("log")
        target = 400 if fmt == "junit" else 300
        ax.axhline(target, color="grey", linestyle=":", linewidth=1)
        ax.annotate(
            f"target {target} MB/s",
            (0.01, target),
            xycoords=("axes fraction", "data"),
            fontsize=8,
            color="grey",
            va="bottom",
        )
        ax = axes[1][col]
        ax.set_title(f"{label}: peak RSS of the process")
        ax.set_ylabel("MiB (lower is better)")
        ax.set_yscale("log")
        ax.axhline(64, color="grey", linestyle=":", linewidth=1)
        ax.annotate(
            "native target 64 MiB",
            (0.01, 64),
            xycoords=("axes fraction", "data"),
            fontsize=8,
            color="grey",
            va="bottom",
        )
        sizes = sorted({r["bytes"] / 1e6 for r in frows})
        for row_i in (0, 1):
            a = axes[row_i][col]
            a.set_xscale("log")
            a.set_xticks(sizes, [f"{x:.0f} MB" if x < 1000 else f"{x / 1000:.1f} GB" for x in sizes])
            a.xaxis.set_minor_formatter(NullFormatter())
            a.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
            a.yaxis.set_minor_formatter(FuncFormatter(lambda v, _: f"{v:g}" if str(v)[0] in "25" else ""))
            a.set_xlabel("report size (MB)")
            a.grid(True, which="both", alpha=0.3)
            a.legend(fontsize=8)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def suite_table(rows: list[dict[str, Any]], title: str) -> Table:
    """A rich ``Table`` of ``bench suite`` rows (one per way of running the suite)."""
    from rich.table import Table

    t = Table(title=title, title_justify="left")
    columns: tuple[tuple[str, Literal["left", "right"]], ...] = (
        ("way", "left"),
        ("median s", "right"),
        ("min-max s", "right"),
        ("added s", "right"),
        ("added %", "right"),
        ("agent text bytes", "right"),
        ("counts vs truth", "left"),
    )
    for name, justify in columns:
        t.add_column(name, justify=justify)
    for r in rows:
        t.add_row(
            *_suite_cells(r),
            style="red" if (not r.get("ok")) or r.get("truth_ok") is False else None,
        )
    return t


# ---------------------------------------------------------------------------------------
# Markdown (for benches/RESULTS.md)


def _md_table(header: list[str], rows: list[list[str]], right: set[int]) -> str:
    align = ["---:" if i in right else "---" for i in range(len(header))]
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join(align) + " |"]
    lines += ["| " + " | ".join(c.replace("|", "\\|") for c in r) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def markdown(doc: dict[str, Any]) -> str:
    """Markdown tables of one saved run (``--save``): the rows, then the targets."""
    m = doc["machine"]
    out = [
        f"`{doc['command']}`: {doc['elapsed_s']:.0f} s, started {doc['started']}, load average "
        f"{m.get('loadavg')} at the start and {m.get('loadavg_end')} at the end; git {m.get('git')}.\n"
    ]
    rows = doc["rows"]
    if doc["bench"] == "suite":
        header = ["way", "median s", "min-max s", "added s", "added %", "agent text bytes", "counts vs truth"]
        body = [_suite_cells(r) for r in rows]
        out.append(_md_table(header, body, {1, 2, 3, 4, 5}))
    else:
        shards = doc["bench"] == "shards"
        header = (
            [
                "format",
                "files x size" if shards else "size",
                "parser",
                "median s",
                "min-max s",
                "MB/s",
                "CPU s",
                "peak RSS MiB",
            ]
            + (["threads", "vs one-by-one"] if shards else [])
            + ["time / native", "counts vs truth"]
        )
        body = [_report_cells(r, shards) for r in rows]
        n = len(header)
        out.append(_md_table(header, body, set(range(3, n - 1))))
    if doc.get("targets"):
        body = [
            [
                t["format"],
                t["size"],
                t["target"],
                "-" if t["value"] is None else f"{t['value']:.1f} {t['unit']}".strip(),
                {True: "yes", False: "**no**", None: "n/a"}[t["met"]],
            ]
            for t in doc["targets"]
        ]
        out.append(
            "\nTargets (reported, not asserted):\n\n"
            + _md_table(["format", "size", "target", "measured", "met"], body, set())
        )
    return "\n".join(out)
