import pytest

from kafka_mc.model import registry
from kafka_mc.model.config import ConfigError, parse_assignment, resolve_config_path


def test_builtin_default_is_the_shipped_small_config():
    cfg = registry.load()
    assert cfg.model == "kafka" and cfg == registry.load(resolve_config_path("small"))
    assert cfg["check.invariants"] == ("all",) and cfg["check.max_depth"] == 0
    assert cfg.get("check.deadlock") is None and cfg.source == "<built-in>"
    assert registry.load(model="twophase")["model.resource_managers"] == 3


def test_toml_file_with_overrides(tmp_path):
    f = tmp_path / "c.toml"
    f.write_text('[model]\nname = "twophase-broken"\nresource_managers = 4\n'
                 '[check]\ninvariants = ["TCConsistent"]\ndeadlock = false\n')
    cfg = registry.load(f, overrides=[("check.max_depth", 3)])
    assert (cfg.model, cfg["model.resource_managers"], cfg["check.max_depth"]) == ("twophase-broken", 4, 3)
    assert cfg["check.invariants"] == ("TCConsistent",) and cfg["check.deadlock"] is False
    assert registry.load(f, model="twophase").model == "twophase"  # --model wins
    assert registry.from_dict(cfg.to_dict()) == cfg


@pytest.mark.parametrize("text, message", [
    ("[model]\nname = \"twophase\"\n[cluster]\npartitions = 2\n", "unknown section [cluster] for model twophase"),
    ("[model]\nname = \"twophase\"\nresource_manager = 3\n", "unknown key model.resource_manager for model twophase (known: resource_managers)"),
    ("[model]\nname = \"twophase\"\nresource_managers = 0\n", "model.resource_managers = 0 is out of range (1..14)"),
    ("[model]\nname = \"twophase\"\nresource_managers = true\n", "model.resource_managers must be an integer, got True"),
    ("[model]\nname = \"twophase\"\nresource_managers = \"3\"\n", "model.resource_managers must be an integer"),
    ("[protocol]\nversion = \"kafka-9\"\n", "protocol.version = 'kafka-9' is not one of kafka-0.11"),
    ("[cluster]\npartitions = 9\n", "cluster.partitions = 9 is out of range (1..4)"),
    ("[faults]\nbroker_fires = 1\n", "unknown key faults.broker_fires for model kafka"),
    ("[check]\ndeadlock = 1\n", "check.deadlock must be true or false"),
    ("[check]\ninvariants = \"all\"\n", "check.invariants must be a list of strings"),
    ("[check]\nmax_depth = -1\n", "check.max_depth = -1 is out of range"),
    ("model = 3\n", "[model] must be a table"),
    ("[model]\nname = \"nope\"\n", "unknown model 'nope' (known: kafka, pulsar, rocketmq, twophase"),
    ("[model]\nname = 7\n", "model.name must be a string"),
    ("[model\n", "invalid TOML"),
])
def test_bad_configs_name_the_problem(tmp_path, text, message):
    f = tmp_path / "bad.toml"
    f.write_text(text)
    with pytest.raises(ConfigError, match=None) as err:
        registry.load(f)
    assert message in str(err.value) and "\n" not in str(err.value)


def test_missing_file_and_directory(tmp_path):
    with pytest.raises(ConfigError, match="no such file"):
        registry.load(tmp_path / "absent.toml")
    with pytest.raises(ConfigError, match="is a directory"):
        registry.load(tmp_path)


def test_set_values_are_toml_or_bare_strings():
    assert parse_assignment("model.resource_managers=7") == ("model.resource_managers", 7)
    assert parse_assignment("check.invariants=[\"a\", \"b\"]") == ("check.invariants", ["a", "b"])
    assert parse_assignment("protocol.version=kafka-2.5") == ("protocol.version", "kafka-2.5")
    assert parse_assignment("check.deadlock=false") == ("check.deadlock", False)
    for bad in ("nodot=1", "model.x", ".x=1", "x.=1"):
        with pytest.raises(ConfigError, match="expected section.key=value"):
            parse_assignment(bad)


def test_set_overrides_are_validated():
    with pytest.raises(ConfigError, match=r"^--set: unknown key model.rms"):
        registry.load(model="twophase", overrides=[("model.rms", 3)])
    with pytest.raises(ConfigError, match="out of range"):
        registry.load(model="twophase", overrides=[("model.resource_managers", 15)])


def test_shipped_config_names_resolve():
    assert resolve_config_path("twophase").name == "twophase.toml"
    assert str(resolve_config_path("some/file.toml")) == "some/file.toml"


@pytest.mark.parametrize("text", ["[model]\nname = \"kafka\"\n",
                                  "[model]\nname = \"kafka\"\n[check]\n[faults]\n"])
def test_a_config_naming_only_its_model_is_refused(tmp_path, text):
    """Issue 48: it ran kafka's parameter defaults, not the built-in configuration (as an empty
    file would; that one is refused too). A model whose built-in configuration is its parameter
    defaults (twophase) takes it."""
    f = tmp_path / "c.toml"
    f.write_text(text)
    with pytest.raises(ConfigError, match="holds no setting but the model's name: it would mean "
                                          "kafka's parameter defaults"):
        registry.load(f)
    f.write_text("[model]\nname = \"twophase\"\n")
    assert registry.load(f) == registry.load(model="twophase")
