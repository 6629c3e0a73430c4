"""A checkpoint lease in a local folder, taken by real processes.

``python -m tests.support.lease_folder hold DIR TIMEOUT`` takes the lease, prints ``held`` and
beats until killed; ``... take DIR TIMEOUT`` tries to take it and prints ``taken`` (exit 0) or
``refused: <message>`` (exit 3).
"""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path

from trending.lease import CheckpointLease, LeaseHeld


class FileFolder:
    """:class:`trending.lease.LeaseStorage` on a local folder."""

    def __init__(self, folder: str) -> None:
        self.path = Path(folder)
        self.location = folder

    def read(self, name: str) -> str | None:
        try:
            return (self.path / name).read_text()
        except FileNotFoundError:
            return None

    def create(self, name: str, text: str) -> bool:
        try:
            fd = os.open(self.path / name, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
        except FileExistsError:
            return False
        with os.fdopen(fd, "w") as file:
            file.write(text)
        return True

    def write(self, name: str, text: str) -> None:
        spare = self.path / f".{name}.{os.getpid()}"
        spare.write_text(text)
        spare.replace(self.path / name)

    def names(self) -> list[str]:
        return sorted(p.name for p in self.path.iterdir() if not p.name.startswith("."))

    def delete(self, name: str) -> None:
        (self.path / name).unlink(missing_ok=True)


def main(role: str, folder: str, timeout_s: str) -> int:
    lease = CheckpointLease(FileFolder(folder), float(timeout_s))
    try:
        lease.acquire()
    except LeaseHeld as refused:
        print(f"refused: {refused}", flush=True)
        return 3
    if role == "take":
        print("taken", flush=True)
        return 0
    lease.start_heartbeat(lambda lost: None)
    print("held", flush=True)
    threading.Event().wait()
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
