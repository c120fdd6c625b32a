"""Local security: the token comes from a file or the environment (not the command line), the
gRPC token check takes the scheme in any case as HTTP does, the default socket lives in a
directory only its user can enter, the journal is readable by its owner only, and error
messages do not show the daemon's paths."""

from __future__ import annotations

import argparse
import os
import stat

import grpc
import pytest

from cuzk.cli import client_cmd, serve_cmd
from cuzk.errors import BadInput
from cuzk.server.client import Client
from cuzk.server.config import load_config, parse_listen
from cuzk.server.daemon import Daemon
from cuzk.server.journal import Journal
from cuzk.server.proto import proving_pb2 as pb
from cuzk.server.runtime import default_socket, private_dir

from ..conftest import daemon_config


def _secret(path, text: str, mode: int = 0o600):
    path.write_text(text + "\n")
    path.chmod(mode)
    return path


def test_token_file_is_read_and_must_be_private(tmp_path, rng):
    token = rng.bytes(16).hex()
    f = _secret(tmp_path / "token", token)
    assert load_config(None, {"auth.token_file": str(f)}).auth.token == token
    f.chmod(0o644)
    with pytest.raises(BadInput, match="readable by other users"):
        load_config(None, {"auth.token_file": str(f)})
    f.chmod(0o600)
    with pytest.raises(BadInput, match="one or the other"):
        load_config(None, {"auth.token_file": str(f), "auth.token": "x"})
    with pytest.raises(BadInput, match="empty"):
        load_config(None, {"auth.token_file": str(_secret(tmp_path / "empty", ""))})
    assert token not in repr(load_config(None, {"auth.token_file": str(f)}).auth)


def test_serve_takes_the_token_from_the_environment(tmp_path, capsys):
    parser = argparse.ArgumentParser()
    serve_cmd.add_parser(parser.add_subparsers())
    args = parser.parse_args(["serve", "--listen", "127.0.0.1:0"])
    with pytest.raises(BadInput, match="reachable|token"):  # loopback TCP needs none: ok
        serve_cmd.config_from(parser.parse_args(["serve", "--listen", "0.0.0.0:0"]), {})
    cfg = serve_cmd.config_from(
        parser.parse_args(["serve", "--listen", "0.0.0.0:0"]), {"CUZK_TOKEN": "from-env"}
    )
    assert cfg.auth.token == "from-env"
    assert serve_cmd.config_from(args, {}).auth.token is None
    flagged = parser.parse_args(["serve", "--set", "auth.token=visible"])
    assert serve_cmd.config_from(flagged, {"CUZK_TOKEN": "env"}).auth.token == "visible"
    assert "visible to every local user" in capsys.readouterr().err


def test_client_token_sources(tmp_path, capsys, monkeypatch):
    f = _secret(tmp_path / "t", "from-file")
    monkeypatch.setenv("CUZK_TOKEN", "from-env")
    ns = argparse.Namespace
    assert client_cmd.token(ns(token_file=f, token="flag")) == "from-file"
    assert client_cmd.token(ns(token_file=None, token="flag")) == "flag"
    assert "visible to every local user" in capsys.readouterr().err
    assert client_cmd.token(ns(token_file=None, token=None)) == "from-env"


def test_grpc_takes_the_bearer_scheme_in_any_case(tmp_path, server_keys):
    cfg = daemon_config(tmp_path, server_keys, **{"server.listen": "127.0.0.1:0",
                                                  "auth.token": "s3cret"})  # fmt: skip
    with Daemon(cfg) as d, grpc.insecure_channel(d.address) as ch:
        status = ch.unary_unary("/cuzk.v1.ProvingEngine/GetStatus")
        for scheme in ("Bearer", "bearer", "BEARER"):
            status(b"", metadata=(("authorization", f"{scheme} s3cret"),), timeout=10)
        for wrong in ("Basic s3cret", "s3cret", "bearer s3cre", "bearer"):
            with pytest.raises(grpc.RpcError) as info:
                status(b"", metadata=(("authorization", wrong),), timeout=10)
            assert info.value.code() == grpc.StatusCode.UNAUTHENTICATED


def test_default_socket_is_in_a_private_directory(tmp_path, server_keys, monkeypatch):
    runtime = tmp_path / "run"
    runtime.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    monkeypatch.delenv("CUZK_ADDR", raising=False)
    assert default_socket() == runtime / "cuzk" / "cuzk.sock"
    assert parse_listen("auto").unix_path == str(runtime / "cuzk" / "cuzk.sock")
    with Daemon(daemon_config(tmp_path, server_keys, **{"server.listen": "auto"})) as d:
        assert d.address == f"unix://{runtime}/cuzk/cuzk.sock"
        assert stat.S_IMODE(os.stat(runtime / "cuzk").st_mode) == 0o700
        with Client(client_cmd._default_addr()) as c:  # the client finds it by default
            assert c.status().uptime_seconds >= 0
    monkeypatch.delenv("XDG_RUNTIME_DIR")
    assert default_socket() == type(default_socket())(f"/tmp/cuzk-{os.getuid()}/cuzk.sock")


def test_a_socket_directory_open_to_others_or_not_ours_is_refused(tmp_path, server_keys):
    opened = tmp_path / "open"
    opened.mkdir()
    opened.chmod(0o755)
    with pytest.raises(BadInput, match="open to other users"):
        private_dir(opened, create=True)
    link = tmp_path / "link"
    link.symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    with pytest.raises(BadInput, match="not a directory"):
        private_dir(link, create=False)
    if os.getuid() == 0:  # root can give a directory away
        theirs = tmp_path / "theirs"
        theirs.mkdir(mode=0o700)
        os.chown(theirs, 65534, 65534)
        with pytest.raises(BadInput, match="belongs to uid 65534"):
            private_dir(theirs, create=False)


def test_the_journal_is_readable_by_its_owner_only(tmp_path, rng):
    old = tmp_path / "old.sqlite3"
    Journal(old, 60).close()
    old.chmod(0o644)  # a journal made by an earlier version
    for path in (tmp_path / "new.sqlite3", old):
        j = Journal(path, 60)
        j.counts()
        for f in tmp_path.glob(path.name + "*"):  # the file and its -wal/-shm
            assert stat.S_IMODE(f.stat().st_mode) == 0o600, f
        j.close()


def test_error_messages_do_not_show_the_daemons_paths(make_daemon, server_keys):
    d = make_daemon()
    with Client(d.address) as c:
        with pytest.raises(BadInput) as info:
            c.submit(pb.SubmitProofRequest(circuit_id="synthetic:1024", seeds=[1]))
    text = str(info.value)
    assert "no proving key" in text and "<param_dir>" in text
    assert str(server_keys) not in text and str(server_keys.resolve()) not in text
