"""The README and docs/ hold: every relative link reaches a file (and a heading, when it names one), no page
sends a reader outside the repository, and every command quoted in an `sh` block is real: `saclstm` lines
parse against the CLI's own argparse tree (found from pyproject.toml's console script), `make` targets are
the Makefile's, scripts and modules exist. And every knob of the daemons and launchers is documented."""

from __future__ import annotations

import argparse
import contextlib
import functools
import importlib
import importlib.util
import io
import re
import shlex
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
PAGES = sorted([ROOT / "README.md", *(ROOT / "docs").rglob("*.md")])
LINK = re.compile(r"!?\[(?:[^\]\[]|\[[^\]]*\])*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
FENCE = re.compile(r"^[ \t]*```([\w-]*)[^\n]*\n(.*?)^[ \t]*```", re.S | re.M)  # list items indent theirs
SHELLS = {"sh", "bash", "shell"}
OPERATORS = {"&&", "||", ";", "|", "&", ";;"}
REPO_DIRS = ("actor/", "deploy/", "docs/", "learner/", "protocol/", "tests/")


def _rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


# -- links ---------------------------------------------------------------------------------------------------------

def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[`*_]|<[^>]+>", "", heading.strip().lower())
    return re.sub(r"\s", "-", re.sub(r"[^\w\- ]", "", text))


def _anchors(page: Path) -> set[str]:
    text = FENCE.sub("", page.read_text())
    return {_slug(m.group(1)) for m in re.finditer(r"^#{1,6}\s+(.*?)\s*#*$", text, re.M)}


def link_problems(page: Path, text: str) -> list[str]:
    """What is wrong with the relative links of one page (external links are not fetched)."""
    problems = []
    for target in LINK.findall(FENCE.sub("", text)):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
            continue
        path_part, _, anchor = target.partition("#")
        dest = (page.parent / path_part).resolve() if path_part else page
        if not dest.is_relative_to(ROOT) or dest.is_relative_to(ROOT / "shared"):
            problems.append(f"{target}: outside the repository")
        elif not dest.exists():
            problems.append(f"{target}: no such file")
        elif anchor and dest.suffix == ".md" and anchor not in _anchors(dest):
            problems.append(f"{target}: no heading #{anchor} in {_rel(dest)}")
    if "../shared" in text:
        problems.append("mentions ../shared")
    return problems


@pytest.mark.parametrize("page", PAGES, ids=_rel)
def test_every_relative_link_reaches_a_file(page: Path) -> None:
    assert not link_problems(page, page.read_text()), link_problems(page, page.read_text())


# -- commands ------------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Command:
    page: str
    line: str
    argv: tuple[str, ...]


def shell_commands(page: Path, text: str) -> Iterator[Command]:
    """Each simple command of each `sh` block: continuations joined, comments dropped, split at ;, &&, || and |,
    leading VAR=value assignments left out."""
    for lang, body in FENCE.findall(text):
        if lang not in SHELLS:
            continue
        for line in body.replace("\\\n", " ").splitlines():
            lexer = shlex.shlex(line, posix=True, punctuation_chars=";&|")  # runs/<date-time>/... stays a word
            lexer.whitespace_split, lexer.commenters = True, "#"
            words: list[str] = []
            for token in [*lexer, ";"]:
                if token in OPERATORS:
                    while words and re.match(r"^[A-Za-z_]\w*=", words[0]):
                        words.pop(0)
                    if words:
                        yield Command(_rel(page), line.strip(), tuple(words))
                    words = []
                else:
                    words.append(token)


def _console_script() -> tuple[str, str]:
    """pyproject.toml's `saclstm` console script: (module, function)."""
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    module, _, func = scripts["saclstm"].partition(":")
    return module, func


@functools.lru_cache(maxsize=1)
def cli_tree():  # type: ignore[no-untyped-def]
    """The argparse tree behind the `saclstm` command: the console script's module builds it with `tree()`."""
    module, _ = _console_script()
    return importlib.import_module(module).tree()


def argparse_error(argv: list[str]) -> str | None:
    """None when `saclstm ARGV` parses (or asks for --help); else argparse's message."""
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            cli_tree().parse_args(argv)
    except SystemExit as exc:
        return None if exc.code == 0 else err.getvalue().strip().splitlines()[-1]
    return None


def make_targets() -> set[str]:
    return set(re.findall(r"^([\w.-]+)\s*:(?!=)", (ROOT / "Makefile").read_text(), re.M))


def command_problem(cmd: Command) -> str | None:
    """Why a quoted command would not run as written in this repository, or None."""
    argv = list(cmd.argv)
    while argv and argv[0] in ("sudo", "env", "time"):
        argv.pop(0)
    if argv[:1] == ["nice"]:
        argv = argv[3:] if argv[1:2] == ["-n"] else argv[1:]
    if not argv:
        return None
    program = Path(argv[0]).name
    if program == "saclstm" and (error := argparse_error(argv[1:])) is not None:
        return error
    if program == "make":
        missing = [t for t in argv[1:] if "=" not in t and not t.startswith("-") and t not in make_targets()]
        return f"no make target {missing}" if missing else None
    if re.fullmatch(r"python(3(\.\d+)?)?", program):
        if argv[1:2] == ["-m"]:
            if importlib.util.find_spec(argv[2].split(".")[0]) is None or importlib.util.find_spec(argv[2]) is None:
                return f"no module {argv[2]}"
        elif len(argv) > 1 and not argv[1].startswith("-") and not (ROOT / argv[1]).exists():
            return f"no script {argv[1]}"
    for word in argv[1:]:
        path = word.split("=", 1)[-1]
        if not path.startswith(REPO_DIRS) or re.search(r"[<>*$]", path) or (ROOT / path).exists():
            continue
        if Path(path).suffix or not (ROOT / path).parent.is_dir():  # else a directory a command may create
            return f"no file {path}"
    return None


COMMANDS = [c for page in PAGES for c in shell_commands(page, page.read_text())]


def test_the_pages_quote_saclstm_and_make_commands() -> None:
    programs = {Path(c.argv[0]).name for c in COMMANDS}
    assert {"saclstm", "make"} <= programs, programs


@pytest.mark.parametrize("cmd", COMMANDS, ids=lambda c: f"{c.page}: {c.line[:60]}")
def test_every_quoted_command_is_real(cmd: Command) -> None:
    problem = command_problem(cmd)
    assert problem is None, f"{cmd.page}: `{cmd.line}`: {problem}"


# -- knobs ---------------------------------------------------------------------------------------------------------

KNOB_COMMANDS = ("learner", "actor", "run", "tank-train")
NOT_KNOBS = {"--help", "--config", "--learner-arg", "--actor-arg", "--eval", "--report"}


def _subparser(name: str):  # type: ignore[no-untyped-def]
    sub = next(a for a in cli_tree()._actions if a.__class__.__name__ == "_SubParsersAction")
    return sub.choices[name]


def undocumented_knobs(command: str, text: str) -> list[str]:
    """Flags of `saclstm COMMAND` (each a config key, --a-b for key a_b) that no page names, as `a_b` or --a-b."""
    named = set(re.findall(r"`([a-z][a-z0-9_]*)`", text)) | set(re.findall(r"(--[a-z][a-z0-9-]*)", text))
    flags = [s for a in _subparser(command)._actions if a.help != argparse.SUPPRESS  # retired keys are hidden
             for s in a.option_strings if s.startswith("--")]
    return [f for f in flags if f not in NOT_KNOBS and f not in named and f[2:].replace("-", "_") not in named]


@pytest.mark.parametrize("command", KNOB_COMMANDS)
def test_every_knob_is_documented(command: str) -> None:
    text = "\n".join(p.read_text() for p in PAGES)
    missing = undocumented_knobs(command, text)
    assert not missing, f"saclstm {command}: {missing} are in no page (docs/running.md lists the knobs)"


# -- the checks can fail -------------------------------------------------------------------------------------------

def test_the_checks_catch_what_they_are_for(tmp_path: Path) -> None:
    """A broken link, a missing heading, a link out of the repository, an unknown command or flag, a missing
    make target, script or file, and an undocumented knob are each caught."""
    page = ROOT / "docs" / "example.md"
    text = ("[a](nowhere.md) [b](../README.md#no-such-heading) [c](../../etc/passwd) [d](../shared/x.md) "
            "[ok](../README.md) [web](https://example.org/x)\n")
    assert len(link_problems(page, text)) == 5, link_problems(page, text)  # ../shared: outside, and named
    sh = ("```sh\n.venv/bin/saclstm learner --hiden 128\nsaclstm teleport\nsaclstm learner --hidden 128 && make tset\n"
          "FOO=1 .venv/bin/python tests/bench/no_such_bench.py\npython -m no_such_module\n"
          "saclstm run --config deploy/no-such.toml\nsaclstm ckpt list runs/<date-time>/checkpoints  # fine\n```\n")
    problems = [command_problem(c) for c in shell_commands(page, sh)]
    assert [p is None for p in problems] == [False, False, True, False, False, False, False, True], problems
    assert undocumented_knobs("learner", "`hidden` --fc") and "--hidden" not in undocumented_knobs("learner", "`hidden`")


# -- a figure stated twice -----------------------------------------------------------------------------------------
# Facts the code holds and the pages repeat: the pages must say what the code does (issue 37, section 4).

KNOB_TABLES = [  # (page, the `[table]` its heading names, the config class whose defaults its rows show)
    ("docs/running.md", "`[learner]`", "learner.config:LearnerConfig"),
    ("docs/running.md", "`[actor]`", "actor.config:ActorConfig"),
    ("docs/running.md", "`[run]`", "deploy.launcher:RunConfig"),
    ("docs/tankroyale.md", "`[battle]`", "deploy.tank.train:BattleConfig"),
    ("docs/tankroyale.md", "`[tank]`", "actor.bots.tankroyale.brain:TankRewards"),
    ("docs/tankroyale.md", "`[controls]`", "actor.bots.tankroyale.brain:TankControls"),
]
TURN_TIMEOUT = re.compile(r"turn timeout\b[^.|\n]{0,60}?(\d+(?:\.\d+)?) ?ms", re.I)
SPEEDUP = re.compile(r"\d+(?:\.\d+)? ?(?:x|times) (?:faster|slower)")
DECODER_WORDS = re.compile(r"decod|pure Python|schema path|native", re.I)
DECODER_TEXTS = ["protocol/codec.py", "learner/service.py", "setup.py", "Makefile"]


def _load(spec: str) -> type:
    module, _, name = spec.partition(":")
    return getattr(importlib.import_module(module), name)  # type: ignore[no-any-return]


def shown(value: object) -> str:
    """A default as the knob tables write it."""
    if value is None:
        return "unset"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple):
        return ", ".join(map(str, value)) if value else "()"
    return repr(value) if isinstance(value, str) else str(value)


def knob_rows(text: str, heading: str) -> list[tuple[str, str]]:
    """(key, default cell) of each row of the knob table under the `###` heading that names `heading`."""
    section = re.search(r"^###[^\n]*" + re.escape(heading) + r"[^\n]*\n(.*?)(?=^#|\Z)", text, re.S | re.M)
    return re.findall(r"^\| `([a-z_0-9]+)` \| ([^|]*?) \|", section.group(1), re.M) if section else []


def default_problems(text: str, heading: str, cls: type) -> list[str]:
    import dataclasses

    defaults = {f.name: f.default for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    rows = knob_rows(text, heading)
    if not rows:
        return [f"no knob table under a heading naming {heading}"]
    return [f"{key}: the page says {cell}, the code {shown(defaults[key])}" if key in defaults else
            f"{key}: no such key" for key, cell in rows if key not in defaults or cell != shown(defaults[key])]


@pytest.mark.parametrize("page,heading,spec", KNOB_TABLES, ids=lambda v: str(v))
def test_the_knob_tables_show_the_codes_defaults(page: str, heading: str, spec: str) -> None:
    problems = default_problems((ROOT / page).read_text(), heading, _load(spec))
    assert not problems, f"{page}, {heading}: {problems}"


def stated_turn_timeouts(text: str) -> list[float]:
    return [float(ms) for ms in TURN_TIMEOUT.findall(text)]


def test_the_turn_timeout_the_pages_and_benchmarks_state_is_the_engines() -> None:
    """Stated in ms beside "turn timeout" anywhere in the pages or the benchmarks: the engine's default (the
    official classic game's), which tank-train's `turn_timeout_ms` also starts from."""
    engine_ms = _load("actor.bots.tankroyale.engine:Setup")().turn_timeout_us / 1000
    assert _load("deploy.tank.train:BattleConfig")().turn_timeout_ms == engine_ms
    texts = {_rel(p): p.read_text() for p in [*PAGES, *sorted((ROOT / "tests" / "bench").glob("*.py"))]}
    stated = [(name, ms) for name, text in texts.items() for ms in stated_turn_timeouts(text)]
    assert stated, "no page states the turn timeout: this check reads nothing"
    assert all(ms == engine_ms for _, ms in stated), f"the engine's is {engine_ms} ms: {stated}"


def decoder_speedups(text: str) -> list[str]:
    """Speed-ups stated beside the decoder ("6x slower", "2.5 times faster", within 150 characters after a word
    about decoding)."""
    return [m.group(0) for m in SPEEDUP.finditer(text) if DECODER_WORDS.search(text[max(0, m.start() - 150):m.start()])]


def test_the_native_decoders_speed_up_is_stated_once() -> None:
    """docs/performance.md holds it, with its date and what it was measured against; others link there."""
    texts = {_rel(p): p.read_text() for p in PAGES if p.name != "performance.md"}
    texts |= {name: (ROOT / name).read_text() for name in DECODER_TEXTS}
    stated = {name: found for name, text in texts.items() if (found := decoder_speedups(text))}
    assert not stated, f"the decoder's speed-up belongs in docs/performance.md only: {stated}"


def test_the_figure_checks_catch_what_they_are_for() -> None:
    """A knob table that disagrees with the code, a turn timeout not the engine's, a decoder speed-up."""
    from deploy.tank.train import BattleConfig

    table = "### `[battle]`\n\n| key | default | what |\n|---|---|---|\n| `rounds` | 100 | r |\n| `tanks` | 2 | t |\n"
    assert default_problems(table, "`[battle]`", BattleConfig) == ["rounds: the page says 100, the code 200"]
    assert default_problems("## nothing", "`[battle]`", BattleConfig)
    assert stated_turn_timeouts("the game's turn timeout: 5 ms | ... turn timeout (30 ms at") == [5.0, 30.0]
    assert decoder_speedups("decodes in pure Python (about 6x slower per message)") == ["6x slower"]
    assert decoder_speedups("the shared torso gives 2.4x the updates") == []
