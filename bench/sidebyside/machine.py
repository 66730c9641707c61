"""What the machine and a process tree used, read from /proc (Linux): CPU seconds, resident
memory, and the CPU everything else on the machine used (the busy warning)."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

TICK = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")


def _stat_fields(pid: int) -> list[str]:
    text = Path(f"/proc/{pid}/stat").read_text()
    return text[text.rindex(")") + 2:].split()  # after "pid (comm) "


def group(pgid: int) -> list[int]:
    """The live processes of a process group (a template's shell and what it started)."""
    members = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                fields = _stat_fields(int(entry.name))
            except OSError:
                continue
            if int(fields[2]) == pgid and fields[0] != "Z":
                members.append(int(entry.name))
    return members


def mentioning(text: str) -> list[int]:
    """Processes whose command line contains `text` (a cluster's nodes, which run detached,
    by their data directory)."""
    found = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                if text.encode() in Path(entry.path, "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def usage(pids: Iterable[int]) -> tuple[float, int]:
    """(CPU seconds, RSS bytes) of these processes; CPU includes reaped children's."""
    cpu, rss = 0.0, 0
    for pid in pids:
        try:
            fields = _stat_fields(pid)
        except OSError:
            continue
        cpu += sum(int(v) for v in fields[11:15]) / TICK  # utime stime cutime cstime
        rss += int(fields[21]) * PAGE
    return cpu, rss


def machine_busy_s() -> float:
    """CPU seconds every process on the machine has used since boot (/proc/stat)."""
    with open("/proc/stat") as stat:
        values = [int(v) for v in stat.readline().split()[1:9]]
    return (sum(values) - values[3] - values[4]) / TICK  # all but idle and iowait


def loadavg() -> float:
    return os.getloadavg()[0]


@dataclass
class Usage:
    cpu_s: float = 0.0
    peak_rss: int = 0


class Sampler:
    """Samples the CPU and RSS of the processes `pids()` names every `interval` s on a
    thread: the CPU they used since it started and their peak RSS (a sum)."""

    def __init__(self, pids: Callable[[], Iterable[int]], interval: float = 0.1) -> None:
        self.pids = pids
        self.interval = interval
        self.usage = Usage()
        self._cpu0 = usage(pids())[0]
        self._last_cpu = self._cpu0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="tree-sampler", daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        cpu, rss = usage(self.pids())
        if rss:
            self._last_cpu = max(self._last_cpu, cpu)
            self.usage.peak_rss = max(self.usage.peak_rss, rss)
        self.usage.cpu_s = self._last_cpu - self._cpu0

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self._sample()

    def cpu_now(self) -> float:
        """CPU seconds used since `start`, read now."""
        self._sample()
        return self.usage.cpu_s

    def finish(self) -> Usage:
        self._stop.set()
        self._thread.join()
        self._sample()
        return self.usage
