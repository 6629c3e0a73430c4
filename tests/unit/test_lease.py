"""The checkpoint lease's rules, on an in-memory folder and a simulated clock: one owner at a
time; a released lease, or an owner gone from this host, is taken at once; a live owner (one
whose heartbeat moves) is refused; a silent one is taken over after the timeout; an owner taken
over finds out and writes nothing further."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable

import pytest

from trending.errors import UserError
from trending.lease import CheckpointLease, LeaseHeld, LeaseLost

TIMEOUT = 30.0


class Folder:
    """An in-memory lease folder; ``before_create`` runs before each create (a racing peer)."""

    location = "mem://checkpoint"

    def __init__(self) -> None:
        self.files: dict[str, str] = {}
        self.before_create: Callable[[str], None] | None = None
        self.failing = False

    def read(self, name: str) -> str | None:
        return self.files.get(name)

    def create(self, name: str, text: str) -> bool:
        if self.before_create is not None:
            self.before_create(name)
        if name in self.files:
            return False
        self.files[name] = text
        return True

    def write(self, name: str, text: str) -> None:
        if self.failing:
            raise OSError("storage unavailable")
        self.files[name] = text

    def names(self) -> list[str]:
        return sorted(self.files)

    def delete(self, name: str) -> None:
        self.files.pop(name, None)


class Clock:
    """Simulated time: ``sleep`` advances it and runs ``during_sleep`` (what others do)."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.slept = 0.0
        self.during_sleep: Callable[[], None] | None = None

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds
        self.slept += seconds
        if self.during_sleep is not None:
            self.during_sleep()


def lease(
    folder: Folder, clock: Clock, host: str, pid: int, alive: set[int] | None = None
) -> CheckpointLease:
    living = {7, 8, 9} if alive is None else alive
    return CheckpointLease(
        folder,
        TIMEOUT,
        host=host,
        pid=pid,
        clock=clock,
        sleep=clock.sleep,
        alive=lambda candidate: candidate in living,
    )


def holder_of(folder: Folder, gen: int) -> dict[str, object]:
    return dict(json.loads(folder.files[f"{gen:010d}.json"]))


def test_a_new_checkpoint_is_taken_at_once_and_names_its_owner() -> None:
    folder, clock = Folder(), Clock()
    first = lease(folder, clock, "host-a", 7)
    first.acquire()
    assert first.gen == 1
    assert (holder_of(folder, 1)["host"], holder_of(folder, 1)["pid"]) == ("host-a", 7)
    assert folder.files["0000000001.beat"] == "1"
    assert clock.slept == 0


def test_a_released_lease_is_taken_at_once() -> None:
    folder, clock = Folder(), Clock()
    first = lease(folder, clock, "host-a", 7)
    first.acquire()
    first.release()
    assert "released" in holder_of(folder, 2)
    second = lease(folder, clock, "host-b", 8)
    second.acquire()
    assert second.gen == 3 and clock.slept == 0
    assert holder_of(folder, 3)["host"] == "host-b"


def test_an_owner_gone_from_this_host_is_taken_over_at_once() -> None:
    folder, clock = Folder(), Clock()
    lease(folder, clock, "host-a", 5).acquire()  # pid 5 is not alive: killed
    second = lease(folder, clock, "host-a", 7)
    second.acquire()
    assert second.gen == 2 and clock.slept == 0


def test_a_previous_owner_with_this_process_id_is_a_former_life_of_this_process() -> None:
    folder, clock = Folder(), Clock()
    lease(folder, clock, "container", 1, alive={1}).acquire()
    restarted = lease(folder, clock, "container", 1, alive={1})  # pid 1 again, restarted
    restarted.acquire()
    assert restarted.gen == 2 and clock.slept == 0


@pytest.mark.parametrize("host", ["host-a", "host-b"])
def test_a_live_owner_is_refused_once_its_heartbeat_moves(host: str) -> None:
    folder, clock = Folder(), Clock()
    owner = lease(folder, clock, "host-a", 7)
    owner.acquire()
    beat_every = TIMEOUT / 6
    next_beat = [clock.now + beat_every]

    def owner_beats() -> None:
        if clock.now >= next_beat[0]:
            owner.renew()
            next_beat[0] += beat_every

    clock.during_sleep = owner_beats
    with pytest.raises(LeaseHeld, match=r"in use by pid 7 on host host-a .*alive"):
        lease(folder, clock, host, 8).acquire()
    # refused at the first beat seen: not before the owner beats, at most one poll after
    assert beat_every <= clock.slept <= beat_every + TIMEOUT / 12
    assert sorted(folder.files) == ["0000000001.beat", "0000000001.json"]
    owner.check()  # the owner still holds it


def test_a_silent_owner_elsewhere_is_taken_over_after_the_timeout_and_stops() -> None:
    folder, clock = Folder(), Clock()
    stalled = lease(folder, clock, "host-a", 7)
    stalled.acquire()
    taker = lease(folder, clock, "host-b", 8)
    taker.acquire()
    assert taker.gen == 2
    assert TIMEOUT <= clock.slept <= TIMEOUT + TIMEOUT / 12
    with pytest.raises(LeaseLost, match=r"taken over .*pid 8 on host host-b"):
        stalled.check()
    with pytest.raises(LeaseLost):
        stalled.renew()
    files_before = dict(folder.files)
    stalled.release()  # a fenced owner writes nothing, not even a release
    assert folder.files == files_before
    taker.check()


def test_a_silent_owner_on_this_host_whose_pid_lives_on_is_taken_over_after_the_timeout() -> None:
    folder, clock = Folder(), Clock()
    lease(folder, clock, "host-a", 9).acquire()  # pid 9 exists (stopped, or reused)
    taker = lease(folder, clock, "host-a", 8)
    taker.acquire()
    assert taker.gen == 2 and TIMEOUT <= clock.slept <= TIMEOUT + TIMEOUT / 12


def test_of_two_processes_racing_for_one_generation_exactly_one_gets_it() -> None:
    folder, clock = Folder(), Clock()
    rival = lease(folder, clock, "host-r", 9)
    racing = lease(folder, clock, "host-a", 7)

    def rival_first(name: str) -> None:
        folder.before_create = None
        rival.acquire()  # the rival creates the same generation just before us

    folder.before_create = rival_first
    clock.during_sleep = rival.renew  # and keeps beating
    with pytest.raises(LeaseHeld, match="pid 9 on host host-r"):
        racing.acquire()
    assert rival.gen == 1 and racing.gen == 0
    rival.check()


def test_only_the_newest_generations_are_kept() -> None:
    folder, clock = Folder(), Clock()
    for pid in range(20, 26):  # each one killed (not alive) and taken over on this host
        lease(folder, clock, "host-a", pid, alive=set()).acquire()
    assert sorted(folder.files) == [
        "0000000005.beat",
        "0000000005.json",
        "0000000006.beat",
        "0000000006.json",
    ]


def reporter(lost: list[LeaseLost], reported: threading.Event) -> Callable[[LeaseLost], None]:
    """An ``on_lost`` callback keeping the error and setting ``reported``."""

    def on_lost(error: LeaseLost) -> None:
        lost.append(error)
        reported.set()

    return on_lost


def test_the_heartbeat_thread_beats_and_reports_a_takeover() -> None:
    folder = Folder()
    owner = CheckpointLease(folder, 0.3, host="host-a", pid=7)
    owner.acquire()
    lost: list[LeaseLost] = []
    reported = threading.Event()
    owner.start_heartbeat(reporter(lost, reported))
    time.sleep(0.3)
    assert int(folder.files["0000000001.beat"]) >= 3  # about one beat per 0.05 s
    folder.files["0000000002.json"] = json.dumps(
        {"owner": "x", "host": "host-b", "pid": 8, "since": "now"}
    )
    assert reported.wait(2), "the heartbeat did not notice the takeover"
    assert "taken over" in str(lost[0])
    with pytest.raises(LeaseLost):
        owner.check()
    owner.release()
    assert "0000000003.json" not in folder.files


def test_a_heartbeat_that_cannot_be_written_for_the_timeout_stops_the_owner() -> None:
    folder = Folder()
    owner = CheckpointLease(folder, 0.3, host="host-a", pid=7)
    owner.acquire()
    reported = threading.Event()
    lost: list[LeaseLost] = []
    folder.failing = True
    started = time.monotonic()
    owner.start_heartbeat(reporter(lost, reported))
    assert reported.wait(3)
    assert time.monotonic() - started >= 0.3
    assert "could not be renewed" in str(lost[0]) and "storage unavailable" in str(lost[0])
    owner.release()


def test_a_released_lease_stops_beating() -> None:
    folder = Folder()
    owner = CheckpointLease(folder, 0.3, host="host-a", pid=7)
    owner.acquire()
    owner.start_heartbeat(lambda error: None)
    owner.release()
    beats = folder.files.get("0000000001.beat")
    time.sleep(0.15)
    assert folder.files.get("0000000001.beat") == beats is None  # deleted on release
    assert "released" in holder_of(folder, 2)


def test_a_timeout_must_be_positive() -> None:
    with pytest.raises(UserError, match="--lease-timeout must be positive"):
        CheckpointLease(Folder(), 0)
