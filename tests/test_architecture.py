"""The architecture holds: the import contract of pyproject.toml (import-linter: the model never
imports its properties or the explorers, explorers and trace tools see only the model contract, no
circles), the whole import graph is acyclic, and models and property sets are found through entry
points, so a package of one's own extends kafka-mc without editing it."""
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import grimp
import networkx as nx
import pytest

from kafka_mc import explorers
from kafka_mc import invariants
from kafka_mc import model
from kafka_mc import realkafka
from kafka_mc import traces
from kafka_mc.model import registry

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = tuple(p.__name__ for p in (model, invariants, explorers, traces, realkafka))
TOPS = sorted({p.split(".")[0] for p in PACKAGES})   # the top-level packages grimp reads


def within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")
LINT = shutil.which("lint-imports", path=str(Path(sys.executable).parent)) or "lint-imports"


def lint(root: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(root)}
    return subprocess.run([LINT, "--config", str(root / "pyproject.toml"), "--no-cache"], cwd=root,
                          env=env, capture_output=True, text=True, timeout=120)


def test_the_import_contract_holds():
    run = lint(ROOT)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "0 broken" in run.stdout


@pytest.fixture
def copy(tmp_path):
    """A copy of the code and its contract, to break."""
    for package in PACKAGES:
        folder = package.rpartition(".")[2]
        shutil.copytree(ROOT / folder, tmp_path / folder,
                        ignore=shutil.ignore_patterns("__pycache__"))
    if (ROOT / "kafka_mc").is_dir():   # the installed names' package (its folders link to these)
        shutil.copytree(ROOT / "kafka_mc", tmp_path / "kafka_mc", symlinks=True,
                        ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    return tmp_path


def plant(root: Path, module: str, code: str) -> None:
    path = root / (module.replace(".", "/") + ".py")
    path.write_text(path.read_text() + "\n\n" + textwrap.dedent(code))


EXPLORERS = "Explorers: the CLI over the engines over the BFS over the reductions over the search core"
MODEL = "Model: the models over the registry over the contract over its helpers"


@pytest.mark.parametrize("module, code, contract", [
    # a function-local import counts: the model reaching up to its properties
    ("kafka_mc.model.kafka.spec", "def _props():\n    from kafka_mc.invariants import PROPERTIES\n    return PROPERTIES\n",
     "Models never import properties, explorers or trace tools"),
    ("kafka_mc.model.registry", "def _default():\n    from kafka_mc.model.kafka import spec\n    return spec\n",
     MODEL),
    ("kafka_mc.model.core", "def _bind():\n    from kafka_mc.model import registry\n",
     MODEL),
    ("kafka_mc.model.build.compiled", "def _core():\n    from kafka_mc.model import core\n",
     MODEL),
    ("kafka_mc.explorers.bfs.search", "from kafka_mc.model.kafka.world import World\n",
     "Explorers and trace tools see only the model contract"),
    ("kafka_mc.traces.trace", "from kafka_mc.explorers.core import report\n",
     "Layers: explorers over the real-Kafka harness over trace tools over the model"),
    # the harness runs real Kafka against the model contract, never a model's insides
    ("kafka_mc.realkafka.run", "def _world():\n    from kafka_mc.model.kafka import world\n",
     "The real-Kafka harness sees only the model contract"),
    ("kafka_mc.traces.trace", "def _real():\n    from kafka_mc.realkafka import releases\n",
     "Layers: explorers over the real-Kafka harness over trace tools over the model"),
    ("kafka_mc.model.kafka.world", "def _cycle():\n    from kafka_mc.model.kafka import spec\n",
     "No import circles between sibling modules"),
    # the web explorer sees only the contract, and only the CLI loads it (and its framework)
    ("kafka_mc.explorers.web.session", "from kafka_mc.model.kafka.world import World\n",
     "Explorers and trace tools see only the model contract"),
    ("kafka_mc.explorers.bfs.search", "def _web():\n    from kafka_mc.explorers.web import app\n",
     EXPLORERS),
    ("kafka_mc.explorers.graph.search", "def _web():\n    from kafka_mc.explorers.web import session\n",
     EXPLORERS),
    # the search core knows no engine; engines beside each other never import each other
    ("kafka_mc.explorers.core.checking", "def _bfs():\n    from kafka_mc.explorers.bfs import search\n",
     EXPLORERS),
    ("kafka_mc.explorers.walks.simulate", "def _spark():\n    from kafka_mc.explorers.spark import tasks\n",
     EXPLORERS),
    ("kafka_mc.explorers.web.session", "def _cycle():\n    from kafka_mc.explorers.web import app\n",
     "No import circles between sibling modules"),
])
def test_the_contract_fails_on_a_back_arrow_or_a_circle(copy, module, code, contract):
    plant(copy, module, code)
    run = lint(copy)
    assert run.returncode != 0
    assert f"{contract} BROKEN" in " ".join(run.stdout.split()), run.stdout   # (long names wrap)


def test_the_import_graph_has_no_circle():
    graph = grimp.build_graph(*TOPS)
    g = nx.DiGraph((m, i) for m in graph.modules for i in graph.find_modules_directly_imported_by(m))
    assert nx.is_directed_acyclic_graph(g), nx.find_cycle(g)



MAX_FUNCTION_LINES = 120


def test_no_function_is_longer_than_120_lines():
    """Issue 42: a function longer than MAX_FUNCTION_LINES (nested ones counted in it) is split
    into named pieces; none is left in the packages (the longest is about 110)."""
    import ast

    long = []
    for package in (model, invariants, explorers, traces, realkafka):
        folder = Path(package.__file__).resolve().parent
        for file in sorted(folder.rglob("*.py")):
            for node in ast.walk(ast.parse(file.read_text())):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    lines = node.end_lineno - node.lineno + 1
                    if lines > MAX_FUNCTION_LINES:
                        long.append(f"{file.relative_to(ROOT)}:{node.lineno} {node.name} ({lines})")
    assert not long, long

CONTRACT = {model.__name__, "kafka_mc.model.core", "kafka_mc.model.protocol", "kafka_mc.model.config", "kafka_mc.model.codec",
            "kafka_mc.model.registry", "kafka_mc.model.build.compiled", "kafka_mc.model.fingerprints", "kafka_mc.model.display",
            "kafka_mc.model.symmetry", "kafka_mc.model.canonical", "kafka_mc.model.symbolic", "kafka_mc.model.observations",
            "kafka_mc.model.capabilities", "kafka_mc.model.comparison"}


def test_explorers_and_trace_tools_import_only_the_contract():
    """An allowlist, beyond the contract's denylist: of ``model`` they import these modules and
    nothing else, and the ``model`` package itself imports nothing, nor does the compiled builds'
    finder (importing the contract must not load a model)."""
    graph = grimp.build_graph(*TOPS)
    used = {i for m in graph.modules
            if within(m, explorers.__name__) or within(m, traces.__name__)
            for i in graph.find_modules_directly_imported_by(m) if within(i, model.__name__)}
    assert used <= CONTRACT, used - CONTRACT
    assert graph.find_modules_directly_imported_by(model.__name__) == set()
    assert graph.find_modules_directly_imported_by("kafka_mc.model.build.compiled") == set()


def test_models_and_properties_come_from_entry_points():
    assert {"kafka", "twophase", "twophase-broken"} <= set(registry.models())
    names = [p.name for p in registry.properties_for("kafka")]
    assert names[:2] == ["txn_atomicity", "committed_writes_visible"] and "quiescent_completion" in names
    assert registry.properties_for("twophase") == ()


PLUGIN = '''
from kafka_mc.model.core import Expectation, Property
from kafka_mc.model.registry import spec_entry
from kafka_mc.model.toys.twophase import PARAMS, SPEC

PROPERTIES = (Property("at_most_one_coordinator", Expectation.ALWAYS,
                       lambda K, w: w.coordinator.coordinator_epoch <= 1,
                       "the coordinator fails over at most once"),)
TWOPHASE_MINE = spec_entry(SPEC.derive("twophase-mine"), PARAMS)
'''


def test_a_package_of_ones_own_adds_a_model_and_properties(tmp_path, monkeypatch):
    """A distribution on sys.path that declares entry points in kafka-mc's groups: its model is
    listed and runs, its properties are added to the Kafka model's after kafka-mc's own."""
    (tmp_path / "kmc_plugin.py").write_text(PLUGIN)
    info = tmp_path / "kmc_plugin-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: kmc-plugin\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(
        "[kafka_mc.models]\ntwophase-mine = kmc_plugin:TWOPHASE_MINE\n\n"
        "[kafka_mc.properties]\nkafka = kmc_plugin:PROPERTIES\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    registry.refresh()
    try:
        assert "twophase-mine" in registry.models()
        model = registry.bind(registry.load(None, model="twophase-mine"))
        assert model.name == "twophase-mine"
        kafka = registry.bind(registry.load(None))
        names = [p.name for p in kafka.properties()]
        assert names[-1] == "at_most_one_coordinator" and names[0] == "txn_atomicity"
    finally:
        monkeypatch.undo()
        registry.refresh()
    assert "twophase-mine" not in registry.models()


def _plugin(tmp_path, monkeypatch, module: str, entry_points: str):
    (tmp_path / "kmc_bad.py").write_text(module)
    info = tmp_path / "kmc_bad-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: kmc-bad\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(entry_points)
    monkeypatch.syspath_prepend(str(tmp_path))
    registry.refresh()


@pytest.fixture
def fresh_registry():
    yield
    registry.refresh()


def test_a_broken_plugin_is_one_clear_error_and_spares_other_models(tmp_path, monkeypatch,
                                                                     fresh_registry):
    from kafka_mc.model.config import ConfigError
    _plugin(tmp_path, monkeypatch, "raise ImportError('no module named zeta')\n",
            "[kafka_mc.models]\nbroken = kmc_bad:MODEL\n")
    with pytest.raises(ConfigError, match="entry point broken = kmc_bad:MODEL .* cannot be "
                                          "loaded: ImportError: no module named zeta"):
        registry.entry("broken")
    assert registry.entry("twophase").name == "twophase"    # only the named model is loaded


def test_a_plugin_property_named_like_a_builtin_one_is_refused(tmp_path, monkeypatch,
                                                                fresh_registry):
    from kafka_mc.model.config import ConfigError
    _plugin(tmp_path, monkeypatch,
            "from kafka_mc.model.core import Expectation, Property\n"
            "PROPS = (Property('txn_atomicity', Expectation.ALWAYS, lambda K, w: True),)\n",
            "[kafka_mc.properties]\nkafka = kmc_bad:PROPS\n")
    with pytest.raises(ConfigError, match="property txn_atomicity is registered twice"):
        registry.bind(registry.load(None))
