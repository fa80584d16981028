"""CURVE security: key files, permission checks, and the socket options for both sides.

When keys are configured every socket is encrypted and authenticated: the
learner runs a ZAP authenticator whose allow list is a directory of client
public key files, and enforces the ZAP domain, so a handshake without an
allowed key fails and the peer gets nothing (no experience accepted, no
weights). Key files are ZeroMQ's own certificate format
(`zmq.auth.create_certificates`): `NAME.key` (public) and `NAME.key_secret`.
A secret key file that others (the "other" permission bits) may read or
write is refused; group access is allowed, as Kubernetes secret volumes with
an fsGroup need it.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

import zmq
import zmq.auth

ZAP_DOMAIN = "saclstm"


class KeyFileError(ValueError):
    """A key file that cannot be used; the message says which and why."""


def _check_private(path: Path) -> None:
    mode = stat.S_IMODE(path.stat().st_mode)
    if mode & 0o007:
        raise KeyFileError(f"secret key file {path} is readable by others (mode {mode:04o}); run: chmod 600 {path}")


def load_public(path: str | Path) -> bytes:
    try:
        public, _ = zmq.auth.load_certificate(str(path))
    except (OSError, ValueError) as exc:
        raise KeyFileError(f"cannot read public key {path}: {exc}") from None
    return public


def load_secret(path: str | Path) -> tuple[bytes, bytes]:
    """(public, secret) from a NAME.key_secret file, after checking its permissions."""
    p = Path(path)
    if not p.exists():
        raise KeyFileError(f"secret key file {p} does not exist")
    _check_private(p)
    try:
        public, secret = zmq.auth.load_certificate(str(p))
    except (OSError, ValueError) as exc:
        raise KeyFileError(f"cannot read secret key {p}: {exc}") from None
    if not secret:
        raise KeyFileError(f"{p} holds no secret key (is it the .key file rather than .key_secret?)")
    return public, secret


def generate(directory: str | Path, clients: int = 1) -> list[Path]:
    """server.key(_secret) and client{i}.key(_secret); secrets mode 0600; clients' public keys also in allowed/."""
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    allowed = d / "allowed"
    allowed.mkdir(exist_ok=True)
    written = []
    for name in ["server"] + [f"client{i}" for i in range(clients)]:
        public, secret = zmq.auth.create_certificates(str(d), name)
        os.chmod(secret, 0o600)
        written += [Path(public), Path(secret)]
        if name != "server":
            (allowed / Path(public).name).write_bytes(Path(public).read_bytes())
    return written


@dataclass(frozen=True)
class ServerKeys:
    """The learner's side: its key pair and the directory of allowed client public keys."""

    public: bytes
    secret: bytes
    allowed_dir: str

    @staticmethod
    def load(secret_file: str, allowed_dir: str) -> ServerKeys:
        public, secret = load_secret(secret_file)
        if not Path(allowed_dir).is_dir() or not any(Path(allowed_dir).glob("*.key")):
            raise KeyFileError(f"allow list {allowed_dir} holds no client public keys (*.key): nobody could connect")
        return ServerKeys(public, secret, allowed_dir)

    def apply(self, sock: zmq.Socket) -> None:
        sock.curve_server = True
        sock.curve_publickey, sock.curve_secretkey = self.public, self.secret
        sock.zap_domain = ZAP_DOMAIN.encode()
        sock.setsockopt(zmq.ZAP_ENFORCE_DOMAIN, 1)

    def start_authenticator(self, ctx: zmq.Context):  # -> ThreadAuthenticator
        from zmq.auth.thread import ThreadAuthenticator

        auth = ThreadAuthenticator(ctx)
        auth.start()
        auth.configure_curve(domain=ZAP_DOMAIN, location=self.allowed_dir)
        return auth


@dataclass(frozen=True)
class ClientKeys:
    """An actor's or monitor's side: the server's public key and its own pair."""

    server_public: bytes
    public: bytes
    secret: bytes

    @staticmethod
    def load(server_public_file: str, secret_file: str) -> ClientKeys:
        public, secret = load_secret(secret_file)
        return ClientKeys(load_public(server_public_file), public, secret)

    def apply(self, sock: zmq.Socket) -> None:
        sock.curve_serverkey = self.server_public
        sock.curve_publickey, sock.curve_secretkey = self.public, self.secret


def is_loopback(endpoint: str) -> bool:
    """True for endpoints only this host can reach."""
    if endpoint.startswith(("ipc://", "inproc://")):
        return True
    host = endpoint.split("://", 1)[-1].rsplit(":", 1)[0].strip("[]")
    return host in ("127.0.0.1", "localhost", "::1") or host.startswith("127.")
