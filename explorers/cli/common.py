"""What the command groups share: the parser class whose errors are one line (``UsageError``, exit
2), the arguments that select a configuration, argument types, and writing a file or one line
of error."""
from __future__ import annotations

import argparse
import os
import re
import stat
import sys
from importlib import metadata
from pathlib import Path

from kafka_mc.model import registry
from kafka_mc.model.config import (ConfigError, brief, parse_assignment, read_toml,
                                   resolve_config_path, shown)
from kafka_mc.traces.files import same_file, write_atomically
from kafka_mc.traces.trace import Trace


class UsageError(Exception):
    pass


# The optional dependencies (pyproject.toml's extras), by the module a feature imports: a
# feature whose extra is not installed is one line naming the extra, exit 2.
EXTRAS = {"pyspark": "spark", "py4j": "spark", "z3": "z3", "starlette": "web", "uvicorn": "web",
          "kio": "real", "hypothesis": "stateful", "Cython": "compiled"}


def missing_extra(e: ImportError) -> str | None:
    """The message for ``e`` when it is an optional dependency missing; None otherwise."""
    module = (getattr(e, "name", None) or "").split(".")[0]
    extra = EXTRAS.get(module)
    if extra is None:
        return None
    return (f"this needs {module}, which comes with the {extra} extra: "
            f"pip install 'kafka-mc[{extra}]'")


class Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, exit 2 (argparse prints usage + message)
        raise UsageError(_quoted_cut(message))


def _quoted_cut(message: str) -> str:
    """argparse's message with the user's values it quotes cut to 80 characters (``invalid
    choice: 'yyy...'`` echoed a 3,000-character --explorer whole)."""
    return re.sub(r"'([^']{80})[^']+'", lambda m: f"'{m.group(1)}...'", message)


def version() -> str:
    try:
        return metadata.version("kafka-mc")
    except metadata.PackageNotFoundError:
        return "unknown"


def config_arguments(p: argparse.ArgumentParser, config_help: str = "") -> argparse.ArgumentParser:
    """CONFIG, --model, --set and --protocol: what selects a configuration."""
    p.add_argument("config", nargs="?", metavar="CONFIG",
                   help=config_help or "TOML file or name of a shipped config (default: built-in)")
    p.add_argument("--model", help="model name (overrides [model] name)")
    p.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE",
                   dest="sets", help="override a configuration value (repeatable)")
    p.add_argument("--protocol", metavar="PRESET",
                   help="shorthand for --set protocol.version=PRESET (kafka-mc list protocols); "
                        "a release (4.4.0) means the preset that stands for it "
                        "(kafka-mc real versions), and says which")
    return p


def port_number(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {brief(text)}") from None
    if not 0 <= n <= 65535:
        raise argparse.ArgumentTypeError(f"{n} is not a port number (0 to 65535)")
    return n


def nonneg(text: str) -> int:
    try:
        value = int(text)
    except ValueError:   # also one of more than 4,300 digits
        raise argparse.ArgumentTypeError(f"{brief(text)} is not a whole number") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{brief(text)} must be >= 0")
    return value


def minutes(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{brief(text)} is not a number of minutes") from None
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"{brief(text)} must be >= 0")
    return value


def positive(text: str) -> int:
    value = nonneg(text)
    if value == 0:
        raise argparse.ArgumentTypeError(f"{brief(text)} must be >= 1")
    return value


MAX_WORKERS = 1024   # a bound for any machine or cluster (a 23-digit value was accepted)


def cores() -> int:
    """The cores this process may use."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") \
        else os.cpu_count() or 1


def workers(text: str) -> int:
    if text == "auto":
        return cores()
    value = positive(text)
    if value > MAX_WORKERS:
        raise argparse.ArgumentTypeError(f"{brief(text)} is more than {MAX_WORKERS:,}")
    return value


MAX_ERROR = 2000   # characters of an error line, whatever user data it carries


def error(message: str) -> None:
    """One line on stderr (its user data is cut where it is put in; this bounds the rest, and
    escapes any control character that got through: a terminal escape in a record's key)."""
    line = shown(' '.join(message.splitlines()), MAX_ERROR)   # (control characters escaped)
    print(f"kafka-mc: error: {line}", file=sys.stderr)


def load_config(args):
    sets = [parse_assignment(s) for s in args.sets]
    path = resolve_config_path(args.config) if args.config is not None else None
    if args.protocol is not None:   # --protocol '' is an empty preset, refused as such
        sets.append(("protocol.version", protocol(args.protocol, args.model, path)))
    if args.depth is not None:
        sets.append(("check.max_depth", args.depth))
    if args.deadlock is not None:
        sets.append(("check.deadlock", args.deadlock))
    if args.invariants:
        sets.append(("check.invariants", args.invariants))
    if getattr(args, "por", None) is not None:
        sets.append(("check.por", args.por))
    if getattr(args, "symmetry", None):
        sets.append(("check.symmetry", True))
    return registry.load(path, model=args.model, overrides=sets)


def protocol(value: str, model: str | None, path) -> str:
    """``--protocol``: a preset as given, or a release of the model (``4.4.0``) as the preset that
    stands for it (``registry.ModelEntry.releases``), saying so on stderr."""
    if not model:
        try:
            declared = read_toml(path).get("model", {}).get("name") if path else None
        except ConfigError:
            declared = None   # (refused by registry.load, with the reason)
        model = declared if isinstance(declared, str) and declared else registry.DEFAULT_MODEL
    try:
        entry = registry.entry(model)
    except ConfigError:
        return value
    if value in entry.presets:
        return value
    if value not in entry.releases:
        if entry.releases and re.match(r"\d+\.\d+", value):   # a release no preset stands for
            raise UsageError(f"--protocol {brief(value)}: not a release a preset of {model} stands "
                             f"for ({', '.join(entry.releases)}; kafka-mc real versions) nor a "
                             f"preset ({', '.join(entry.presets)})")
        return value
    preset = entry.releases[value]
    print(f"kafka-mc: --protocol {value}: the release {value} stands for preset {preset} "
          "(kafka-mc real versions); checking that", file=sys.stderr)
    return preset


def explicit(trace: Trace, file: str, command: str) -> Trace:
    """A symbolic trace's states are the symbolic model's variables, not the model's states:
    replay, render and minimize refuse it (exit 2); it is plain ITF JSON to read."""
    if trace.meta.get("explorer") == "symbolic":
        raise UsageError(f"{shown(file)}: a symbolic trace (states of the symbolic model's "
                         f"variables); {command} takes traces of the explicit model")
    return trace


def sibling(trace: str, suffix: str) -> str:
    name = Path(trace).name
    stem = name.removesuffix(".json").removesuffix(".itf")
    return str(Path(trace).with_name(stem + suffix))


def not_the_input(out: str, trace: str) -> None:
    if same_file(out, trace):
        raise UsageError(f"--out {shown(out)} is the input trace: give another file")


def check_out_file(file: str, flag: str = "--out") -> None:
    """Make sure, before the work, that ``file`` can be written: not empty, not a directory,
    in a directory that exists (``graph --out nodir/g.dot`` failed only after the search)."""
    if file == "":
        raise UsageError(f"{flag} is empty")
    parent = Path(file).parent
    try:
        if Path(file).is_dir():
            raise UsageError(f"{flag} {shown(file)}: is a directory")
        st = os.stat(parent)
    except FileNotFoundError:
        raise UsageError(f"{flag} {shown(file)}: no such directory {shown(parent)}") from None
    except (OSError, ValueError) as e:
        raise UsageError(f"{flag} {shown(file)}: {getattr(e, 'strerror', None) or shown(e, 80)}") \
            from None
    if not stat.S_ISDIR(st.st_mode):
        raise UsageError(f"{flag} {shown(file)}: {shown(parent)} is not a directory")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise UsageError(f"{flag} {shown(file)}: cannot write in {shown(parent)}")


def write_file(file: str, text: str) -> None:
    try:
        write_atomically(file, text)
    except OSError as e:
        raise UsageError(f"cannot write {shown(file)}: {e.strerror or e}") from None
