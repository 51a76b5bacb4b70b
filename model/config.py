"""Configurations: TOML files (docs/design.md section 5), ``--set`` overrides, validation.

A ``Config`` is a frozen, picklable value: the model's name and every parameter as a dotted key
(``model.resource_managers``, ``faults.producer_crashes``, ``check.max_depth``) with defaults
filled in. Each model declares its parameters (``Param``); the ``[check]`` section is common to
all. Anything unknown, mistyped or out of range is a ``ConfigError`` whose one-line message names
the key and where it came from.
"""
from __future__ import annotations

import os
import stat
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

REPO_CONFIGS = Path(__file__).resolve().parent.parent / "configs"


class ConfigError(ValueError):
    """A bad configuration; the message is one line naming the problem."""


@dataclass(frozen=True)
class Param:
    key: str                 # "section.name"
    type: type               # int, bool, str or list (a list of strings)
    default: Any
    doc: str = ""
    min: int | None = None
    max: int | None = None
    choices: tuple | None = None

    @property
    def section(self) -> str:
        return self.key.split(".", 1)[0]

    def check(self, value: Any, where: str) -> Any:
        """The value, normalised (lists become tuples); ConfigError if it does not fit."""
        ok = {int: lambda v: isinstance(v, int) and not isinstance(v, bool),
              bool: lambda v: isinstance(v, bool),
              str: lambda v: isinstance(v, str),
              list: lambda v: isinstance(v, (list, tuple)) and all(isinstance(x, str) for x in v),
              }[self.type](value)
        if not ok:
            want = {int: "an integer", bool: "true or false", str: "a string",
                    list: "a list of strings"}[self.type]
            raise ConfigError(f"{where}: {self.key} must be {want}, got {brief(value)}")
        if self.type is list:
            if self.min is not None and len(value) < self.min:
                raise ConfigError(f"{where}: {self.key} is empty: nothing would be checked "
                                  "(name properties, or \"all\")")
        elif self.type is str:
            if self.min is not None and len(value) < self.min:
                raise ConfigError(f"{where}: {self.key} is empty")
        elif self.min is not None and value < self.min or self.max is not None and value > self.max:
            rng = f"{self.min if self.min is not None else '-inf'}..{self.max if self.max is not None else 'inf'}"
            raise ConfigError(f"{where}: {self.key} = {brief(value)} is out of range ({rng})")
        if self.choices is not None:
            items = value if self.type is list else [value]
            bad = [x for x in items if x not in self.choices]
            if bad:
                raise ConfigError(f"{where}: {self.key} = {brief(bad[0])} is not one of "
                                  f"{', '.join(map(str, self.choices))}")
        return tuple(value) if self.type is list else value


CHECK_PARAMS = (
    Param("check.invariants", list, ("all",),
          "properties to check: \"all\" (every default property), names, or both (\"all\" "
          "and claims checked only when named, e.g. no_self_fencing)", min=1),
    Param("check.max_depth", int, 0, "depth bound, 0 = unbounded", min=0),
    Param("check.deadlock", bool, None,
          "whether a state with no enabled action is an error (unset: the model's default)"),
    Param("check.por", bool, None,
          "partial-order reduction of safety checks (bfs, spark; unset: on without a depth "
          "bound)"),
    Param("check.symmetry", bool, None,
          "symmetry reduction under the identifiers the model declares interchangeable "
          "(safety only; unset: off)"),
)


@dataclass(frozen=True)
class Config:
    model: str
    values: tuple[tuple[str, Any], ...]  # sorted (dotted key, value)
    source: str = field(default="<built-in>", compare=False)
    _index: Mapping[str, Any] = field(default=None, compare=False, repr=False, hash=False)
    _hash: int = field(default=0, compare=False, repr=False, hash=False)

    def __post_init__(self):
        object.__setattr__(self, "_index", dict(self.values))
        object.__setattr__(self, "_hash", hash((self.model, self.values)))

    def __hash__(self) -> int:  # configs key caches in rules; hash once
        return self._hash

    def __getitem__(self, key: str) -> Any:
        return self._index[key]

    def get(self, key: str, default: Any = None) -> Any:
        return self._index.get(key, default)

    def section(self, name: str) -> dict[str, Any]:
        prefix = name + "."
        return {k[len(prefix):]: v for k, v in self.values if k.startswith(prefix)}

    def to_dict(self) -> dict[str, dict[str, Any]]:
        """Nested sections, as TOML would write them (for trace metadata and --json)."""
        out: dict[str, dict[str, Any]] = {"model": {"name": self.model}}
        for k, v in self.values:
            section, name = k.split(".", 1)
            out.setdefault(section, {})[name] = list(v) if isinstance(v, tuple) else v
        return out

    def with_values(self, **changes: Any) -> "Config":
        """A copy with dotted keys changed (``with_values(**{"check.max_depth": 3})``)."""
        merged = dict(self.values) | changes
        return Config(self.model, tuple(sorted(merged.items())), self.source)


MAX_CONFIG_BYTES = 1 << 20   # a configuration is a few hundred bytes; refuse what cannot be one


def shown(text: object, limit: int = 200) -> str:
    """A name or path from the user, safe to echo on one line: control characters escaped, and
    cut after ``limit`` characters."""
    text = str(text)
    cut = text[:limit] + ("..." if len(text) > limit else "")
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in cut)


def brief(value: object) -> str:
    """A value from the user, as Python writes it, for one line of an error."""
    return shown(repr(value), 100)


def _toml(text: str, where: str) -> dict[str, Any]:
    """``tomllib.loads``, with every way it can fail as one ConfigError (invalid TOML, arrays
    nested beyond the interpreter's recursion limit, integers beyond Python's 4,300 digits)."""
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{where}: invalid TOML: {e}") from None
    except RecursionError:
        raise ConfigError(f"{where}: invalid TOML: nested too deeply") from None
    except ValueError as e:   # int() of a huge literal
        raise ConfigError(f"{where}: invalid TOML: {shown(e)}") from None


def parse_assignment(text: str) -> tuple[str, Any]:
    """``section.key=value`` from ``--set``; the value is TOML, or else a bare string."""
    key, sep, raw = text.partition("=")
    key = key.strip()
    if not sep or "." not in key or not all(key.split(".")):
        raise ConfigError(f"--set {shown(text)!r}: expected section.key=value")
    try:
        value = tomllib.loads(f"v = {raw.strip()}")["v"]
    except tomllib.TOMLDecodeError:
        value = raw.strip()
    except (RecursionError, ValueError):
        raise ConfigError(f"--set {shown(key)}: the value is not TOML this tool can read "
                          "(nested too deeply, or an integer too large)") from None
    return key, value


class UserFileError(ValueError):
    """A user's file that cannot be read as one; the message is one line naming the file."""


def read_user_file(path: str | Path, cap: int, where: str, what: str = "file") -> bytes:
    """The bytes of a user's file (a configuration, a trace, a checkpoint's meta): the one reader
    they all go through. Only a regular file is read: anything else (a directory, a FIFO, a
    device, a socket) is refused without reading from it, so a FIFO never blocks: the path is
    looked at first, then opened without blocking (``O_NONBLOCK``) and looked at again on the
    open descriptor (what was opened is what was checked). At most ``cap`` bytes: a larger file
    is refused. ``UserFileError`` (one line, starting with ``where``) for whatever goes wrong."""
    try:
        st = os.stat(path)
        if stat.S_ISDIR(st.st_mode):
            raise UserFileError(f"{where}: is a directory")
        if not stat.S_ISREG(st.st_mode):
            raise UserFileError(f"{where}: not a regular file")
        if st.st_size > cap:
            raise UserFileError(f"{where}: {st.st_size:,} bytes, more than a {what} can be "
                                f"({cap:,})")
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):   # swapped since the stat
                raise UserFileError(f"{where}: not a regular file")
            os.set_blocking(fd, True)
            with os.fdopen(fd, "rb", closefd=False) as f:
                data = f.read(cap + 1)
        finally:
            os.close(fd)
    except UserFileError:
        raise
    except (FileNotFoundError, NotADirectoryError):
        raise UserFileError(f"{where}: no such file") from None
    except OSError as e:
        raise UserFileError(f"{where}: {e.strerror or e}") from None
    except ValueError as e:   # a NUL byte in the path
        raise UserFileError(f"{where}: not a usable path ({shown(e, 80)})") from None
    if len(data) > cap:
        raise UserFileError(f"{where}: more than a {what} can be ({cap:,} bytes)")
    return data


def read_toml(path: str | Path) -> dict[str, Any]:
    """The TOML of a configuration file: a regular file of at most ``MAX_CONFIG_BYTES`` of
    UTF-8 (``read_user_file``), not empty (an empty file is refused: it would mean the model's
    parameter defaults, which are not the built-in configuration that no CONFIG means)."""
    where = f"config {shown(path)}"
    try:
        data = read_user_file(path, MAX_CONFIG_BYTES, where, "configuration")
    except UserFileError as e:
        raise ConfigError(str(e)) from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise ConfigError(f"{where}: not UTF-8 text") from None
    raw = _toml(text, where)
    if not raw:
        raise ConfigError(f"{where}: is empty (no setting); without CONFIG the built-in "
                          "default runs")
    return raw


def resolve_config_path(name: str) -> Path:
    """A path, or the name of a configuration shipped in configs/ (``tiny`` -> configs/tiny.toml)."""
    if not name:
        raise ConfigError("the config name is empty (omit CONFIG for the built-in default)")
    p = Path(name)
    try:
        if p.exists() or p.suffix == ".toml" or "/" in name:
            return p
        shipped = REPO_CONFIGS / f"{name}.toml"
        return shipped if shipped.exists() else p
    except (OSError, ValueError) as e:  # a name too long for the filesystem, a NUL byte
        raise ConfigError(f"config {shown(name)[:80]}: {getattr(e, 'strerror', None) or e}") \
            from None


def shipped_name(source: str) -> str:
    """A configuration's source as people name it: ``configs/tiny.toml`` for a shipped one,
    wherever it is installed; any other path as given."""
    try:
        if Path(source).is_file() and Path(source).resolve().parent == REPO_CONFIGS.resolve():
            return f"configs/{Path(source).name}"
    except (OSError, ValueError):
        pass
    return source


def shipped_configs() -> list[Path]:
    return sorted(REPO_CONFIGS.glob("*.toml")) if REPO_CONFIGS.is_dir() else []


def build_config(raw: Mapping[str, Any], params: Sequence[Param], model: str,
                 source: str = "<built-in>", overrides: Iterable[tuple[str, Any]] = ()) -> Config:
    """Validate ``raw`` TOML sections (and ``--set`` overrides) against ``params``."""
    known = {p.key: p for p in (*CHECK_PARAMS, *params)}
    sections = sorted({p.section for p in known.values()} | {"model"})
    values: dict[str, Any] = {}
    for section, body in raw.items():
        if section not in sections:
            raise ConfigError(f"{source}: unknown section [{shown(section)}] for model {model} "
                              f"(known: {', '.join(sections)})")
        if not isinstance(body, dict):
            raise ConfigError(f"{source}: [{shown(section)}] must be a table")
        for name, value in body.items():
            key = f"{section}.{name}"
            if key == "model.name":
                continue
            values[key] = _lookup(known, key, source, model).check(value, source)
    for key, value in overrides:
        values[key] = _lookup(known, key, "--set", model).check(value, "--set")
    for key, p in known.items():
        values.setdefault(key, p.check(p.default, "default") if p.default is not None else None)
    return Config(model, tuple(sorted((k, v) for k, v in values.items() if v is not None)), source)


def _lookup(known: Mapping[str, Param], key: str, where: str, model: str) -> Param:
    try:
        return known[key]
    except KeyError:
        section = key.split(".", 1)[0]
        names = sorted(k.split(".", 1)[1] for k in known if k.startswith(section + "."))
        hint = f" (known: {', '.join(names)})" if names else ""
        raise ConfigError(f"{where}: unknown key {shown(key)} for model {model}{hint}") from None
