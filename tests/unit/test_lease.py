"""The checkpoint lease's rules, on an in-memory folder and a simulated clock: one owner at a
time; a released lease, or an owner gone from this host, is taken at once; a live owner (one
whose heartbeat moves) is refused; a silent one is taken over after the timeout; an owner taken
over finds out and writes nothing further. With process identities (boot, pid namespace, start
time, container): only an owner this process can verify as gone is taken at once; two
containers on one host, both pid 1, are told apart."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from trending.errors import UserError
from trending.lease import (
    CheckpointLease,
    Identity,
    LeaseHeld,
    LeaseLost,
    container_id,
    process_started,
)

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
    folder: Folder,
    clock: Clock,
    host: str,
    pid: int,
    alive: set[int] | None = None,
    identity: Identity | None = None,
    started: dict[int, int] | None = None,
) -> CheckpointLease:
    """A process's lease; ``alive`` and ``started`` (pid -> start ticks) are the pids its own pid
    namespace shows; without ``identity`` it is known by host and pid only."""
    living = {7, 8, 9} if alive is None else alive
    return CheckpointLease(
        folder,
        TIMEOUT,
        host=host,
        pid=pid,
        clock=clock,
        sleep=clock.sleep,
        alive=lambda candidate: candidate in living,
        started=(started or {}).get,
        identity=identity,
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


# -- process identities ------------------------------------------------------------------------

BOOT = "4f9d3c1e-0000-4000-8000-000000000001"
C1, C2 = "a" * 64, "b" * 64


def in_container(container: str | None, pid_ns: str, started: int = 500) -> Identity:
    return Identity(boot_id=BOOT, pid_ns=pid_ns, started=started, container=container)


def beating(owner: CheckpointLease, clock: Clock) -> Callable[[], None]:
    """What the live ``owner`` does while a starter sleeps: beat every timeout / 6."""
    next_beat = [clock.now + TIMEOUT / 6]

    def beat() -> None:
        if clock.now >= next_beat[0]:
            owner.renew()
            next_beat[0] += TIMEOUT / 6

    return beat


def test_two_containers_on_one_host_both_pid_1_are_told_apart() -> None:
    """Host networking: both containers have the host's name, and each runs its job as pid 1 of
    its own pid namespace. The second sees pid 1 alive in its namespace (itself): no proof."""
    folder, clock = Folder(), Clock()
    first = lease(folder, clock, "node", 1, {1}, in_container(C1, "pid:[4026532001]"))
    first.acquire()
    assert holder_of(folder, 1)["container"] == C1
    clock.during_sleep = beating(first, clock)
    second = lease(folder, clock, "node", 1, {1}, in_container(C2, "pid:[4026532002]"))
    with pytest.raises(LeaseHeld, match=r"in use by pid 1 in container aaaaaaaaaaaa on host node"):
        second.acquire()
    assert clock.slept >= TIMEOUT / 6  # waited for a heartbeat instead of taking it at once
    first.check()


def test_a_silent_owner_in_another_container_is_taken_over_only_after_the_timeout() -> None:
    folder, clock = Folder(), Clock()
    lease(folder, clock, "node", 1, {1}, in_container(C1, "pid:[4026532001]")).acquire()
    second = lease(folder, clock, "node", 1, {1}, in_container(C2, "pid:[4026532002]"))
    second.acquire()
    assert second.gen == 2 and TIMEOUT <= clock.slept <= TIMEOUT + TIMEOUT / 12


def test_a_restarted_container_takes_over_its_earlier_run_at_once() -> None:
    """A container restarted (compose's restart: on-failure) keeps its id and gets a new pid
    namespace: the pid 1 of the old one is gone with it."""
    folder, clock = Folder(), Clock()
    lease(folder, clock, "node", 1, {1}, in_container(C1, "pid:[4026532001]")).acquire()
    restarted = lease(folder, clock, "node", 1, {1}, in_container(C1, "pid:[4026532009]", 900))
    restarted.acquire()
    assert restarted.gen == 2 and clock.slept == 0


@pytest.mark.parametrize(
    ("pid", "now_started", "at_once"),
    [
        (1, {1: 900}, True),  # its pid is this process's: an earlier life of it
        (5, {}, True),  # no such process any more
        (9, {9: 777}, True),  # pid 9 now names a process started at another time
        (9, {9: 500}, False),  # the same process (stopped, say): its heartbeat decides
        (9, {}, False),  # alive, start time unknown
    ],
)
def test_an_owner_in_this_pid_namespace_is_gone_at_once_only_when_verified(
    pid: int, now_started: dict[int, int], at_once: bool
) -> None:
    folder, clock = Folder(), Clock()
    namespace = "pid:[4026531836]"
    lease(folder, clock, "node", pid, {1, 9}, in_container(None, namespace, 500)).acquire()
    starter = lease(
        folder, clock, "node", 1, {1, 9}, in_container(None, namespace, 900), now_started
    )
    starter.acquire()
    assert starter.gen == 2
    assert clock.slept == 0 if at_once else clock.slept >= TIMEOUT


@pytest.mark.parametrize("boot", ["4f9d3c1e-0000-4000-8000-000000000002", None])
def test_an_owner_of_another_boot_or_machine_waits_for_the_timeout(boot: str | None) -> None:
    """Another boot id: a reboot, or another machine of the same name (its pids say nothing
    here); none: a lease file without identity."""
    folder, clock = Folder(), Clock()
    theirs = Identity(boot_id=boot, pid_ns="pid:[4026531836]", started=500)
    lease(folder, clock, "node", 5, alive=set(), identity=theirs).acquire()
    starter = lease(folder, clock, "node", 7, {7}, in_container(None, "pid:[4026531836]"))
    starter.acquire()
    assert starter.gen == 2 and clock.slept >= TIMEOUT


def test_lease_files_keep_the_fields_older_releases_read_and_older_files_are_read() -> None:
    folder, clock = Folder(), Clock()
    older = {"owner": "x", "host": "node", "pid": 5, "since": "2026-01-01T00:00:00+00:00"}
    folder.files["0000000001.json"] = json.dumps(older)
    starter = lease(folder, clock, "node", 7, {7}, in_container(C1, "pid:[4026532001]"))
    starter.acquire()  # pid 5 is gone, but from which namespace? its heartbeat decides
    assert starter.gen == 2 and clock.slept >= TIMEOUT
    written = holder_of(folder, 2)
    assert {k: type(v) for k, v in written.items() if k in older} == {
        "owner": str, "host": str, "pid": int, "since": str
    }  # fmt: skip
    assert (written["boot_id"], written["pid_ns"], written["started"]) == (
        BOOT, "pid:[4026532001]", 500
    )  # fmt: skip


def test_this_process_s_identity_comes_from_proc() -> None:
    me = Identity.current()
    assert me.boot_id and me.pid_ns and me.pid_ns.startswith("pid:[")
    assert me.started == process_started(os.getpid())
    child = subprocess.Popen(["sleep", "5"])
    try:
        child_started = process_started(child.pid)
        assert me.started is not None and child_started is not None
        assert child_started >= me.started
    finally:
        child.kill()
        child.wait()
    assert process_started(child.pid) is None  # reaped: no such process
    lease_of_me = CheckpointLease(Folder(), TIMEOUT)
    assert lease_of_me.me.identity.boot_id == me.boot_id and lease_of_me.me.pid == os.getpid()


DOCKER_ID, PODMAN_ID, SANDBOX_ID = "0123456789abcdef" * 4, "fedcba9876543210" * 4, "c" * 64


@pytest.mark.parametrize(
    ("mountinfo", "cgroup", "expected"),
    [
        (
            f"612 590 254:1 /var/lib/docker/containers/{DOCKER_ID}/hostname /etc/hostname rw - "
            "ext4 /dev/vda1 rw",
            "0::/",
            DOCKER_ID,
        ),
        (
            f"700 690 0:50 /containers/{DOCKER_ID}/resolv.conf /etc/resolv.conf rw - ext4 "
            "/dev/sdb rw",
            "",
            DOCKER_ID,
        ),  # /var/lib/docker on a file system of its own
        (
            f"51 40 0:44 /var/lib/containers/storage/overlay-containers/{PODMAN_ID}/userdata/"
            "hostname /etc/hostname rw - tmpfs tmpfs rw",
            "0::/",
            PODMAN_ID,
        ),
        ("", f"12:pids:/docker/{DOCKER_ID}\n11:memory:/docker/{DOCKER_ID}", DOCKER_ID),
        ("", f"0::/system.slice/docker-{DOCKER_ID}.scope", DOCKER_ID),
        # a Kubernetes pod's sandbox is shared by its containers: not a container's id
        (
            f"80 70 0:45 /var/lib/containerd/io.containerd.grpc.v1.cri/sandboxes/{SANDBOX_ID}/"
            "hostname /etc/hostname rw - ext4 /dev/vda1 rw",
            "0::/",
            None,
        ),
        ("22 1 8:1 / / rw - ext4 /dev/sda1 rw", "0::/user.slice/user-1000.slice", None),
    ],
)
def test_the_container_id_comes_from_the_engine_s_mounts_or_the_cgroup(
    mountinfo: str, cgroup: str, expected: str | None
) -> None:
    assert container_id(mountinfo, cgroup) == expected


# -- real processes, each in its own pid namespace where it can have one -----------------------

ROOT = Path(__file__).resolve().parents[2]
# a pid namespace of its own, as a container has, with its own /proc; the child goes with it
OWN_PID_NAMESPACE = ["unshare", "--pid", "--fork", "--mount-proc", "--kill-child"]
REAL_TIMEOUT = "2"


def lease_process(role: str, folder: Path, own_namespace: bool) -> list[str]:
    module = [sys.executable, "-m", "tests.support.lease_folder", role, str(folder), REAL_TIMEOUT]
    return [*OWN_PID_NAMESPACE, *module] if own_namespace else module


def run(command: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)


def own_pid_namespaces() -> bool:
    """Whether this process may make pid namespaces (root, or unprivileged user namespaces)."""
    try:
        done = subprocess.run([*OWN_PID_NAMESPACE, "true"], capture_output=True, check=False)
    except OSError:
        return False
    return done.returncode == 0


@pytest.mark.parametrize("own_namespace", [False, True], ids=["one-namespace", "containers"])
def test_real_processes_take_a_dead_owner_s_lease_at_once_only_when_they_can_tell(
    tmp_path: Path, own_namespace: bool
) -> None:
    """Same pid namespace: a live owner is refused, a killed one taken at once. One pid
    namespace each (two containers, both pid 1, same host name): a live owner is refused too,
    and a killed one is taken once its heartbeat has been silent for the timeout."""
    if own_namespace and not own_pid_namespaces():
        pytest.skip("no pid namespaces here (unshare needs root or user namespaces)")
    holder = subprocess.Popen(
        lease_process("hold", tmp_path, own_namespace), cwd=ROOT, stdout=subprocess.PIPE,
        text=True, start_new_session=True,
    )  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        take = lease_process("take", tmp_path, own_namespace)
        refused = run(take)
        owner_pid = 1 if own_namespace else holder.pid
        assert refused.returncode == 3, refused.stdout + refused.stderr
        assert f"in use by pid {owner_pid} on host" in refused.stdout
    finally:
        os.killpg(holder.pid, signal.SIGKILL)
        holder.wait()
    started = time.monotonic()
    taken = run(take)
    assert taken.returncode == 0 and taken.stdout.strip() == "taken", taken.stderr
    waited = "no heartbeat from pid" in taken.stderr
    assert waited == own_namespace, taken.stderr
    assert (time.monotonic() - started >= float(REAL_TIMEOUT)) == own_namespace
