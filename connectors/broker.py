"""A single-node Apache Kafka broker (KRaft, broker + controller) from the jars of ``make jars``.

The data directory holds everything of one broker and survives restarts::

    DIR/server.properties    written on every start (ports may change)
    DIR/log4j2.properties    our logging: INFO to DIR/logs/server.log, errors to the console
    DIR/kraft/               the log dirs (topics, metadata); formatted once, with the cluster id
    DIR/logs/server.log      the broker's log; DIR/logs/jvm.out its stdout/stderr

Usage::

    with LocalBroker(9092, Path("data/broker")) as broker:
        print(broker.bootstrap)
"""

from __future__ import annotations

import base64
import contextlib
import ctypes
import errno
import secrets
import signal
import socket
import subprocess
import time
import uuid
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import Any

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

from connectors.jvm import REPO_ROOT, ClassArchive, java_executable, require_jars
from connectors.kafka_settings import PLAIN_MODULE, jaas_config, jaas_quote
from trending.errors import UserError

DEFAULT_PORT = 9092
DEFAULT_DATA_DIR = REPO_ROOT / "data" / "broker"
HOST = "127.0.0.1"
HEAP = "512m"
BROKER_USER = "trending-broker"
_PR_SET_PDEATHSIG = 1
_PRCTL: Any = None
with contextlib.suppress(OSError, AttributeError):  # resolved here: the forked child only calls it
    _PRCTL = ctypes.CDLL(None, use_errno=True).prctl

LOG4J2 = """\
status = warn
appender.file.type = RollingFile
appender.file.name = file
appender.file.fileName = {log}
appender.file.filePattern = {log}.%i
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
appender.file.policies.type = Policies
appender.file.policies.size.type = SizeBasedTriggeringPolicy
appender.file.policies.size.size = 50MB
appender.file.strategy.type = DefaultRolloverStrategy
appender.file.strategy.max = 3
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = kafka: %p %m (%c)%n
appender.console.filter.level.type = ThresholdFilter
appender.console.filter.level.level = error
rootLogger.level = info
rootLogger.appenderRef.file.ref = file
rootLogger.appenderRef.console.ref = console
logger.state.name = state.change.logger
logger.state.level = warn
"""


class BrokerError(UserError):
    """The broker could not start or died; the message ends with the tail of its log."""


def server_properties(
    port: int,
    controller_port: int,
    log_dir: Path,
    users: Mapping[str, str] | None = None,
    acls: bool = False,
) -> str:
    """The ``server.properties`` of a single-node KRaft broker on 127.0.0.1.

    With ``users`` (name -> password, at least the broker's own user first) clients must log in
    with SASL/PLAIN as one of them; the controller listener stays PLAINTEXT. With ``acls`` the
    broker enforces ACLs (Kafka's StandardAuthorizer), allowing what no ACL names.
    """
    listener = "SASL_PLAINTEXT" if users else "PLAINTEXT"
    settings = {
        "process.roles": "broker,controller",
        "node.id": "1",
        "controller.quorum.voters": f"1@{HOST}:{controller_port}",
        "listeners": f"{listener}://{HOST}:{port},CONTROLLER://{HOST}:{controller_port}",
        "advertised.listeners": f"{listener}://{HOST}:{port}",
        "controller.listener.names": "CONTROLLER",
        "inter.broker.listener.name": listener,
        "listener.security.protocol.map": f"{listener}:{listener},CONTROLLER:PLAINTEXT",
        **(_sasl_plain_properties(users) if users else {}),
        **(_ACL_PROPERTIES if acls else {}),
        "log.dirs": str(log_dir),
        "num.partitions": "1",
        "offsets.topic.replication.factor": "1",
        "offsets.topic.num.partitions": "4",
        "share.coordinator.state.topic.replication.factor": "1",
        "share.coordinator.state.topic.min.isr": "1",
        "transaction.state.log.replication.factor": "1",
        "transaction.state.log.min.isr": "1",
        "transaction.state.log.num.partitions": "4",
        "group.initial.rebalance.delay.ms": "0",
        "auto.create.topics.enable": "false",
        "log.retention.hours": "168",
    }
    return "".join(f"{key}={_property_value(value)}\n" for key, value in settings.items())


_ACL_PROPERTIES = {
    "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "allow.everyone.if.no.acl.found": "true",
}


def _sasl_plain_properties(users: Mapping[str, str]) -> dict[str, str]:
    """SASL/PLAIN on the client listener; the first user is the broker's own (inter-broker)."""
    (name, password), *_ = users.items()
    accounts = " ".join(f'user_{user}="{jaas_quote(secret)}"' for user, secret in users.items())
    login = jaas_config(PLAIN_MODULE, name, password)
    return {
        "sasl.enabled.mechanisms": "PLAIN",
        "sasl.mechanism.inter.broker.protocol": "PLAIN",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": f"{login[:-1]} {accounts};",
    }


def _property_value(value: str) -> str:
    """``value`` escaped for a Java properties file (read as ISO 8859-1)."""
    text = value.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r")
    return "".join(char if ord(char) < 0x7F else _unicode_escape(char) for char in text)


def _unicode_escape(char: str) -> str:
    data = char.encode("utf-16-be")
    return "".join(f"\\u{data[i]:02x}{data[i + 1]:02x}" for i in range(0, len(data), 2))


def random_cluster_id() -> str:
    """A Kafka cluster id: 16 random bytes in URL-safe base64, never starting with ``-``."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not text.startswith("-"):
            return text


def check_port_free(port: int, what: str) -> None:
    """Raise a one-line :class:`UserError` when ``127.0.0.1:port`` cannot be listened on."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((HOST, port))
        except OSError as error:
            reason = "is already in use" if error.errno == errno.EADDRINUSE else f"({error})"
            message = f"{what} {HOST}:{port} {reason}: stop what uses it or pick another"
            raise UserError(message) from None


def _is_free(port: int) -> bool:
    try:
        check_port_free(port, "port")
    except UserError:
        return False
    return True


def free_port() -> int:
    """A TCP port of 127.0.0.1 that is free right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((HOST, 0))
        return int(probe.getsockname()[1])


def _die_with_parent() -> None:
    """In the child (Linux): SIGTERM the broker when the thread that started it dies."""
    if _PRCTL is not None:
        _PRCTL(_PR_SET_PDEATHSIG, int(signal.SIGTERM))


def _accepts(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.settimeout(0.5)
        return probe.connect_ex((HOST, port)) == 0


def _has_brokers(client: AdminClient) -> bool:
    """Whether a metadata request answers with at least one broker."""
    try:
        return bool(client.list_topics(timeout=1.0).brokers)
    except KafkaException:
        return False


def tail(path: Path, lines: int = 30) -> str:
    """The last ``lines`` lines of a text file ('' when missing)."""
    if not path.exists():
        return ""
    with path.open("rb") as handle:
        handle.seek(max(0, path.stat().st_size - 64_000))
        text = handle.read().decode("utf-8", "replace")
    return "\n".join(text.splitlines()[-lines:])


class LocalBroker:
    """One Kafka broker process on ``127.0.0.1:port`` keeping its data in ``data_dir``.

    The controller listens on ``controller_port``; by default ``port + 1``, or any free port
    when that one is taken (the quorum is static, so it may change between restarts). With
    ``users`` (name -> password) clients log in with SASL/PLAIN (:attr:`client_settings` are
    the broker's own login, a user of its own with a random password). With ``acls`` it
    enforces ACLs, allowing what no ACL names.
    """

    def __init__(
        self,
        port: int,
        data_dir: Path,
        controller_port: int | None = None,
        users: Mapping[str, str] | None = None,
        acls: bool = False,
    ) -> None:
        self.port = port
        self.acls = acls
        self.users = {BROKER_USER: secrets.token_urlsafe(18), **users} if users else None
        self.controller_port = controller_port if controller_port is not None else port + 1
        self._pick_controller_port = controller_port is None
        self._archive: ClassArchive | None = None
        self.data_dir = Path(data_dir).resolve()
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def bootstrap(self) -> str:
        return f"{HOST}:{self.port}"

    @property
    def client_settings(self) -> dict[str, str]:
        """The librdkafka settings of a client that logs in as the broker's own user."""
        if self.users is None:
            return {}
        return {
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "PLAIN",
            "sasl.username": BROKER_USER,
            "sasl.password": self.users[BROKER_USER],
        }

    @property
    def log_file(self) -> Path:
        return self.data_dir / "logs" / "server.log"

    @property
    def _jvm_out(self) -> Path:
        return self.data_dir / "logs" / "jvm.out"

    def start(self) -> None:
        """Check ports, write the config, format storage on first start, launch the JVM."""
        if self.process is not None:
            raise RuntimeError("broker already started")
        if self.port == self.controller_port:
            raise UserError(f"the broker and controller ports must differ (both {self.port})")
        check_port_free(self.port, "broker port")
        if self._pick_controller_port and not _is_free(self.controller_port):
            self.controller_port = free_port()
        check_port_free(self.controller_port, "controller port")
        java, jars = java_executable(), require_jars("broker")
        (self.data_dir / "logs").mkdir(parents=True, exist_ok=True)
        config = self._write_config()
        base = self._java_command(java, jars)
        self._format(base, config)
        self._archive = ClassArchive("broker", java, jars, jars[0].parent.parent)
        with self._jvm_out.open("ab") as out:
            self.process = subprocess.Popen(
                [*base, *self._archive.options(), "kafka.Kafka", str(config)],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # Ctrl-C in the terminal reaches only us
                preexec_fn=_die_with_parent,  # noqa: PLW1509 - one prctl call, no Python state
            )

    def _java_command(self, java: str, jars: list[Path]) -> list[str]:
        """``java`` with heap, logging and class path, before the main class."""
        log4j = f"-Dlog4j2.configurationFile={self.data_dir / 'log4j2.properties'}"
        return [
            java,
            f"-Xmx{HEAP}",
            "-Xms128m",
            "-XX:+UseG1GC",
            "-Djava.awt.headless=true",
            "-Dlog4j2.shutdownHookEnabled=false",  # keep logging during Kafka's shutdown
            log4j,
            "-cp",
            str(jars[0].parent / "*"),  # java expands the wildcard
        ]

    def _write_config(self) -> Path:
        log4j = LOG4J2.format(log=self.log_file)
        (self.data_dir / "log4j2.properties").write_text(log4j, encoding="utf-8")
        config = self.data_dir / "server.properties"
        log_dirs = self.data_dir / "kraft"
        props = server_properties(self.port, self.controller_port, log_dirs, self.users, self.acls)
        config.touch(mode=0o600)  # it may hold passwords
        config.chmod(0o600)
        config.write_text(props, encoding="utf-8")
        return config

    def _format(self, base: list[str], config: Path) -> None:
        if (self.data_dir / "kraft" / "meta.properties").exists():
            return
        command = [*base, "kafka.tools.StorageTool", "format", "-t", random_cluster_id()]
        result = subprocess.run(
            [*command, "-c", str(config)], capture_output=True, text=True, check=False
        )
        if result.returncode != 0:
            output = (result.stdout + result.stderr).strip()[-2000:]
            raise BrokerError(f"formatting {self.data_dir / 'kraft'} failed:\n{output}")

    def cluster_id(self) -> str | None:
        """The cluster id stored in the data directory, if formatted."""
        meta = self.data_dir / "kraft" / "meta.properties"
        for line in meta.read_text().splitlines() if meta.exists() else ():
            if line.startswith("cluster.id="):
                return line.split("=", 1)[1].strip()
        return None

    def wait_ready(self, timeout: float = 60.0) -> float:
        """Block until a metadata request succeeds; return the seconds waited.

        Raises :class:`BrokerError` with the log tail if the JVM exits or time runs out.
        """
        start, client = time.monotonic(), None
        while time.monotonic() - start < timeout:
            self._check_alive("exited during start-up")
            if client is None and _accepts(self.port):
                settings = {"bootstrap.servers": self.bootstrap, **self.client_settings}
                client = AdminClient({**settings, "log_level": 0})
            if client is not None and _has_brokers(client):
                return time.monotonic() - start
            time.sleep(0.05)
        self.stop()
        raise BrokerError(f"broker not ready after {timeout:.0f} s\n{self.log_tail()}")

    def _check_alive(self, what: str) -> None:
        if self.process is None:
            raise RuntimeError("broker not started")
        code = self.process.poll()
        if code is not None:
            self.process = None
            raise BrokerError(f"the Kafka broker {what} (exit code {code})\n{self.log_tail()}")

    def log_tail(self, lines: int = 30) -> str:
        """The last lines of the broker's log and JVM output, for error messages."""
        parts = [
            f"--- {path} ---\n{text}"
            for path in (self.log_file, self._jvm_out)
            if (text := tail(path, lines))
        ]
        return "\n".join(parts) or f"(no log in {self.log_file.parent})"

    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def wait(self) -> int:
        """Block until the JVM exits; return its exit code."""
        if self.process is None:
            raise RuntimeError("broker not started")
        return self.process.wait()

    def stop(self, timeout: float = 30.0) -> int | None:
        """SIGTERM the JVM (a clean Kafka shutdown), SIGKILL after ``timeout``; the exit code."""
        process, self.process = self.process, None
        if process is None:
            return None
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                code = process.wait(timeout)
                if self._archive is not None:
                    self._archive.keep()
                return code
            except subprocess.TimeoutExpired:
                process.kill()
        return process.wait()

    def __enter__(self) -> LocalBroker:
        self.start()
        try:
            self.wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.stop()
