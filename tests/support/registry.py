"""A schema registry over HTTP for tests: the subset of Confluent's REST API the clients use.

No registry server installs on these machines (see the environment notes), and Spark's executors
cannot reach confluent-kafka's in-process ``mock://`` one. This one serves
``POST /subjects/{subject}/versions`` and ``GET /schemas/ids/{id}`` from a thread of the test
process, with optional basic auth, TLS (and client certificates), an outage switch, outages that
start when a schema is first asked for, and a log of the requests it answered. Like Confluent's,
it answers an unknown id with HTTP 404 and error code 40403, an unknown path with 404 and 404.
"""

from __future__ import annotations

import base64
import datetime
import ipaddress
import json
import re
import ssl
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

FIRST_ID = 101  # ids far from 0 and 1, so a test cannot pass by guessing them
SLOW = 0  # an outage "status": requests are answered, but only once the outage is over


@dataclass
class RegistryState:
    """What the registry holds and how it behaves."""

    users: dict[str, str] = field(default_factory=dict)  # basic auth; empty: no auth
    down: bool = False  # answer 503 to everything
    schemas: dict[int, dict[str, Any]] = field(default_factory=dict)
    versions: dict[str, list[int]] = field(default_factory=dict)
    requests: list[str] = field(default_factory=list)
    failed: int = 0  # requests answered with an outage's status
    outages: dict[str, tuple[float, int]] = field(default_factory=dict)  # request -> (s, status)
    outage: tuple[float, int] = (0.0, 0)  # (monotonic end, status) of the outage under way
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, subject: str, schema: str, schema_type: str = "AVRO") -> int:
        """Register ``schema`` under ``subject`` (an identical one keeps its id)."""
        entry = {"schema": schema, "schemaType": schema_type}
        with self.lock:
            found = next((i for i, e in self.schemas.items() if e == entry), None)
            schema_id = found if found is not None else FIRST_ID + len(self.schemas)
            self.schemas[schema_id] = entry
            ids = self.versions.setdefault(subject, [])
            if schema_id not in ids:
                ids.append(schema_id)
            return schema_id

    def fail_when_asked(self, schema_id: int, seconds: float, status: int = 503) -> None:
        """From the first request for ``schema_id`` on, answer every request with ``status``
        for ``seconds`` (status :data:`SLOW`: answer each only once they are over): the
        registry fails just when a job needs it."""
        with self.lock:
            self.outages[f"GET /schemas/ids/{schema_id}"] = (seconds, status)

    def _outage(self, line: str) -> tuple[int, float] | None:
        """The status to answer ``line`` with and the outage's end, if one is under way (the
        lock is held)."""
        now = time.monotonic()
        if line in self.outages:
            seconds, status = self.outages.pop(line)
            self.outage = (now + seconds, status)
        if now < self.outage[0]:
            self.failed += 1
            return self.outage[1], self.outage[0]
        if self.down:
            self.failed += 1
            return 503, now
        return None

    def lookups(self, schema_id: int) -> int:
        """How many times the writer schema ``schema_id`` was asked for."""
        return sum(1 for line in self.requests if line == f"GET /schemas/ids/{schema_id}")


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0]
        if not self._admitted(f"GET {path}"):
            return
        match = re.fullmatch(r"/schemas/ids/(\d+)", path)
        state = self.server.state
        if match is None:
            self._answer(404, {"error_code": 404, "message": "HTTP 404 Not Found"})
            return
        if int(match.group(1)) not in state.schemas:
            self._answer(404, {"error_code": 40403, "message": "Schema not found"})
            return
        entry = state.schemas[int(match.group(1))]
        body = {"schema": entry["schema"]}
        if entry["schemaType"] != "AVRO":
            body["schemaType"] = entry["schemaType"]
        self._answer(200, body)

    def do_POST(self) -> None:
        path = self.path.split("?", 1)[0]
        if not self._admitted(f"POST {path}"):
            return
        match = re.fullmatch(r"/subjects/([^/]+)/versions", path)
        if match is None:
            self._answer(404, {"error_code": 404, "message": "Not found"})
            return
        request = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
        subject = match.group(1)
        schema_id = self.server.state.add(
            subject, request["schema"], request.get("schemaType") or "AVRO"
        )
        version = self.server.state.versions[subject].index(schema_id) + 1
        self._answer(200, {"id": schema_id, "subject": subject, "version": version})

    def _admitted(self, line: str) -> bool:
        state = self.server.state
        with state.lock:
            state.requests.append(line)
            outage = state._outage(line)
        if outage is not None and outage[0] == SLOW:
            time.sleep(max(0.0, outage[1] - time.monotonic()) + 0.2)
        elif outage is not None:
            status = outage[0]
            self._answer(status, {"error_code": status * 100 + 1, "message": "Failing on purpose"})
            return False
        if state.users and self._user() not in state.users.items():
            self._answer(401, {"error_code": 40101, "message": "Unauthorized"})
            return False
        return True

    def _user(self) -> tuple[str, str] | None:
        header = self.headers.get("Authorization", "")
        if not header.startswith("Basic "):
            return None
        user, _, password = base64.b64decode(header[6:]).decode().partition(":")
        return user, password

    def _answer(self, status: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/vnd.schemaregistry.v1+json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, state: RegistryState, port: int = 0) -> None:
        super().__init__(("127.0.0.1", port), _Handler)
        self.state = state


@dataclass
class RunningRegistry:
    """A registry answering at ``url``."""

    url: str
    state: RegistryState


@dataclass(frozen=True)
class PemPair:
    """A certificate and its unencrypted PKCS#8 key, PEM files."""

    cert: Path
    key: Path


def self_signed(folder: Path, name: str) -> PemPair:
    """A one-day self-signed certificate for 127.0.0.1 (an IP subject alternative name)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import rsa
    from cryptography.x509.oid import NameOID

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (
        x509.CertificateBuilder().subject_name(subject).issuer_name(subject)
        .public_key(key.public_key()).serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )  # fmt: skip
    pair = PemPair(folder / f"{name}.crt", folder / f"{name}.key")
    pair.cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    pair.key.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return pair


@contextmanager
def schema_registry(
    users: dict[str, str] | None = None,
    tls: PemPair | None = None,
    client_ca: Path | None = None,
    port: int = 0,
    state: RegistryState | None = None,
) -> Iterator[RunningRegistry]:
    """Serve a registry on ``port`` (0: a free one) until the block ends, holding ``state``
    (default: a new one): over HTTPS with ``tls``, asking for a client certificate issued by
    ``client_ca`` when given."""
    state = state or RegistryState(users=dict(users or {}))
    server = _Server(state, port)
    scheme = "http"
    if tls is not None:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(tls.cert, tls.key)
        if client_ca is not None:
            context.verify_mode = ssl.CERT_REQUIRED
            context.load_verify_locations(client_ca)
        server.socket = context.wrap_socket(server.socket, server_side=True)
        scheme = "https"
    thread = threading.Thread(target=server.serve_forever, name="test-registry", daemon=True)
    thread.start()
    try:
        yield RunningRegistry(f"{scheme}://127.0.0.1:{server.server_address[1]}", state)
    finally:
        server.shutdown()
        server.server_close()
