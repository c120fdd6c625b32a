"""The daemon's TOML config: defaults, file + flag precedence, every error naming its key, and
the example file staying in step with the code."""

from __future__ import annotations

import dataclasses
import tomllib
from pathlib import Path

import pytest

from cuzk.engine import EngineConfig
from cuzk.errors import BadInput
from cuzk.server.config import (
    DaemonConfig,
    EngineSection,
    FaultsSection,
    field_docs,
    load_config,
    parse_listen,
    split_host_port,
)

EXAMPLE = Path(__file__).resolve().parents[2] / "cuzk.example.toml"


def write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "cuzk.toml"
    p.write_text(text)
    return p


def flatten(table: dict, prefix: str = "") -> dict[str, object]:
    out: dict[str, object] = {}
    for k, v in table.items():
        if isinstance(v, dict):
            out.update(flatten(v, f"{prefix}{k}."))
        else:
            out[prefix + k] = v
    return out


# --- defaults and the example file -----------------------------------------------------------


def test_embedded_defaults_equal_the_dataclass_defaults():
    cfg = load_config(None)
    assert cfg == DaemonConfig()
    assert cfg.server.listen == "auto" and cfg.server.address.private
    assert cfg.server.address.unix_path.endswith("/cuzk.sock") and cfg.server.address.loopback
    assert cfg.server.max_message_bytes == 256 * 2**20
    assert (cfg.http.enabled, cfg.http.host) == (True, "127.0.0.1")
    assert cfg.auth.token is None and not cfg.auth.tls
    assert cfg.log.level == "info"
    assert "~" not in str(cfg.engine.param_dir) and "~" not in str(cfg.journal.path)


def test_engine_section_covers_engine_config_with_the_same_defaults():
    engine_fields = {f.name: f for f in dataclasses.fields(EngineConfig)}
    section = EngineSection()
    for name, f in engine_fields.items():
        if name in ("backend_factory", "cpu_device_memory"):  # tests and benchmarks only
            continue
        assert hasattr(section, name), f"engine.{name} missing from the config"
        if name in ("param_dir", "faults"):
            continue
        assert getattr(section, name) == f.default, name
    # every fault field too, with FaultInjection's defaults
    built = section.engine_config()
    assert isinstance(built, EngineConfig)
    assert built.faults == type(built.faults)()
    assert built.param_dir == section.param_dir


def test_example_file_parses_to_exactly_the_defaults():
    assert load_config(EXAMPLE) == DaemonConfig()


def test_example_file_documents_every_key_and_nothing_else():
    keys = set(flatten(tomllib.loads(EXAMPLE.read_text())))
    assert keys == set(field_docs())


def test_engine_config_carries_every_value(tmp_path, rng):
    devices, workers, synth = (int(x) for x in rng.integers(1, 9, size=3))
    budget_gib = int(rng.integers(1, 512))
    rate = float(rng.random())
    text = f"""
[engine]
param_dir = "{tmp_path / "keys"}"
backend = "cuda"
devices = {devices}
workers_per_device = {workers}
synthesis_workers = {synth}
synthesis_lookahead = 7
msm_workers = 3
memory_budget = "{budget_gib}GiB"
memory_margin = 12345
shape_cache = "{tmp_path / "shapes"}"
max_partitions = 10
retain_jobs = 99
join_timeout_s = 2.5
[engine.faults]
kernel_error = {rate}
seed = 42
targets = ["a", "b"]
"""
    ec = load_config(write(tmp_path, text)).engine_config()
    assert (ec.backend, ec.devices, ec.workers_per_device, ec.synthesis_workers) == (
        "cuda",
        devices,
        workers,
        synth,
    )
    assert (ec.synthesis_lookahead, ec.msm_workers) == (7, 3)
    assert ec.memory_budget == budget_gib * 2**30 and ec.memory_margin == 12345
    assert ec.param_dir == tmp_path / "keys" and ec.shape_cache == tmp_path / "shapes"
    assert (ec.max_partitions, ec.retain_jobs, ec.join_timeout_s) == (10, 99, 2.5)
    assert ec.faults.kernel_error == rate and ec.faults.seed == 42
    assert ec.faults.targets == frozenset({"a", "b"})


@pytest.mark.parametrize(
    "text,expected",
    [
        ("123456", 123456),
        ("512MiB", 512 << 20),
        ("2GiB", 2 << 30),
        ("1.5KiB", 1536),
        ("3GB", 3 * 10**9),
        ("7 tib", 7 << 40),
    ],
)
def test_sizes_with_units(text, expected):
    assert load_config(None, {"engine.memory_budget": text}).engine.memory_budget == expected


def test_auto_and_empty_mean_none(tmp_path):
    cfg = load_config(
        write(
            tmp_path,
            "[engine]\nmsm_workers = 0\nsynthesis_lookahead = 0\n"
            'memory_budget = 0\nshape_cache = ""\n[auth]\ntoken = ""\n',
        )
    )
    e = cfg.engine
    assert (e.msm_workers, e.synthesis_lookahead, e.memory_budget, e.shape_cache) == (
        None,
        None,
        None,
        None,
    )
    assert cfg.auth.token is None


# --- precedence ------------------------------------------------------------------------------


def test_file_values_then_overrides_win(tmp_path, rng):
    file_devices, flag_devices = (int(x) for x in rng.choice(range(1, 50), 2, replace=False))
    path = write(
        tmp_path,
        f"""
[server]
listen = "unix:///tmp/from-file.sock"
grace_seconds = 5
[engine]
devices = {file_devices}
backend = "cuda"
[journal]
retention_hours = 2
""",
    )
    from_file = load_config(path)
    assert from_file.server.listen == "unix:///tmp/from-file.sock"
    assert from_file.server.grace_seconds == 5.0
    assert from_file.engine.devices == file_devices and from_file.engine.backend == "cuda"
    assert from_file.journal.retention_hours == 2.0
    assert from_file.http == DaemonConfig().http  # untouched sections keep their defaults

    both = load_config(
        path,
        {
            "server.listen": "127.0.0.1:0",  # a flag wins over the file
            "engine.devices": str(flag_devices),  # argparse strings are parsed as TOML would
            "engine.backend": None,  # a flag not given changes nothing
            "http.enabled": "false",
            "journal.path": str(tmp_path / "j.sqlite3"),
            "engine.faults.seed": 9,
        },
    )
    assert both.server.listen == "127.0.0.1:0" and both.server.grace_seconds == 5.0
    assert both.engine.devices == flag_devices and both.engine.backend == "cuda"
    assert both.http.enabled is False
    assert both.journal.path == tmp_path / "j.sqlite3" and both.journal.retention_hours == 2.0
    assert both.engine.faults == FaultsSection(seed=9)


def test_overrides_without_a_file():
    cfg = load_config(None, {"http.listen": "[::1]:0", "log.level": "DEBUG"})
    assert (cfg.http.host, cfg.http.port, cfg.log.level) == ("::1", 0, "debug")


def test_tilde_is_expanded():
    cfg = load_config(None, {"engine.param_dir": "~/keys"})
    assert cfg.engine.param_dir == Path.home() / "keys"


# --- errors name their key -------------------------------------------------------------------


@pytest.mark.parametrize(
    "text,message",
    [
        ("[server]\nlisen = 'x'\n", "server.lisen: unknown key"),
        ("[servers]\n", "servers: unknown section"),
        ("[engine.faults]\nkernel = 0.5\n", "engine.faults.kernel: unknown key"),
        ("server = 3\n", "server: expected a table"),
        (
            '[engine]\nworkers_per_device = "x"\n',
            'engine.workers_per_device: expected an integer in [1, 16], got "x"',
        ),
        (
            "[engine]\nworkers_per_device = 0\n",
            "engine.workers_per_device: expected an integer in [1, 16], got 0",
        ),
        ("[engine]\ndevices = 1.5\n", "engine.devices: expected an integer in [1, 64], got 1.5"),
        ("[engine]\ndevices = true\n", "engine.devices: expected an integer in [1, 64], got True"),
        ('[engine]\nbackend = "tpu"\n', 'engine.backend: expected one of "cpu", "cuda"'),
        ('[engine]\nmemory_budget = "lots"\n', "engine.memory_budget: expected a size in bytes"),
        ("[engine]\nmemory_budget = -5\n", "engine.memory_budget: expected a size in bytes"),
        ("[engine]\nparam_dir = 3\n", "engine.param_dir: expected a path, got 3"),
        (
            "[engine]\njoin_timeout_s = 0\n",
            "engine.join_timeout_s: expected a number > 0 and ≤ 3600, got 0",
        ),
        (
            "[engine.faults]\nbad_proof = 1.5\n",
            "engine.faults.bad_proof: expected a probability in [0, 1], got 1.5",
        ),
        ('[engine.faults]\ntargets = "job"\n', "engine.faults.targets: expected a list"),
        ("[engine]\nfaults = 1\n", "engine.faults: expected a table, got 1"),
        (
            "[server]\nmax_message_bytes = 10\n",
            "server.max_message_bytes: expected a size in bytes",
        ),
        (
            "[server]\ngrace_seconds = -1\n",
            "server.grace_seconds: expected a number ≥ 0 and ≤ 86400, got -1",
        ),
        ('[server]\nlisten = "nowhere"\n', 'server.listen: expected "auto", "unix:///path"'),
        ('[server]\nlisten = "unix://rel.sock"\n', 'server.listen: expected "unix:///absolute'),
        ('[server]\nlisten = "127.0.0.1:70000"\n', "server.listen: expected"),
        ("[server]\nlisten = 9820\n", "server.listen: expected"),
        ('[http]\nlisten = "unix:///tmp/x"\n', 'http.listen: expected "host:port"'),
        ('[http]\nlisten = "localhost"\n', 'http.listen: expected "host:port"'),
        ('[http]\nenabled = "yes"\n', 'http.enabled: expected true or false, got "yes"'),
        ("[journal]\nretention_hours = 0\n", "journal.retention_hours: expected a number > 0"),
        ("[auth]\ntoken = 5\n", "auth.token: expected a string"),
        ('[auth]\ntls_cert = "/c.pem"\n', "auth.tls_cert and auth.tls_key: give both"),
        ('[log]\nlevel = "loud"\n', 'log.level: expected one of "debug"'),
    ],
)
def test_bad_values_name_the_key(tmp_path, text, message):
    with pytest.raises(BadInput) as e:
        load_config(write(tmp_path, text))
    assert message in str(e.value)


@pytest.mark.parametrize(
    "overrides,message",
    [
        (
            {"engine.workers_per_device": "x"},
            'engine.workers_per_device: expected an integer in [1, 16], got "x"',
        ),
        ({"server.lissten": "x"}, "server.lissten: unknown key"),
        ({"nope.key": 1}, "nope: unknown section"),
        ({"server": "x"}, "expected section.key"),
        ({"engine.faults.nope": 1}, "engine.faults.nope: unknown key"),
        ({"server.listen": "0.0.0.0:9820"}, "server.listen"),
        # Infinite, not-a-number or astronomically large values (valid TOML all) are refused:
        # they used to overflow the shutdown's waits and fail the jobs still running.
        ({"server.grace_seconds": "inf"}, "server.grace_seconds: expected a number ≥ 0 and ≤"),
        ({"server.grace_seconds": "9.3e9"}, "server.grace_seconds: expected a number"),
        ({"server.grace_seconds": float("nan")}, "server.grace_seconds: expected a number"),
        ({"engine.join_timeout_s": "inf"}, "engine.join_timeout_s: expected a number > 0"),
        ({"engine.faults.slow_kernel_s": "1e300"}, "engine.faults.slow_kernel_s: expected"),
        ({"journal.retention_hours": "inf"}, "journal.retention_hours: expected"),
        ({"engine.workers_per_device": "1000"}, "engine.workers_per_device: expected an integer"),
        ({"engine.devices": "100000"}, "engine.devices: expected an integer in [1, 64]"),
        ({"engine.msm_workers": "1_000_000"}, "engine.msm_workers: expected an integer"),
        ({"engine.retain_jobs": str(10**12)}, "engine.retain_jobs: expected an integer"),
        ({"engine.faults.seed": str(1 << 64)}, "engine.faults.seed: expected an integer"),
        ({"engine.memory_budget": "9" * 400 + "GiB"}, "engine.memory_budget: expected a size"),
        ({"engine.memory_budget": "2048TiB"}, "engine.memory_budget: expected a size"),
        ({"server.max_message_bytes": "3GiB"}, "server.max_message_bytes: expected a size"),
        ({"engine.devices": "[" * 5000}, "engine.devices: expected an integer"),
    ],
)
def test_bad_overrides_name_the_key(overrides, message):
    with pytest.raises(BadInput) as e:
        load_config(None, overrides)
    assert message in str(e.value)


def test_file_errors(tmp_path):
    with pytest.raises(BadInput, match="does not exist"):
        load_config(tmp_path / "missing.toml")
    with pytest.raises(BadInput, match="not valid TOML"):
        load_config(write(tmp_path, "[server\nlisten = 1"))
    with pytest.raises(BadInput, match="nested too deeply"):
        load_config(write(tmp_path, "[engine]\ndevices = " + "[" * 100_000 + "]" * 100_000))


def test_error_messages_never_echo_a_huge_value():
    with pytest.raises(BadInput) as e:
        load_config(None, {"server.listen": "x" * 1_000_000})
    assert len(str(e.value)) < 300


def test_remote_listeners_need_a_token_or_tls(tmp_path):
    with pytest.raises(BadInput, match="server.listen: .*reachable from other hosts"):
        load_config(None, {"server.listen": "0.0.0.0:9820"})
    with pytest.raises(BadInput, match="http.listen: .*reachable from other hosts"):
        load_config(None, {"http.listen": "0.0.0.0:9821"})
    # a disabled HTTP server may name any address
    off = load_config(None, {"http.listen": "0.0.0.0:9821", "http.enabled": False})
    assert not off.http.enabled
    with_token = load_config(
        None, {"server.listen": "0.0.0.0:9820", "http.listen": "[::]:0", "auth.token": "s3cret"}
    )
    assert with_token.auth.token == "s3cret" and "s3cret" not in repr(with_token)
    cert, key = tmp_path / "c.pem", tmp_path / "k.pem"
    with_tls = load_config(
        None,
        {"server.listen": "10.0.0.1:9820", "auth.tls_cert": str(cert), "auth.tls_key": str(key)},
    )
    assert with_tls.auth.tls and with_tls.auth.tls_key == key
    # loopback TCP needs neither
    assert load_config(None, {"server.listen": "[::1]:9820"}).server.address.port == 9820


def test_sections_check_values_when_built_in_code():
    with pytest.raises(BadInput, match=r"engine.devices: expected an integer in \[1, 64\], got 0"):
        EngineSection(devices=0)
    assert dataclasses.replace(EngineSection(), devices=3).devices == 3


def test_listen_parsing():
    assert parse_listen("unix:///run/cuzk.sock").unix_path == "/run/cuzk.sock"
    assert parse_listen("unix:cuzk.sock").unix_path == "cuzk.sock"
    a = parse_listen("[::1]:9820")
    assert (a.host, a.port, a.loopback) == ("::1", 9820, True)
    assert parse_listen("localhost:1").loopback and parse_listen("127.8.0.1:1").loopback
    assert not parse_listen("example.com:1").loopback and not parse_listen("0.0.0.0:1").loopback
    assert split_host_port("0.0.0.0:0") == ("0.0.0.0", 0)
    for bad in ("unix:", "host", ":80", "[zz]:1", "h:99999", "a:b:1"):
        with pytest.raises(BadInput, match="bad "):
            parse_listen(bad)
