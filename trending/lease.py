"""One owner per checkpoint: a lease kept in generations on the checkpoint's own storage.

Files under ``<checkpoint>/lease/``::

    <gen>.json   who took the lease at generation gen = 1, 2, ... (owner id, host, pid, since,
                 and the :class:`Identity` fields), or ``{"released": ...}`` when its owner let
                 it go; the highest generation rules
    <gen>.beat   that owner's heartbeat counter, rewritten by that owner only

A generation is created exclusively (creation fails when the file exists), so of two processes
racing for one generation exactly one wins. A starting process takes the next generation when
the highest one is released, or names a process this one can tell is gone, or shows no heartbeat
for ``timeout`` seconds of the starter's own clock (no clocks are compared across hosts);
otherwise it refuses to start. An owner that finds a generation above its own has been taken
over (it stalled longer than ``timeout``): it stops, and writes nothing further.

A pid names one process only within one pid namespace of one boot of one machine: two containers
on one host (host networking gives both the host's name) each run their job as pid 1. So an owner
records, beside host and pid, its :class:`Identity`: the kernel's boot id, its pid namespace, its
start time and its container's id. An owner is gone at once only when this process can verify it:

* same boot and pid namespace: its pid is this process's own (an earlier life of it), or no
  longer exists, or now belongs to a process started at another time;
* same boot and container, another pid namespace: an earlier run of this container (a restarted
  container gets a new namespace; a container never has two at once).

Any other owner (another machine or boot, another container, a Kubernetes container restarted in
its pod, a lease file without these fields) may be alive: it is taken over only after ``timeout``
without a heartbeat. Without ``/proc`` (no identity on either side) host and pid decide.
"""

from __future__ import annotations

import json
import logging
import os
import re
import socket
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, fields
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Protocol

from trending.errors import UserError

log = logging.getLogger(__name__)

DEFAULT_TIMEOUT_S = 30.0
BEATS_PER_TIMEOUT = 6  # an owner beats every timeout / 6; a starter polls twice as often
KEPT_GENERATIONS = 2  # the newest generations kept for diagnosis; older ones are deleted


class LeaseStorage(Protocol):
    """Small files in one folder of the checkpoint's storage."""

    location: str

    def read(self, name: str) -> str | None:
        """The text of ``name``, or None when it does not exist."""

    def create(self, name: str, text: str) -> bool:
        """Create ``name`` with ``text`` unless it exists (atomically); False when it does."""

    def write(self, name: str, text: str) -> None:
        """Replace ``name`` with ``text``, whole or not at all."""

    def names(self) -> list[str]:
        """The names of the folder's files."""

    def delete(self, name: str) -> None:
        """Delete ``name`` if it exists."""


class LeaseHeld(UserError):
    """Another live process owns the checkpoint."""


class LeaseLost(UserError):
    """This process's lease was taken over: it must stop."""


@dataclass(frozen=True)
class Identity:
    """Which process a pid names (each part None when unknown): the machine's boot
    (``/proc/sys/kernel/random/boot_id``), the pid namespace the pid counts in
    (``readlink /proc/self/ns/pid``), the process's start in clock ticks after boot (field 22 of
    ``/proc/self/stat``) and the id of the container it runs in (Docker, Podman)."""

    boot_id: str | None = None
    pid_ns: str | None = None
    started: int | None = None
    container: str | None = None

    @classmethod
    def current(cls) -> Identity:
        """This process's identity, from ``/proc``."""
        return cls(
            boot_id=_read(Path("/proc/sys/kernel/random/boot_id")),
            pid_ns=_readlink("/proc/self/ns/pid"),
            started=process_started(os.getpid()),
            container=container_id(),
        )


@dataclass(frozen=True)
class Holder:
    """Who holds a generation of the lease."""

    owner: str
    host: str
    pid: int
    since: str
    identity: Identity = Identity()

    def to_json(self) -> dict[str, Any]:
        """The lease file's fields: those of older releases, then the identity's."""
        me = asdict(self)
        return {**me, **me.pop("identity")}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Holder:
        """A holder from a lease file (one of an older release has no identity)."""
        known = {f.name for f in fields(Identity)}
        return cls(
            owner=str(data["owner"]),
            host=str(data["host"]),
            pid=int(data["pid"]),
            since=str(data["since"]),
            identity=Identity(**{k: v for k, v in data.items() if k in known}),
        )

    def describe(self) -> str:
        container = self.identity.container
        where = f" in container {container[:12]}" if container else ""
        return f"pid {self.pid}{where} on host {self.host} (owner since {self.since})"


def verifiably_gone(
    holder: Holder, me: Holder, alive: Callable[[int], bool], started: Callable[[int], int | None]
) -> bool:
    """Whether this process (``me``) can tell that ``holder`` is gone; False: it may be alive.
    ``alive`` and ``started`` look a pid up in this process's pid namespace."""
    theirs, mine = holder.identity, me.identity
    if theirs.boot_id is None and mine.boot_id is None:  # no /proc either side: host and pid
        return holder.host == me.host and (holder.pid == me.pid or not alive(holder.pid))
    if theirs.boot_id != mine.boot_id:  # another machine or boot, or a file without identity
        return False
    if theirs.pid_ns is not None and theirs.pid_ns == mine.pid_ns:  # its pid counts where ours does
        if holder.pid == me.pid or not alive(holder.pid):  # one live process per pid
            return True
        now = started(holder.pid)
        return now is not None and theirs.started is not None and now != theirs.started  # reused
    return theirs.container is not None and theirs.container == mine.container  # an earlier run


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip() or None
    except OSError:
        return None


def _readlink(path: str) -> str | None:
    try:
        return os.readlink(path)
    except OSError:
        return None


def process_started(pid: int) -> int | None:
    """When ``pid`` started, in clock ticks after boot (None: no such process, or unknown)."""
    stat = _read(Path(f"/proc/{pid}/stat"))
    if stat is None or ")" not in stat:
        return None
    after_name = stat.rsplit(")", 1)[1].split()  # the name may hold spaces and parentheses
    try:
        return int(after_name[19])  # field 22; after the name come fields 3, 4, ...
    except (IndexError, ValueError):
        return None


# A Docker or Podman container's id, in the source path of the files the engine mounts into it
# (/var/lib/docker/containers/<id>/hostname, .../overlay-containers/<id>/userdata/hostname); a
# Kubernetes pod's files name the pod's sandbox instead, which its containers share.
_ENGINE_FILE = re.compile(r"containers/([0-9a-f]{64})/")
_ENGINE_MOUNTS = ("/etc/hostname", "/etc/hosts", "/etc/resolv.conf")
# ... or in its cgroup (cgroup v1, or v2 seen from the host's cgroup namespace)
_CGROUP = re.compile(r"(?:docker|libpod)[-/]([0-9a-f]{64})(?:\.scope)?$")


def container_id(mountinfo: str | None = None, cgroup: str | None = None) -> str | None:
    """The id of the Docker or Podman container this process runs in, if it can tell (from
    ``/proc/self/mountinfo`` and ``/proc/self/cgroup`` unless given)."""
    if mountinfo is None:
        mountinfo = _read(Path("/proc/self/mountinfo")) or ""
    for line in mountinfo.splitlines():
        parts = line.split()  # id, parent, device, root (the source path), mount point, ...
        found = len(parts) > 4 and parts[4] in _ENGINE_MOUNTS and _ENGINE_FILE.search(parts[3])
        if found:
            return found[1]
    if cgroup is None:
        cgroup = _read(Path("/proc/self/cgroup")) or ""
    for line in cgroup.splitlines():
        if found := _CGROUP.search(line):
            return found[1]
    return None


def _gen_name(gen: int, suffix: str) -> str:
    return f"{gen:010d}.{suffix}"


def _generations(names: list[str]) -> list[int]:
    return sorted(
        int(name[:-5]) for name in names if name.endswith(".json") and name[:-5].isdigit()
    )


def process_alive(pid: int) -> bool:
    """Whether a process with ``pid`` exists on this host."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class CheckpointLease:
    """The lease on one checkpoint, for this process: :meth:`acquire`, beat (a thread started by
    :meth:`start_heartbeat`, or :meth:`renew`), :meth:`check` before each batch, :meth:`release`.
    """

    def __init__(
        self,
        storage: LeaseStorage,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        *,
        host: str | None = None,
        pid: int | None = None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
        alive: Callable[[int], bool] = process_alive,
        started: Callable[[int], int | None] = process_started,
        identity: Identity | None = None,
    ) -> None:
        """``host``, ``pid`` and ``identity`` default to this process's; a ``pid`` given without
        an ``identity`` stands for a process known by host and pid only."""
        if timeout_s <= 0:
            raise UserError(f"--lease-timeout must be positive, got {timeout_s} s")
        self.storage = storage
        self.timeout_s = timeout_s
        self.me = Holder(
            owner=uuid.uuid4().hex,
            host=host or socket.gethostname(),
            pid=os.getpid() if pid is None else pid,
            since=datetime.now(timezone.utc).isoformat(timespec="seconds"),
            identity=identity or (Identity.current() if pid is None else Identity()),
        )
        self.gen = 0  # the generation held; 0: none
        self._clock, self._sleep, self._alive, self._started = clock, sleep, alive, started
        self._beats = 0
        self._last_beat = 0.0
        self._lost: LeaseLost | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # -- taking the lease ------------------------------------------------------------------

    def acquire(self, attempts: int = 3) -> None:
        """Take the next generation, or raise :class:`LeaseHeld` naming the live owner."""
        for _ in range(attempts):
            gen = self._newest()
            holder = self._holder(gen)
            if holder is not None and not self._gone(gen, holder):
                continue  # the newest generation changed while watching: look again
            if self.storage.create(_gen_name(gen + 1, "json"), json.dumps(self.me.to_json())):
                self.gen = gen + 1
                self._beat()
                self._forget_before(self.gen - KEPT_GENERATIONS + 1)
                return
        raise self._held_error(self._newest())

    def _gone(self, gen: int, holder: Holder) -> bool:
        """Whether the owner of ``gen`` is gone; :class:`LeaseHeld` when it is alive, False
        when a newer generation appeared meanwhile."""
        if verifiably_gone(holder, self.me, self._alive, self._started):
            log.warning("checkpoint lease: its owner %s is gone: taking over", holder.describe())
            return True
        log.warning(
            "checkpoint lease: owned by %s; waiting up to %.0f s for its heartbeat",
            holder.describe(),
            self.timeout_s,
        )
        first = self.storage.read(_gen_name(gen, "beat"))
        deadline = self._clock() + self.timeout_s
        while self._clock() < deadline:
            self._sleep(self.timeout_s / BEATS_PER_TIMEOUT / 2)
            if self._newest() != gen:
                return False
            if self.storage.read(_gen_name(gen, "beat")) != first:
                raise self._held_error(gen)
        log.warning(
            "checkpoint lease: no heartbeat from %s for %.0f s: taking over",
            holder.describe(),
            self.timeout_s,
        )
        return True

    def _held_error(self, gen: int) -> LeaseHeld:
        holder = self._holder(gen)
        who = holder.describe() if holder else "another process"
        return LeaseHeld(
            f"the checkpoint {self.storage.location} is in use by {who}, which is alive: stop "
            "that job first, or use another --checkpoint. A job that is gone is taken over at "
            "once where this process can tell (on its host, in its pid namespace or its "
            "container), and otherwise after --lease-timeout without its heartbeat"
        )

    # -- keeping it ------------------------------------------------------------------------

    def renew(self) -> None:
        """One heartbeat; :class:`LeaseLost` when a newer generation took over."""
        self.check()
        self._beat()
        self.check()

    def check(self) -> None:
        """Raise :class:`LeaseLost` unless this process still holds the lease."""
        if self._lost is None:
            newest = self._newest()
            if newest != self.gen:
                self._lost = LeaseLost(
                    f"the checkpoint {self.storage.location} was taken over (lease generation "
                    f"{newest}, {self._describe_gen(newest)}) while this job held generation "
                    f"{self.gen}: this job stalled longer than --lease-timeout "
                    f"({self.timeout_s:.0f} s); it stops and writes nothing further"
                )
        if self._lost is not None:
            raise self._lost

    def _beat(self) -> None:
        self._beats += 1
        self.storage.write(_gen_name(self.gen, "beat"), str(self._beats))
        self._last_beat = self._clock()

    def start_heartbeat(self, on_lost: Callable[[LeaseLost], None]) -> None:
        """Beat every ``timeout / 6`` seconds in a daemon thread; call ``on_lost`` once when
        the lease is lost."""

        def beat() -> None:
            while not self._stop.wait(self.timeout_s / BEATS_PER_TIMEOUT):
                try:
                    self.renew()
                except LeaseLost as lost:
                    on_lost(lost)
                    return
                except Exception as error:  # a storage hiccup: retried until the timeout
                    log.warning("checkpoint lease: heartbeat failed: %s", error)
                    if self._clock() - self._last_beat > self.timeout_s:
                        on_lost(self._unrenewable(error))
                        return

        self._thread = threading.Thread(target=beat, name="checkpoint-lease", daemon=True)
        self._thread.start()

    def _unrenewable(self, error: Exception) -> LeaseLost:
        self._lost = LeaseLost(
            f"the checkpoint {self.storage.location}'s lease could not be renewed for "
            f"{self.timeout_s:.0f} s (--lease-timeout; last error: {error}): another process "
            "may take it over, so this job stops"
        )
        return self._lost

    # -- letting it go ---------------------------------------------------------------------

    def release(self) -> None:
        """Stop beating and mark the lease released, unless it was taken over."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(10)
        if self.gen == 0 or self._lost is not None or self._newest() != self.gen:
            return
        released = {"released": self.me.owner, "at": datetime.now(timezone.utc).isoformat()}
        if self.storage.create(_gen_name(self.gen + 1, "json"), json.dumps(released)):
            self.storage.delete(_gen_name(self.gen, "beat"))
        self.gen = 0

    # -- reading the folder ----------------------------------------------------------------

    def _newest(self) -> int:
        generations = _generations(self.storage.names())
        return generations[-1] if generations else 0

    def _holder(self, gen: int) -> Holder | None:
        """The holder of ``gen``; None for no generation or a released one."""
        if gen == 0:
            return None
        for _ in range(5):  # a file created in place may be read before its text is written
            text = self.storage.read(_gen_name(gen, "json"))
            try:
                written = json.loads(text or "")
            except ValueError:
                self._sleep(0.2)
                continue
            if "released" in written:
                return None
            return Holder.from_json(written)
        return Holder(owner="?", host="?", pid=-1, since="?")

    def _describe_gen(self, gen: int) -> str:
        holder = self._holder(gen)
        return holder.describe() if holder else "released"

    def _forget_before(self, gen: int) -> None:
        for old in _generations(self.storage.names()):
            if old < gen:
                self.storage.delete(_gen_name(old, "json"))
                self.storage.delete(_gen_name(old, "beat"))
