"""The daemon's configuration: one TOML file, embedded defaults, command-line overrides.

Every setting is a field of a frozen section dataclass with a *converter* in its metadata. The
converter is the only place a value is checked: it turns what TOML (or a command-line flag) gives
into the field's Python type — ``"64GiB"`` into bytes, ``""`` into None, a string into a Path —
or raises with a description of what it expected. Sections run their converters on creation, so
``DaemonConfig()`` is the defaults, ``load_config(None)`` equals it, and an invalid config cannot
be built at all, whether it comes from a file or from code.

``cuzk.example.toml`` at the repository root documents every key with its default; a test keeps
it and this module in step.

Conventions in the file: ``""`` means "none" for optional paths and the token, ``0`` or
``"auto"`` means "let the engine decide" for optional counts and the memory budget, sizes are
bytes or a string with a unit (``"512MiB"``, ``"64GiB"``), paths may start with ``~`` and are
made absolute (against the working directory) when read.
"""

from __future__ import annotations

import ipaddress
import math
import re
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import MISSING, dataclass, field, fields
from pathlib import Path
from typing import Any, ClassVar

from cuzk.engine.config import EngineConfig, FaultInjection
from cuzk.errors import BadInput, shown
from cuzk.server.runtime import default_socket, read_secret

MiB = 1 << 20
MAX_BYTES = 1 << 50  # 1 PiB: no memory size in this config is larger
MAX_MESSAGE_BYTES = 1 << 30  # gRPC's limit is 2 GiB; the transport admits twice the setting
DEFAULT_LISTEN = "auto"  # a unix socket in this user's private directory (server/runtime.py)
DEFAULT_HTTP_LISTEN = "127.0.0.1:9821"
LOG_LEVELS = ("debug", "info", "warning", "error", "critical")


class _Expected(ValueError):
    """A converter's refusal; the message completes "expected …"."""


Converter = Callable[[Any], Any]


# --- converters -----------------------------------------------------------------------------


def _integer(lo: int, hi: int, auto: bool = False, zero_is_auto: bool = True) -> Converter:
    """An int in [lo, hi]; with ``auto``, "auto" and None (and 0, unless ``zero_is_auto`` is
    False) mean None (the engine decides). Every count is bounded: a thousand workers per
    device is a thousand idle threads, not more speed."""
    what = f"an integer in [{lo}, {hi}]"
    if auto:
        what += ' (or 0 / "auto")' if zero_is_auto else ' (or "auto")'

    def conv(v: Any) -> int | None:
        if auto and (v is None or v == "auto" or (zero_is_auto and type(v) is int and v == 0)):
            return None
        if type(v) is not int or v < lo or v > hi:
            raise _Expected(what)
        return v

    return conv


def _number(lo: float = 0.0, hi: float = 86400.0, strict: bool = False) -> Converter:
    """A finite float in (lo, hi] (strict) or [lo, hi]; TOML integers are accepted. Every
    number has an upper bound: an infinite or astronomically large timeout overflows the
    waits it is given to (and ``inf``/``nan`` are valid TOML)."""
    what = f"a number {'>' if strict else '≥'} {lo:g} and ≤ {hi:g}"

    def conv(v: Any) -> float:
        if type(v) not in (int, float) or not math.isfinite(v):
            raise _Expected(what)
        if (v <= lo if strict else v < lo) or v > hi:
            raise _Expected(what)
        return float(v)

    return conv


def _probability(v: Any) -> float:
    if type(v) not in (int, float) or not 0.0 <= v <= 1.0:
        raise _Expected("a probability in [0, 1]")
    return float(v)


def _boolean(v: Any) -> bool:
    if type(v) is not bool:
        raise _Expected("true or false")
    return v


def _choice(*options: str) -> Converter:
    def conv(v: Any) -> str:
        if not isinstance(v, str) or v.lower() not in options:
            raise _Expected("one of " + ", ".join(shown(o) for o in options))
        return v.lower()

    return conv


_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMGT]i?B|B)?\s*$", re.IGNORECASE)
_UNITS = {
    "b": 1,
    "kb": 10**3,
    "mb": 10**6,
    "gb": 10**9,
    "tb": 10**12,
    "kib": 1 << 10,
    "mib": 1 << 20,
    "gib": 1 << 30,
    "tib": 1 << 40,
}


def _size(minimum: int = 0, maximum: int = MAX_BYTES, auto: bool = False) -> Converter:
    """Bytes in [minimum, maximum]: an integer or a string with a unit; with ``auto``, 0 and
    "auto" mean None."""
    what = f'a size in bytes in [{minimum}, {maximum}] (an integer or a string such as "64GiB")'
    if auto:
        what = f'a size in bytes ≤ {maximum} (an integer or a string such as "64GiB"), or "auto"'

    def conv(v: Any) -> int | None:
        if auto and (v is None or v == "auto" or (type(v) is int and v == 0)):
            return None
        if isinstance(v, str):
            m = _SIZE.match(v)
            if m is None or len(m.group(1)) > 30:
                raise _Expected(what)
            n = int(float(m.group(1)) * _UNITS[(m.group(2) or "b").lower()])
        elif type(v) is int:
            n = v
        else:
            raise _Expected(what)
        if n < max(minimum, 1 if auto else 0) or n > maximum:
            raise _Expected(what)
        return n

    return conv


def parse_size(text: str) -> int:
    """A positive size from the command line ("24GiB", "512MiB", "1000000"); BadInput names
    the accepted forms."""
    try:
        n = _size(minimum=1)(text)
    except _Expected as e:
        raise BadInput(f"{text!r} is not {e}") from None
    assert n is not None
    return n


def _path(optional: bool = False) -> Converter:
    """A path (``~`` expanded); with ``optional``, "" and None mean None."""
    what = "a path" + (' (or "" for none)' if optional else "")

    def conv(v: Any) -> Path | None:
        if optional and (v is None or v == ""):
            return None
        if not isinstance(v, str | Path) or not v:
            raise _Expected(what)
        # absolute now: what the daemon reports (vk_path in results) means the same file to
        # a client whatever the daemon's working directory
        return Path(v).expanduser().absolute()

    return conv


def _optional_text(v: Any) -> str | None:
    if v is None or v == "":
        return None
    if not isinstance(v, str):
        raise _Expected('a string (or "" for none)')
    return v


def _names(v: Any) -> frozenset[str] | None:
    """A list of request ids; empty (or None) means every job."""
    if v is None:
        return None
    if not isinstance(v, list | tuple | set | frozenset) or not all(
        isinstance(x, str) and x for x in v
    ):
        raise _Expected("a list of request ids (strings)")
    return frozenset(v) or None


def _listen(v: Any) -> str:
    if not isinstance(v, str):
        raise _Expected('"auto", "unix:///path", "unix:path" or "host:port"')
    _parse_listen(v)
    return v


def _host_port(v: Any) -> str:
    if not isinstance(v, str):
        raise _Expected('"host:port"')
    _split_host_port(v)
    return v


# --- listen addresses -----------------------------------------------------------------------


@dataclass(frozen=True)
class ListenAddress:
    """A parsed listen address: a unix socket path, or a TCP host and port."""

    unix_path: str | None  # socket path (unix sockets)
    host: str | None  # TCP host (IPv6 without brackets)
    port: int | None  # TCP port, 0: any free port
    private: bool = False  # "auto": the socket's directory is made and kept private

    @property
    def loopback(self) -> bool:
        """True for unix sockets and loopback hosts: reachable only from this machine."""
        return self.unix_path is not None or is_loopback_host(self.host or "")


def is_loopback_host(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # a name other than localhost may resolve anywhere


_HOST_PORT = re.compile(r"\[([0-9A-Fa-f:.]+)\]:(\d{1,5})|([^:\[\]/\s]+):(\d{1,5})")


def _split_host_port(addr: str) -> tuple[str, int]:
    m = _HOST_PORT.fullmatch(addr)
    if m is None:
        raise _Expected('"host:port" or "[ipv6]:port"')
    host = m.group(1) or m.group(3)
    port = int(m.group(2) or m.group(4))
    if port > 65535:
        raise _Expected("a port in [0, 65535]")
    if m.group(1) is not None:
        try:
            ipaddress.IPv6Address(host)
        except ValueError:
            raise _Expected("a valid IPv6 address in brackets") from None
    return host, port


def _parse_listen(addr: str) -> ListenAddress:
    if addr == "auto":
        return ListenAddress(str(default_socket()), None, None, private=True)
    if addr.startswith("unix://"):
        path = addr[len("unix://") :]
        if not path.startswith("/"):
            raise _Expected('"unix:///absolute/path" (three slashes) or "unix:relative/path"')
        return ListenAddress(path, None, None)
    if addr.startswith("unix:"):
        if addr == "unix:":
            raise _Expected('a socket path after "unix:"')
        return ListenAddress(addr[len("unix:") :], None, None)
    try:
        host, port = _split_host_port(addr)
    except _Expected:
        raise _Expected(
            '"auto", "unix:///path", "unix:path", "host:port" or "[ipv6]:port"'
        ) from None
    return ListenAddress(None, host, port)


def split_host_port(addr: str) -> tuple[str, int]:
    """``"host:port"`` or ``"[v6]:port"`` → (host, port). Raises BadInput."""
    try:
        return _split_host_port(addr)
    except _Expected as e:
        raise BadInput(f"bad address {shown(addr)}: expected {e}") from None


def parse_listen(addr: str) -> ListenAddress:
    """gRPC listen syntax: ``unix:///abs/path``, ``unix:rel/path`` or ``host:port``.
    Raises BadInput."""
    try:
        return _parse_listen(addr)
    except _Expected as e:
        raise BadInput(f"bad listen address {shown(addr)}: expected {e}") from None


# --- sections -------------------------------------------------------------------------------


def _setting(default: Any, conv: Converter, doc: str) -> Any:
    return field(default=default, metadata={"conv": conv, "doc": doc})


class _Section:
    """Runs each field's converter on creation; errors name ``section.key``."""

    SECTION: ClassVar[str] = ""

    def __post_init__(self) -> None:
        # why the ignore below: _Section is mixed into dataclasses only; mypy does not know self is
        # one
        for f in fields(self):  # type: ignore[arg-type]
            value = getattr(self, f.name)
            try:
                converted = f.metadata["conv"](value)
            except _Expected as e:  # (a nested section raises BadInput naming its own keys)
                raise BadInput(
                    f"{self.SECTION}.{f.name}: expected {e}, got {shown(value)}"
                ) from None
            object.__setattr__(self, f.name, converted)


@dataclass(frozen=True)
class ServerSection(_Section):
    """The gRPC listener."""

    SECTION: ClassVar[str] = "server"
    listen: str = _setting(
        DEFAULT_LISTEN, _listen, "auto (a private unix socket), unix:///path, unix:path, host:port"
    )
    max_message_bytes: int = _setting(
        256 * MiB, _size(minimum=1024, maximum=MAX_MESSAGE_BYTES), "largest gRPC message"
    )
    max_inflight_bytes: int = _setting(
        1 << 30, _size(minimum=1024), "requests of 1 MiB or more held at once (bytes)"
    )
    grace_seconds: float = _setting(30.0, _number(0.0), "shutdown: time given to running jobs")
    max_waiting_calls: int = _setting(
        10_000, _integer(1, 1_000_000), "AwaitProof/Prove calls waiting at once; more: refused"
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.max_inflight_bytes < self.max_message_bytes:
            raise BadInput(
                "server.max_inflight_bytes: expected at least server.max_message_bytes "
                f"({self.max_message_bytes:,}), got {self.max_inflight_bytes:,}"
            )

    @property
    def address(self) -> ListenAddress:
        return parse_listen(self.listen)


@dataclass(frozen=True)
class HttpSection(_Section):
    """The HTTP status and metrics server."""

    SECTION: ClassVar[str] = "http"
    enabled: bool = _setting(True, _boolean, "serve /status, /metrics, /healthz")
    listen: str = _setting(DEFAULT_HTTP_LISTEN, _host_port, "host:port; port 0: any free port")

    @property
    def host(self) -> str:
        return split_host_port(self.listen)[0]

    @property
    def port(self) -> int:
        return split_host_port(self.listen)[1]


@dataclass(frozen=True)
class FaultsSection(_Section):
    """Deliberate failures for tests and chaos runs (``cuzk.engine.FaultInjection``)."""

    SECTION: ClassVar[str] = "engine.faults"
    synthesis_error: float = _setting(0.0, _probability, "synthesis raises")
    kernel_error: float = _setting(0.0, _probability, "the kernel region raises")
    slow_kernel: float = _setting(0.0, _probability, "the kernel region sleeps")
    slow_kernel_s: float = _setting(0.5, _number(0.0, 3600.0), "how long a slow kernel sleeps")
    budget_exhaustion: float = _setting(0.0, _probability, "admission refuses")
    bad_proof: float = _setting(0.0, _probability, "the assembled proof is corrupted")
    seed: int = _setting(0, _integer(0, (1 << 64) - 1), "decides which partitions are hit")
    targets: frozenset[str] | None = _setting(None, _names, "request ids; empty: all jobs")

    def injection(self) -> FaultInjection:
        return FaultInjection(**{f.name: getattr(self, f.name) for f in fields(self)})


def _faults(v: Any) -> FaultsSection:
    if isinstance(v, FaultsSection):
        return v
    if not isinstance(v, Mapping):
        raise _Expected("a table")
    _check_keys(FaultsSection, v, "engine.faults")
    return FaultsSection(**v)


_ENGINE_DEFAULTS = {f.name: f.default for f in fields(EngineConfig) if f.default is not MISSING}


def _engine(name: str, conv: Converter, doc: str) -> Any:
    """An engine setting: its default is :class:`EngineConfig`'s own (one source), its
    converter and bounds are the daemon's."""
    return _setting(_ENGINE_DEFAULTS[name], conv, doc)


@dataclass(frozen=True)
class EngineSection(_Section):
    """Every field of :class:`cuzk.engine.EngineConfig` except ``backend_factory`` and
    ``cpu_device_memory`` (for tests and benchmarks, not a daemon's settings)."""

    SECTION: ClassVar[str] = "engine"
    param_dir: Path = _setting(Path("~/.cache/cuzk/params"), _path(), "keys directory")
    backend: str = _engine("backend", _choice("cpu", "cuda"), "cpu or cuda")
    devices: int = _engine("devices", _integer(1, 64), "K devices")
    workers_per_device: int = _engine(
        "workers_per_device", _integer(1, 16), "device workers per device"
    )
    urgent_lane: bool = _engine(
        "urgent_lane", _boolean, "one more device worker for CRITICAL/HIGH only"
    )
    synthesis_workers: int = _engine("synthesis_workers", _integer(1, 256), "synthesis threads")
    synthesis_processes: int | None = _engine(
        "synthesis_processes",
        _integer(0, 256, auto=True, zero_is_auto=False),
        "None: half the cores (≤ 8) on 4+ cores",
    )
    synthesis_lookahead: int | None = _engine(
        "synthesis_lookahead", _integer(1, 4096, auto=True), "None: K·N"
    )
    msm_workers: int | None = _engine(
        "msm_workers", _integer(1, 1024, auto=True), "None: cores / K"
    )
    memory_budget: int | None = _engine(
        "memory_budget", _size(auto=True), "None: MemAvailable − margin"
    )
    memory_margin: int = _engine("memory_margin", _size(), "kept free when the budget is auto")
    shape_cache: Path | None = _engine(
        "shape_cache", _path(optional=True), "None: shapes in memory"
    )
    staging: bool = _engine("staging", _boolean, "second per-device lock for uploads")
    defer_witness: bool = _engine(
        "defer_witness", _boolean, "SHA-256 witness bits made by the backend"
    )
    defer_poseidon: str = _engine(
        "defer_poseidon",
        _choice("cpu", "all", "off"),
        "Poseidon witness values made by the backend",
    )
    staging_budget: int | None = _engine(
        "staging_budget", _size(auto=True), "None: half the GPU memory, grown to one partition"
    )
    device_memory_limit: int | None = _engine(
        "device_memory_limit",
        _size(auto=True),
        "None: the whole device; a cap on every device's use",
    )
    msm_copies: int | None = _engine(
        "msm_copies", _integer(1, 64, auto=True), "None: 13 when they fit half the free key budget"
    )
    pinned_pool_bytes: int = _engine(
        "pinned_pool_bytes", _size(), "idle pinned buffers kept per device"
    )
    max_partitions: int = _engine("max_partitions", _integer(1, 4096), "per request")
    retain_jobs: int = _engine("retain_jobs", _integer(1, 1_000_000), "finished jobs remembered")
    join_timeout_s: float = _engine(
        "join_timeout_s", _number(0.0, 3600.0, strict=True), "per thread at shutdown"
    )
    faults: FaultsSection = _setting(FaultsSection(), _faults, "[engine.faults]")

    def engine_config(self) -> EngineConfig:
        """The engine's own config with these values (defaults agree with EngineConfig's)."""
        values = {f.name: getattr(self, f.name) for f in fields(self)}
        values["faults"] = self.faults.injection()
        return EngineConfig(**values)


@dataclass(frozen=True)
class JournalSection(_Section):
    """The SQLite journal of accepted requests and finished results."""

    SECTION: ClassVar[str] = "journal"
    path: Path = _setting(Path("~/.local/state/cuzk/journal.sqlite3"), _path(), "journal file")
    retention_hours: float = _setting(
        24.0, _number(0.0, 24 * 3650.0, strict=True), "results kept this long"
    )


# How a refusal names the opt-in: the config key and the flag of ``cuzk serve``
ALLOW_UNAUTHENTICATED = "auth.allow_unauthenticated (cuzk serve --allow-unauthenticated)"


@dataclass(frozen=True)
class AuthSection(_Section):
    """A bearer token and/or TLS, required when a listener is reachable from other hosts."""

    SECTION: ClassVar[str] = "auth"
    token: str | None = _setting(None, _optional_text, "bearer token; None: no token")
    token_file: Path | None = _setting(
        None, _path(optional=True), "file holding the token (not visible in ps); mode 0600"
    )
    tls_cert: Path | None = _setting(None, _path(optional=True), "PEM certificate chain")
    tls_key: Path | None = _setting(None, _path(optional=True), "PEM private key")
    allow_unauthenticated: bool = _setting(
        False, _boolean, "serve remote listeners without token or TLS (trusted network only)"
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        if (self.tls_cert is None) != (self.tls_key is None):
            raise BadInput("auth.tls_cert and auth.tls_key: give both or neither")
        if self.token_file is not None:
            if self.token is not None:
                raise BadInput("auth.token and auth.token_file: give one or the other")
            object.__setattr__(self, "token", read_secret(self.token_file, "auth.token_file"))

    def __repr__(self) -> str:  # keep the token out of logs and tracebacks
        token = None if self.token is None else "***"
        return (
            f"AuthSection(token={token}, token_file={self.token_file}, "
            f"tls_cert={self.tls_cert}, tls_key={self.tls_key}, "
            f"allow_unauthenticated={self.allow_unauthenticated})"
        )

    @property
    def tls(self) -> bool:
        return self.tls_cert is not None

    def grpc_mode(self, loopback: bool) -> str:
        """How the gRPC listener admits callers: "token", "tls", "tls+token", "local" (no
        credentials, reachable from this machine only) or "unauthenticated" (reachable from
        other hosts without credentials: ``allow_unauthenticated``)."""
        if self.tls or self.token is not None:
            return "+".join(m for m, on in (("tls", self.tls), ("token", self.token)) if on)
        return "local" if loopback else "unauthenticated"


@dataclass(frozen=True)
class LogSection(_Section):
    SECTION: ClassVar[str] = "log"
    level: str = _setting("info", _choice(*LOG_LEVELS), "logging level")


SECTIONS: dict[str, type[_Section]] = {
    "server": ServerSection,
    "http": HttpSection,
    "engine": EngineSection,
    "journal": JournalSection,
    "auth": AuthSection,
    "log": LogSection,
}


@dataclass(frozen=True)
class DaemonConfig:
    """The whole configuration. Creating one checks the cross-section rule of the security
    model: a listener reachable from other hosts needs ``auth.token`` (or, for gRPC, TLS)."""

    server: ServerSection = field(default_factory=ServerSection)
    http: HttpSection = field(default_factory=HttpSection)
    engine: EngineSection = field(default_factory=EngineSection)
    journal: JournalSection = field(default_factory=JournalSection)
    auth: AuthSection = field(default_factory=AuthSection)
    log: LogSection = field(default_factory=LogSection)

    def __post_init__(self) -> None:
        if self.grpc_mode == "unauthenticated" and not self.auth.allow_unauthenticated:
            raise BadInput(
                f"server.listen: {shown(self.server.listen)} is reachable from other hosts; "
                "set auth.token or auth.tls_cert/auth.tls_key, or listen on a unix socket "
                f"or loopback, or (on a trusted network only) {ALLOW_UNAUTHENTICATED}"
            )
        if self.http_mode == "unauthenticated" and not self.auth.allow_unauthenticated:
            raise BadInput(
                f"http.listen: {shown(self.http.listen)} is reachable from other hosts; "
                "set auth.token or listen on loopback, or (on a trusted network only) "
                f"{ALLOW_UNAUTHENTICATED}"
            )

    @property
    def grpc_mode(self) -> str:
        """How the gRPC listener admits callers (:meth:`AuthSection.grpc_mode`)."""
        return self.auth.grpc_mode(self.server.address.loopback)

    @property
    def http_mode(self) -> str:
        """The same for HTTP ("off" when disabled; TLS is gRPC's only)."""
        if not self.http.enabled:
            return "off"
        if self.auth.token is not None:
            return "token"
        return "local" if is_loopback_host(self.http.host) else "unauthenticated"

    def engine_config(self) -> EngineConfig:
        return self.engine.engine_config()


# --- loading --------------------------------------------------------------------------------


def _check_keys(cls: type, table: Mapping[str, Any], where: str) -> None:
    known = [f.name for f in fields(cls)]
    for key in table:
        if key not in known:
            raise BadInput(f"{where}.{key}: unknown key; {where} takes {', '.join(known)}")


def _coerce_flag(value: Any, conv: Converter | None) -> Any:
    """Command-line strings become what TOML would have given ("4" → 4, "true" → True), so
    flags and file entries go through the same converter."""
    if not isinstance(value, str) or conv is None:
        return value
    try:
        conv(value)
        return value  # already acceptable as a string (paths, sizes, names)
    except (_Expected, BadInput):
        pass
    try:
        return tomllib.loads(f"v = {value}")["v"]
    except (tomllib.TOMLDecodeError, RecursionError):
        return value  # the converter's error will show the original text


def _set_override(data: dict[str, Any], key: str, value: Any) -> None:
    """Put ``value`` at dotted ``key`` in the raw tables; unknown keys are left for the
    checks that follow, so a flag and a file entry fail the same way."""
    parts = key.split(".")
    if len(parts) < 2 or not all(parts):
        raise BadInput(f"override {shown(key)}: expected section.key, e.g. server.listen")
    table = data
    for i, part in enumerate(parts[:-1]):
        table = table.setdefault(part, {})
        if not isinstance(table, dict):
            raise BadInput(f"{'.'.join(parts[: i + 1])}: expected a table, got {shown(table)}")
    table[parts[-1]] = _coerce_flag(value, _converter(parts))


def _converter(parts: list[str]) -> Converter | None:
    cls: type | None = SECTIONS.get(parts[0])
    if cls is EngineSection and len(parts) == 3 and parts[1] == "faults":
        cls, parts = FaultsSection, parts[1:]
    if cls is None or len(parts) != 2:
        return None
    return {f.name: f.metadata["conv"] for f in fields(cls)}.get(parts[1])


def load_config(path: Path | None, overrides: Mapping[str, object] | None = None) -> DaemonConfig:
    """Read the TOML file at ``path`` (None: embedded defaults) and apply ``overrides``.

    ``overrides`` maps dotted keys (``"server.listen"``, ``"engine.faults.seed"``) to values;
    they win over the file (they are the command-line flags). A None value means "flag not
    given" and is skipped. String values for numeric or boolean keys are parsed as TOML would.

    Raises:
        BadInput: a missing or unreadable file, invalid TOML, an unknown section or key, or a
            bad value — always naming the key and what it expected.
    """
    data: dict[str, Any] = {}
    if path is not None:
        path = Path(path)
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise BadInput(f"config file {path} does not exist") from None
        except (OSError, UnicodeDecodeError) as e:
            raise BadInput(f"config file {path}: cannot read it ({e})") from e
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as e:
            raise BadInput(f"config file {path}: not valid TOML ({e})") from None
        except RecursionError:
            raise BadInput(f"config file {path}: nested too deeply") from None
    for key, value in (overrides or {}).items():
        if value is not None:
            _set_override(data, key, value)
    sections: dict[str, _Section] = {}
    for name, table in data.items():
        if name not in SECTIONS:
            raise BadInput(f"{name}: unknown section; known: {', '.join(SECTIONS)}")
        if not isinstance(table, dict):
            raise BadInput(f"{name}: expected a table ([{name}]), got {shown(table)}")
        _check_keys(SECTIONS[name], table, name)
        sections[name] = SECTIONS[name](**table)
    # why the ignore below: sections maps each name to its own section type; a dict of them is one
    # value type to mypy
    return DaemonConfig(**sections)  # type: ignore[arg-type]


def field_docs() -> dict[str, str]:
    """Dotted key → one-line meaning, for ``cuzk serve --help`` and the example-file test."""
    out: dict[str, str] = {}
    for name, cls in SECTIONS.items():
        for f in fields(cls):  # type: ignore[arg-type]  # every section is a dataclass
            if f.name == "faults":
                for g in fields(FaultsSection):
                    out[f"{name}.faults.{g.name}"] = g.metadata["doc"]
            else:
                out[f"{name}.{f.name}"] = f.metadata["doc"]
    return out


__all__ = [
    "AuthSection",
    "DaemonConfig",
    "EngineSection",
    "FaultsSection",
    "HttpSection",
    "JournalSection",
    "ListenAddress",
    "LogSection",
    "ServerSection",
    "field_docs",
    "is_loopback_host",
    "load_config",
    "parse_listen",
    "split_host_port",
]
