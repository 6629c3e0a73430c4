"""One owner per checkpoint: a lease kept in generations on the checkpoint's own storage.

Files under ``<checkpoint>/lease/``::

    <gen>.json   who took the lease at generation gen = 1, 2, ... (owner id, host, pid, since),
                 or ``{"released": ...}`` when its owner let it go; the highest generation rules
    <gen>.beat   that owner's heartbeat counter, rewritten by that owner only

A generation is created exclusively (creation fails when the file exists), so of two processes
racing for one generation exactly one wins. A starting process takes the next generation when
the highest one is released, or names a process on this host that is gone, or shows no heartbeat
for ``timeout`` seconds of the starter's own clock (no clocks are compared across hosts);
otherwise it refuses to start. An owner that finds a generation above its own has been taken
over (it stalled longer than ``timeout``): it stops, and writes nothing further.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from typing import Protocol

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
class Holder:
    """Who holds a generation of the lease."""

    owner: str
    host: str
    pid: int
    since: str

    def describe(self) -> str:
        return f"pid {self.pid} on host {self.host} (owner since {self.since})"


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
    ) -> None:
        if timeout_s <= 0:
            raise UserError(f"--lease-timeout must be positive, got {timeout_s} s")
        self.storage = storage
        self.timeout_s = timeout_s
        self.me = Holder(
            owner=uuid.uuid4().hex,
            host=host or socket.gethostname(),
            pid=os.getpid() if pid is None else pid,
            since=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        )
        self.gen = 0  # the generation held; 0: none
        self._clock, self._sleep, self._alive = clock, sleep, alive
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
            if self.storage.create(_gen_name(gen + 1, "json"), json.dumps(asdict(self.me))):
                self.gen = gen + 1
                self._beat()
                self._forget_before(self.gen - KEPT_GENERATIONS + 1)
                return
        raise self._held_error(self._newest())

    def _gone(self, gen: int, holder: Holder) -> bool:
        """Whether the owner of ``gen`` is gone; :class:`LeaseHeld` when it is alive, False
        when a newer generation appeared meanwhile."""
        here = holder.host == self.me.host
        if here and (holder.pid == self.me.pid or not self._alive(holder.pid)):
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
            "once on its own host, and elsewhere after --lease-timeout without its heartbeat"
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
                fields = json.loads(text or "")
            except ValueError:
                self._sleep(0.2)
                continue
            if "released" in fields:
                return None
            return Holder(
                owner=str(fields["owner"]),
                host=str(fields["host"]),
                pid=int(fields["pid"]),
                since=str(fields["since"]),
            )
        return Holder(owner="?", host="?", pid=-1, since="?")

    def _describe_gen(self, gen: int) -> str:
        holder = self._holder(gen)
        return holder.describe() if holder else "released"

    def _forget_before(self, gen: int) -> None:
        for old in _generations(self.storage.names()):
            if old < gen:
                self.storage.delete(_gen_name(old, "json"))
                self.storage.delete(_gen_name(old, "beat"))
