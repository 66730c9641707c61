"""What a failed test shows of a process's log: its last warnings and errors (what went
wrong may be long before the end) and the end of the log."""

from __future__ import annotations

LOG_TAIL = 3000
LOG_ALARMS = 40


def digest(name: str, text: str) -> str:
    """The last LOG_ALARMS warning and error lines of `text` and its last LOG_TAIL characters."""
    alarms = [line for line in text.splitlines()
              if " WARNING " in line or " ERROR " in line][-LOG_ALARMS:]
    return (f"--- {name}: last {len(alarms)} warnings and errors\n"
            + "".join(f"{line}\n" for line in alarms)
            + f"--- {name} (last {LOG_TAIL} chars)\n{text[-LOG_TAIL:]}")
