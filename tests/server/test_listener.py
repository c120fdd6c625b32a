"""Answers a remote client can use: an unauthenticated listener on a trusted network only by
explicit opt-in (loud in the log, shown in /status and GetStatus), and an absolute vk_path
whatever the daemon's working directory."""

from __future__ import annotations

import argparse
import json
import logging
import os
import urllib.request
from pathlib import Path

import grpc
import pytest

from cuzk.cli import serve_cmd
from cuzk.errors import BadInput
from cuzk.server.client import Client
from cuzk.server.config import load_config
from cuzk.server.daemon import Daemon
from cuzk.server.proto import proving_pb2 as pb

from .conftest import CIRCUIT, daemon_config
from .test_daemon import _check_valid


def test_a_remote_listener_without_credentials_needs_the_opt_in():
    for key in ("server.listen", "http.listen"):  # the refusal names the key and the flag
        with pytest.raises(BadInput, match=f"{key}: .*auth.allow_unauthenticated") as info:
            load_config(None, {key: "0.0.0.0:9820"})
        assert "--allow-unauthenticated" in str(info.value)
    cfg = load_config(
        None,
        {
            "server.listen": "0.0.0.0:9820",
            "http.listen": "[::]:9821",
            "auth.allow_unauthenticated": "true",
        },
    )
    assert (cfg.grpc_mode, cfg.http_mode) == ("unauthenticated", "unauthenticated")
    assert "allow_unauthenticated=True" in repr(cfg.auth)
    # the opt-in never weakens a token or TLS that is set, nor a local listener
    with_token = load_config(
        None,
        {"server.listen": "0.0.0.0:1", "auth.token": "s", "auth.allow_unauthenticated": True},
    )
    assert (with_token.grpc_mode, with_token.http_mode) == ("token", "token")
    local = load_config(None, {"auth.allow_unauthenticated": True, "http.enabled": False})
    assert (local.grpc_mode, local.http_mode) == ("local", "off")
    tls = load_config(
        None,
        {
            "server.listen": "10.0.0.1:1",
            "auth.tls_cert": "c",
            "auth.tls_key": "k",
            "auth.token": "t",
        },
    )
    assert tls.grpc_mode == "tls+token"


def test_serve_flag_sets_the_config_key():
    parser = argparse.ArgumentParser()
    serve_cmd.add_parser(parser.add_subparsers())
    plain = parser.parse_args(["serve", "--listen", "0.0.0.0:0"])
    with pytest.raises(BadInput, match="reachable from other hosts"):
        serve_cmd.config_from(plain, {})
    opted = parser.parse_args(["serve", "--listen", "0.0.0.0:0", "--allow-unauthenticated"])
    cfg = serve_cmd.config_from(opted, {})
    assert cfg.auth.allow_unauthenticated and cfg.grpc_mode == "unauthenticated"
    assert not serve_cmd.config_from(parser.parse_args(["serve"]), {}).auth.allow_unauthenticated


def test_unauthenticated_listener_serves_and_says_so(tmp_path, server_keys, caplog, rng):
    caplog.set_level(logging.INFO, logger="cuzk.server")
    cfg = daemon_config(
        tmp_path,
        server_keys,
        **{
            "server.listen": "0.0.0.0:0",
            "http.listen": "0.0.0.0:0",
            "auth.allow_unauthenticated": True,
        },
    )
    with Daemon(cfg) as d:
        port = int(d.address.rsplit(":", 1)[1])
        with Client(f"127.0.0.1:{port}") as c:  # no token, no TLS: as Curio connects
            _check_valid(
                c.prove(
                    pb.SubmitProofRequest(circuit_id=CIRCUIT, seeds=[int(rng.integers(1, 1 << 60))])
                )
            )
            from_grpc = json.loads(c.status().status_json)["listener"]
        with urllib.request.urlopen(f"http://127.0.0.1:{d.http_port}/status") as r:
            from_http = json.loads(r.read())["listener"]
    assert from_grpc == from_http
    assert from_http["grpc"] == {"address": f"0.0.0.0:{port}", "auth": "unauthenticated"}
    assert from_http["http"]["auth"] == "unauthenticated"
    assert from_http["allow_unauthenticated"] is True
    loud = [r for r in caplog.records if "UNAUTHENTICATED LISTENER" in r.getMessage()]
    assert len(loud) == 1 and loud[0].levelno == logging.WARNING
    assert (
        f"gRPC 0.0.0.0:{port}" in loud[0].getMessage() and "HTTP 0.0.0.0:" in loud[0].getMessage()
    )


def test_a_token_left_in_the_environment_is_named_at_start_and_to_refused_clients(
    tmp_path, server_keys, caplog, monkeypatch
):
    """A leftover $CUZK_TOKEN turns every Curio call (which sends no token) into
    UNAUTHENTICATED: the start says so at WARNING and so does each refusal."""
    caplog.set_level(logging.INFO, logger="cuzk.server")
    monkeypatch.setenv("CUZK_TOKEN", "leftover")
    parser = argparse.ArgumentParser()
    serve_cmd.add_parser(parser.add_subparsers())
    args = parser.parse_args(["serve", "--listen", "127.0.0.1:0", "--no-http",
                              "--param-cache", str(server_keys),
                              "--journal", str(tmp_path / "j.sqlite3")])  # fmt: skip
    cfg = serve_cmd.config_from(args, os.environ)
    assert cfg.auth.token == "leftover"
    with Daemon(cfg) as d, grpc.insecure_channel(d.address) as ch:
        status = ch.unary_unary("/cuzk.v1.ProvingEngine/GetStatus")
        for metadata in ((), (("authorization", "Bearer other"),)):
            with pytest.raises(grpc.RpcError) as info:
                status(b"", metadata=metadata, timeout=10)
            assert info.value.code() == grpc.StatusCode.UNAUTHENTICATED
            assert "$CUZK_TOKEN" in info.value.details() and "Curio" in info.value.details()
        status(b"", metadata=(("authorization", "Bearer leftover"),), timeout=10)
    loud = [r for r in caplog.records if "CUZK_TOKEN" in r.getMessage()]
    assert len(loud) == 1 and loud[0].levelno == logging.WARNING


def test_a_token_from_the_config_is_not_blamed_on_the_environment(tmp_path, server_keys, caplog):
    caplog.set_level(logging.INFO, logger="cuzk.server")
    cfg = daemon_config(tmp_path, server_keys, **{"server.listen": "127.0.0.1:0",
                                                  "auth.token": "s3cret"})  # fmt: skip
    with Daemon(cfg) as d, grpc.insecure_channel(d.address) as ch:
        with pytest.raises(grpc.RpcError) as info:
            ch.unary_unary("/cuzk.v1.ProvingEngine/GetStatus")(b"", timeout=10)
        assert "sent none" in info.value.details() and "CUZK_TOKEN" not in info.value.details()
    assert not [r for r in caplog.records if "CUZK_TOKEN" in r.getMessage()]


def test_a_local_listener_is_shown_as_local(make_daemon):
    d = make_daemon()
    with Client(d.address) as c:
        listener = json.loads(c.status().status_json)["listener"]
    assert listener["grpc"] == {"address": d.address, "auth": "local"}
    assert listener["http"] == {"address": f"127.0.0.1:{d.http_port}", "auth": "local"}
    assert listener["allow_unauthenticated"] is False


def test_vk_path_is_absolute_when_the_param_cache_is_given_relative(
    tmp_path, server_keys, monkeypatch
):
    monkeypatch.chdir(server_keys.parent)
    cfg = daemon_config(tmp_path, server_keys, **{"engine.param_dir": server_keys.name})
    assert cfg.engine.param_dir == server_keys
    with Daemon(cfg) as d:
        monkeypatch.chdir(tmp_path)  # the client is elsewhere
        with Client(d.address) as c:
            outcome = c.prove(pb.SubmitProofRequest(circuit_id=CIRCUIT, seeds=[17]))
    assert Path(outcome.vk_path).is_absolute()
    assert Path(outcome.vk_path).parent == server_keys
    _check_valid(outcome)
