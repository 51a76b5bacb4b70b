"""Rewrite the import names of kafka-mc's packages to their installed names under ``kafka_mc``
(issue 45 item 3; docs/design.md section 10): ``model`` -> ``kafka_mc.model``, and the same for
``invariants``, ``explorers``, ``traces`` and ``realkafka``. The folders stay where they are;
``kafka_mc/`` links to them.

    python tools/rename_imports.py [--check] [ROOT]

Idempotent: a name already under ``kafka_mc`` is left alone, so a second run changes nothing
(``--check``: exit 1 and list the files a run would change). Run it on the whole tree after a
merge; its output is a commit of its own, never edited by hand. What it rewrites:

* Python files (every ``*.py`` git tracks, but this script and its test), by their tokens:
  - import statements: ``from model.x import y`` -> ``from kafka_mc.model.x import y``;
    ``import model`` -> ``from kafka_mc import model``; ``import model.x as m`` ->
    ``import kafka_mc.model.x as m``; ``import model.x`` (which binds ``model``) ->
    ``from kafka_mc import model`` plus ``import kafka_mc.model.x  # noqa: F401`` (so that
    ``model.x`` is loaded); relative imports are left alone;
  - strings (docstrings and f-strings included): a dotted name whose module exists
    (``"model.kafka.spec"``, ``"explorers.cli"`` after ``-m``, ``"model.kafka.spec:MODEL"``,
    ``explorers.main.prepare()`` in code run by ``python -c``), and in code held in strings
    ``from model import x`` and ``import model``. A dotted name that names no module (the
    configuration key ``model.clients``) is left alone.
* ``pyproject.toml``: the entry points' and console script's values, the package-data keys and the import contract
  (``[tool.importlinter]``: ``root_packages`` becomes ``["kafka_mc"]``; every other name, bare
  or dotted, is prefixed).
* ``Makefile`` and ``.ci/*``: ``python -m <module>``.
* Markdown (README.md, docs/): the code of fenced ``python`` blocks (docs/extending.md's
  plug-in) and ``python -m <module>`` in ``sh``/``console`` blocks.

Comments are prose and are left alone.
"""
from __future__ import annotations

import argparse
import ast
import io
import re
import subprocess
import sys
import tokenize
from pathlib import Path

PREFIX = "kafka_mc"
TOPS = ("model", "invariants", "explorers", "traces", "realkafka")
_TOPS = "|".join(TOPS)
# a dotted name starting at one of ours, not already part of a longer name (kafka_mc.model.x,
# a path tests/model.py, an attribute x.model.y)
DOTTED = re.compile(r"(?<![\w./-])((?:%s)(?:\.\w+)+)" % _TOPS)
FROM = re.compile(r"(?<![\w.])from\s+(%s)(?=[\s.])" % _TOPS)
BARE_IMPORT = re.compile(r"(from\s+[\w.]+\s+)?(?<![\w.])import\s+(%s)(?![\w.])(?!\s+as\b)" % _TOPS)
BARE_IMPORT_AS = re.compile(r"(from\s+[\w.]+\s+)?(?<![\w.])import\s+(%s)(?=\s+as\b)" % _TOPS)
# this script and its test, whose samples hold the old names on purpose
SELF = ("tools/rename_imports.py", "tests/test_rename_imports.py")
MINUS_M = re.compile(r"(-m\s+)((?:%s)(?:\.\w+)*)\b" % _TOPS)


class Renamer:
    def __init__(self, root: Path):
        self.root = root

    # --- what exists -------------------------------------------------------------------------
    def is_module(self, parts: list[str]) -> bool:
        base = self.root.joinpath(*parts)
        return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()

    def module_prefix(self, dotted: str) -> int:
        """How many leading parts of ``dotted`` name a module of ours (0: none beyond the top)."""
        parts = dotted.split(".")
        for n in range(len(parts), 1, -1):
            if self.is_module(parts[:n]):
                return n
        return 0

    def dotted(self, text: str) -> str:
        """Every dotted name in ``text`` that starts at a module of ours, prefixed."""
        def sub(m):
            name = m.group(1)
            return f"{PREFIX}.{name}" if self.module_prefix(name) else name
        return DOTTED.sub(sub, text)

    def code_text(self, text: str) -> str:
        """Code held in a string or a Markdown block: imports and dotted names."""
        text = FROM.sub(lambda m: f"from {PREFIX}.{m.group(1)}", text)
        text = BARE_IMPORT.sub(lambda m: m.group(0) if m.group(1) else
                               f"from {PREFIX} import {m.group(2)}", text)
        text = BARE_IMPORT_AS.sub(lambda m: m.group(0) if m.group(1) else
                                  f"import {PREFIX}.{m.group(2)}", text)
        return self.dotted(text)

    def minus_m(self, text: str) -> str:
        return MINUS_M.sub(lambda m: m.group(1) + (f"{PREFIX}.{m.group(2)}" if
                           self.is_module(m.group(2).split(".")) else m.group(2)), text)

    # --- Python ------------------------------------------------------------------------------
    def python(self, source: str) -> str:
        source = self._imports(source)
        return self._strings(source)

    def _imports(self, source: str) -> str:
        tree = ast.parse(source)
        lines = source.splitlines(keepends=True)
        starts = [0]
        for line in lines:
            starts.append(starts[-1] + len(line))

        def offset(lineno, col):   # (col is in UTF-8 bytes)
            line = lines[lineno - 1]
            return starts[lineno - 1] + len(line.encode()[:col].decode())
        edits = []
        bound = {}   # id of a statement list -> the tops a rewritten import bound in it
        owner = {}   # statement -> its statement list
        for parent in ast.walk(tree):
            for field in ("body", "orelse", "finalbody"):
                body = getattr(parent, field, None)
                if isinstance(body, list):
                    for statement in body:
                        owner[id(statement)] = id(body)
        for node in sorted((n for n in ast.walk(tree) if isinstance(n, (ast.Import,
                                                                        ast.ImportFrom))),
                           key=lambda n: (n.lineno, n.col_offset)):
            if isinstance(node, ast.ImportFrom):
                if node.level or not node.module or node.module.split(".")[0] not in TOPS:
                    continue
                a = offset(node.lineno, node.col_offset)
                m = re.match(r"from(\s+)", source[a:])
                edits.append((a + m.end(), a + m.end(), PREFIX + "."))
            elif isinstance(node, ast.Import):
                if not any(x.name.split(".")[0] in TOPS for x in node.names):
                    continue
                a = offset(node.lineno, node.col_offset)
                b = offset(node.end_lineno, node.end_col_offset)
                line = lines[node.lineno - 1]
                indent = line[:len(line) - len(line.lstrip())]
                alone = line.lstrip().startswith("import") and \
                    starts[node.lineno - 1] + len(indent) == a
                statements = []
                for x in node.names:
                    top = x.name.split(".")[0]
                    if top not in TOPS:
                        statements.append(f"import {x.name}" + (f" as {x.asname}" if x.asname else ""))
                    elif x.asname:
                        statements.append(f"import {PREFIX}.{x.name} as {x.asname}")
                    elif "." in x.name:   # (binds the top: once in a statement list)
                        seen = bound.setdefault(owner.get(id(node)), set())
                        if top not in seen:
                            statements.append(f"from {PREFIX} import {top}")
                            seen.add(top)
                        statements.append(f"import {PREFIX}.{x.name}  # noqa: F401")
                    else:
                        statements.append(f"from {PREFIX} import {top}")
                rest = source[b:source.find("\n", b) if "\n" in source[b:] else len(source)]
                if not alone:   # (on a line with other code: no comment can follow)
                    text = "; ".join(x.replace("  # noqa: F401", "") for x in statements)
                else:
                    if "#" in rest:   # the line's own comment ends it
                        statements[-1] = statements[-1].replace("  # noqa: F401", "")
                    text = ("\n" + indent).join(statements)
                edits.append((a, b, text))
        for a, b, text in sorted(edits, reverse=True):
            source = source[:a] + text + source[b:]
        return source

    def _strings(self, source: str) -> str:
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
        lines = source.splitlines(keepends=True)
        starts = [0]
        for line in lines:
            starts.append(starts[-1] + len(line))
        edits = []
        for t in tokens:
            if t.type != tokenize.STRING:
                continue
            new = self.code_text(t.string)
            if new != t.string:
                a = starts[t.start[0] - 1] + t.start[1]
                b = starts[t.end[0] - 1] + t.end[1]
                edits.append((a, b, new))
        for a, b, text in sorted(edits, reverse=True):
            source = source[:a] + text + source[b:]
        return source

    # --- other files -------------------------------------------------------------------------
    def pyproject(self, text: str) -> str:
        blocks = re.split(r"(?m)^(?=\[)", text)
        return "".join(self._toml_block(b) for b in blocks)

    def _toml_block(self, block: str) -> str:
        header = block.split("\n", 1)[0].strip()
        relative = re.search(r"(?m)^\s*containers\s*=", block) is not None
        out, key = [], None
        for i, line in enumerate(block.splitlines(keepends=True)):
            code, hash_, comment = _split_comment(line)
            m = re.match(r"\s*([\w-]+)\s*=", code)
            if i and m:
                key = m.group(1)
            if i == 0:
                pass
            elif header.startswith("[project.entry-points") or header == "[project.scripts]":
                code = re.sub(r'(=\s*")((?:%s)(?:\.\w+)*)(:)' % _TOPS,
                              lambda m: m.group(1) + PREFIX + "." + m.group(2) + m.group(3), code)
            elif header == "[tool.setuptools.package-data]":
                code = re.sub(r'^(\s*")((?:%s)(?:\.\w+)*)(")' % _TOPS,
                              lambda m: m.group(1) + PREFIX + "." + m.group(2) + m.group(3), code)
            elif header in ("[tool.importlinter]", "[[tool.importlinter.contracts]]"):
                if key == "root_packages":
                    code = re.sub(r"\[.*\]", f'["{PREFIX}"]', code)
                elif key not in (None, "name", "type") and not (key == "layers" and relative):
                    code = re.sub(r'(["|]\s*|->\s*)((?:%s)(?:\.\w+)*)(?=[\s"|])' % _TOPS,
                                  lambda m: f"{m.group(1)}{PREFIX}.{m.group(2)}", code)
            out.append(code + hash_ + comment)
        return "".join(out)

    def markdown(self, text: str) -> str:
        def block(m):
            lang, body = m.group(1), m.group(2)
            if lang.split()[0] in ("python", "py"):
                body = self.code_text(body)
            elif lang.split()[0] in ("sh", "console", "bash", "shell"):
                body = self.minus_m(body)
            return f"```{lang}\n{body}```"
        return re.sub(r"^```([^\n`]+)\n(.*?)^```", block, text, flags=re.S | re.M)

    def shell(self, text: str) -> str:
        return self.minus_m(text)


def _split_comment(line: str) -> tuple[str, str, str]:
    """(code, '#', comment) of a TOML line; a '#' inside a string is code."""
    quoted = False
    for i, c in enumerate(line):
        if c == '"':
            quoted = not quoted
        elif c == "#" and not quoted:
            return line[:i], "#", line[i + 1:]
    return line, "", ""


def files(root: Path) -> list[Path]:
    try:
        listed = subprocess.run(["git", "ls-files", "-z"], cwd=root, capture_output=True,
                                check=True).stdout.decode().split("\0")
    except (OSError, subprocess.CalledProcessError):
        listed = [str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()]
    out = []
    for name in listed:
        p = root / name
        if not name or not p.is_file() or p.is_symlink() or name in SELF:
            continue
        if name.startswith(("build/", ".venv/")):
            continue
        out.append(p)
    return sorted(out)


def rewrite(root: Path, check: bool = False) -> list[Path]:
    r = Renamer(root)
    changed = []
    for p in files(root):
        rel = p.relative_to(root).as_posix()
        if p.suffix == ".py":
            how = r.python
        elif rel == "pyproject.toml":
            how = r.pyproject
        elif p.suffix == ".md":
            how = r.markdown
        elif rel == "Makefile" or rel.startswith(".ci/"):
            how = r.shell
        else:
            continue
        text = p.read_text(encoding="utf-8")
        new = how(text)
        if new != text:
            changed.append(p)
            if not check:
                p.write_text(new, encoding="utf-8")
    return changed


def main(argv: list[str] | None = None) -> int:
    a = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    a.add_argument("root", nargs="?", default=str(Path(__file__).resolve().parent.parent))
    a.add_argument("--check", action="store_true", help="change nothing; exit 1 if a run would")
    args = a.parse_args(argv)
    root = Path(args.root)
    if not (root / "pyproject.toml").is_file():
        print(f"rename_imports: {root} is not kafka-mc's checkout (no pyproject.toml)",
              file=sys.stderr)
        return 2
    changed = rewrite(root, args.check)
    for p in changed:
        print(p.relative_to(root))
    print(f"rename_imports: {len(changed)} file(s) {'to change' if args.check else 'changed'}",
          file=sys.stderr)
    return 1 if args.check and changed else 0


if __name__ == "__main__":
    sys.exit(main())
