"""The docs' figures agree with benches/RESULTS.md and its saved results, and the README's
commands work as written.

* The README's headline figures are exactly what ``scripts/readme_figures.py`` generates
  from ``benches/results/*.json``; each figure's RESULTS section names its JSON file and
  states its values (at the section's own precision); each figure's file records its
  provenance (commit, clean tree, date, machine, load), shown as the row's commit and date.
* The README outside that table, docs/SERVER.md and docs/ARCHITECTURE.md state no measured
  figure (``MEASURED``: ratios such as ``1.09x``, timings with decimals, throughput,
  token counts, medians, commit hashes); they link RESULTS instead.
* Every file under ``benches/results/`` is named by a doc (history lives in git), and
  every numbered RESULTS section has a command and a table.
* The README's set-up commands: the second is what ``.ci/run`` runs; the first one's
  stated output and exit status are what ``summarize`` gives on the bundled report.
"""

from __future__ import annotations

import difflib
import importlib.util
import re
import subprocess
import sys
from functools import cache
from types import ModuleType

import pytest
from helpers.docs_text import ROOT, Doc, Problem, doc_names, expand_braces, report, tables


@cache
def figures_script() -> ModuleType:
    path = ROOT / "scripts" / "readme_figures.py"
    spec = importlib.util.spec_from_file_location("readme_figures", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("readme_figures", module)
    spec.loader.exec_module(module)
    return module


@cache
def doc(name: str) -> Doc:
    return Doc.read(name)


def readme_block() -> tuple[int, str]:
    script = figures_script()
    text = doc("README.md").text
    start, end = text.find(script.BEGIN), text.find(script.END)
    assert start >= 0 and end > start, f"README.md: no figures block ({script.BEGIN!r} ... {script.END!r})"
    return doc("README.md").line_at(start), text[start : end + len(script.END)]


def test_readme_figures_are_generated_from_the_results() -> None:
    _, block = readme_block()
    wanted = figures_script().render()
    if block != wanted:
        diff = "\n".join(
            difflib.unified_diff(block.splitlines(), wanted.splitlines(), "README.md", "generated", lineterm="")
        )
        pytest.fail(
            "README.md's headline figures differ from benches/results/*.json; "
            f"run `python scripts/readme_figures.py --write`:\n{diff}"
        )


def test_every_headline_records_its_commit_date_machine_and_load() -> None:
    """A headline figure's results file says which commit measured it, whether the tree
    was clean, when, on what machine and under what load (``provenance``); the README
    row shows the commit and the date."""
    script = figures_script()
    problems = []
    for fig in script.figures():
        missing = script.provenance_missing(script.load(fig.json_name))
        where = f"benches/results/{fig.json_name}"
        if missing:
            problems.append(Problem(where, 0, fig.what, f"its provenance lacks {', '.join(missing)}"))
    assert not problems, report(problems, "headline results without their commit, date, machine and load")


NUMBER = re.compile(r"(?<![\w.])-?\d{1,3}(?:,\d{3})+(?:\.\d+)?(?![\d,]*\d)|(?<![\w.])-?\d+(?:\.\d+)?")


def stated_numbers(text: str) -> list[tuple[float, int, int]]:
    """(value, decimals, significant digits) of every number in a text."""
    out = []
    for m in NUMBER.finditer(text):
        raw = m.group(0).replace(",", "")
        decimals = len(raw.split(".", 1)[1]) if "." in raw else 0
        significant = len(raw.lstrip("-").replace(".", "").lstrip("0"))
        out.append((float(raw), decimals, significant))
    return out


def states(text: str, value: float) -> bool:
    """The text states ``value`` at its own precision (``0.315`` as ``0.315``, ``488.8``
    as ``489``), with two significant digits at least unless the value is whole."""
    for number, decimals, significant in stated_numbers(text):
        if significant < 2 and value != int(value):
            continue
        if abs(round(value, decimals) - number) < 0.5 * 10**-decimals * 1.001 and abs(value - number) < 10**-decimals:
            return True
    return False


def results_section(number: int) -> tuple[int, str]:
    return doc("benches/RESULTS.md").section(re.compile(rf"^## {number}\. "))


def test_each_figure_agrees_with_its_results_section() -> None:
    problems = []
    for fig in figures_script().figures():
        try:
            line, text = results_section(fig.section)
        except LookupError:
            problems.append(Problem("benches/RESULTS.md", 0, fig.what, f"no section {fig.section}"))
            continue
        json_path = f"benches/results/{fig.json_name}"
        if json_path not in text and fig.json_name not in text:
            problems.append(Problem("benches/RESULTS.md", line, json_path, f"section {fig.section} does not name it"))
        for value in fig.numbers:
            if not states(text, value):
                problems.append(
                    Problem(
                        "benches/RESULTS.md",
                        line,
                        f"{value:g}",
                        f"README figure {fig.what!r} ({json_path}) shows it; section {fig.section} does not state it",
                    )
                )
    assert not problems, report(problems, "README figures that their RESULTS section does not state")


# What a reference states only as a measurement: a ratio (1.09x), a timing with decimals
# (0.044 s, 1.5 min), a sub-second unit (9 ms, 31 µs), a throughput (489 MB/s), a
# percentage with decimals (4.9 %), a token count, the word "median", a commit hash
# (history lives in git). Limits and defaults are whole numbers of seconds, bytes or
# items, and code (inline or fenced) is not read.
MEASURED = {
    "ratio": re.compile(r"(?<![\w.])\d+(?:\.\d+)?x\b"),
    "timing": re.compile(r"(?<![\w.])\d+\.\d+\s?(?:s|ms|µs|us|min|minutes|seconds)\b"),
    "sub-second timing": re.compile(r"(?<![\w.])\d+\s?(?:ms|µs|us)\b"),
    "throughput": re.compile(r"\d\s?(?:[KMG]i?B|bytes)/s\b"),
    "percentage with decimals": re.compile(r"\d+\.\d+\s?%"),
    "token count": re.compile(r"\d[\d,]*\s(?:o200k\s)?tokens\b"),
    "median": re.compile(r"\bmedians?\b", re.I),
    "commit hash": re.compile(r"(?<![\w/.-])(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{7,12}(?![\w/.-])"),
}
NO_FIGURES = ["README.md", "docs/SERVER.md", "docs/ARCHITECTURE.md"]


@pytest.mark.parametrize("name", NO_FIGURES)
def test_doc_states_no_measured_figures(name: str) -> None:
    d = doc(name)
    text = d.plain
    if name == "README.md":  # the generated table is the README's only figures
        start, block = readme_block()
        offset = d.text.find(block)
        text = text[:offset] + re.sub(r"[^\n]", " ", block) + text[offset + len(block) :]
    problems = []
    for kind, pattern in MEASURED.items():
        for m in pattern.finditer(text):
            problems.append(
                Problem(name, d.line_at(m.start()), m.group(0), f"a {kind}: measured figures belong in RESULTS")
            )
    problems.sort(key=lambda p: p.line)
    assert not problems, report(problems, f"measured figures in {name} (link benches/RESULTS.md instead)")


def test_every_results_file_is_named_by_a_doc() -> None:
    named = set()
    for name in doc_names():
        for m in re.finditer(r"benches/results/[\w.{},-]+", doc(name).text):
            named.update(p.rstrip(".,").rsplit("/", 1)[1] for p in expand_braces(m.group(0)))
    unnamed = sorted(p.name for p in (ROOT / "benches" / "results").iterdir() if p.name not in named)
    assert not unnamed, (
        f"benches/results/ holds files no doc names: {unnamed}. Name each in its RESULTS section, "
        "or delete it (history lives in git)."
    )


def test_each_results_section_has_a_command_and_a_table() -> None:
    results = doc("benches/RESULTS.md")
    problems = []
    for line, level, heading in results.headings():
        m = re.match(r"(\d+)\. ", heading)
        if level != 2 or not m:
            continue
        _, text = results.section(re.compile(rf"^## {m.group(1)}\. "))
        if not re.search(r"```sh\n", text):
            problems.append(Problem(results.name, line, heading, "no ```sh block with the command"))
        if not list(tables(text)):
            problems.append(Problem(results.name, line, heading, "no table"))
    assert not problems, report(problems, "RESULTS sections without a command or a table")


# --- the README's commands -------------------------------------------------------------------

SETUP = "pip install . && pytest-mcp-server summarize examples/reports/demo.junit.xml"
CHECKS = "pip install -e '.[test]' && scripts/check && cargo test --quiet && python -m pytest -q -n auto"


def test_readme_setup_commands_are_what_ci_runs() -> None:
    readme = doc("README.md")
    bodies = [f.body for f in readme.fences if f.info == "sh"]
    for command in (SETUP, CHECKS):
        assert any(command in line.split("#", 1)[0] for body in bodies for line in body.split("\n")), (
            f"README.md: the set-up command {command!r} is not in an sh block"
        )
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert CHECKS in ci.splitlines(), f".ci/run does not run the README's command 2 verbatim: {CHECKS!r}"


def test_readme_states_what_summarize_prints_on_the_example() -> None:
    readme = doc("README.md")
    m = re.search(r"exits with status (\d+)", readme.plain)
    assert m, "README.md: no 'exits with status N' for command 1"
    stated_status = int(m.group(1))
    shown = next((f for f in readme.fences if f.line > readme.line_at(m.start()) and f.info == ""), None)
    assert shown is not None, "README.md: no block with command 1's output after 'exits with status'"
    proc = subprocess.run(
        [sys.executable, "-m", "pytest_mcp_server", "summarize", "examples/reports/demo.junit.xml"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    first = proc.stdout.split("\n", 1)[0]
    assert proc.returncode == stated_status and first == shown.body.strip(), (
        f"README.md: says command 1 exits with status {stated_status} and its output starts "
        f"{shown.body.strip()!r}; it exits with {proc.returncode} and starts {first!r}\n{proc.stderr[-2000:]}"
    )
