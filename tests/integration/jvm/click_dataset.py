"""The Streams test's input, fixed and deterministic, and what `odradek.jvm.streams.ClickStreams`
must make of it: computed here independently of Kafka Streams, so that its output can be
compared exactly."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

WINDOW_MS = 10_000  # ClickStreams.WINDOW: tumbling, aligned to the epoch as Streams' windows
USERS = [f"u{n:02d}" for n in range(12)]
REGIONS = ["north", "south", "east"]
FIRST_REGIONS = {user: REGIONS[n % len(REGIONS)] for n, user in enumerate(USERS)}
MOVES = {"u01": "east", "u05": "north"}  # written mid-run; no region is left empty


@dataclass(frozen=True)
class Click:
    click_id: str
    user: str
    amount: int
    timestamp: int

    @property
    def value(self) -> str:
        return f"{self.user}:{self.amount}"


def clicks(count: int, base_ms: int) -> list[Click]:
    """`count` clicks, one every 37 ms of event time from `base_ms`."""
    return [Click(f"c{i:05d}", USERS[(i * 7) % len(USERS)], (i * 37) % 97 + 1,
                  base_ms + i * 37)
            for i in range(count)]


@dataclass(frozen=True)
class Expected:
    clicks_by_user: Counter[tuple[str, str]]  # (user, click id): each exactly once
    window_sums: dict[str, str]  # user@windowStart -> sum of amounts
    user_regions: dict[str, str]  # user -> region:total
    region_totals: dict[str, str]  # region -> sum of its users' totals


def expected(all_clicks: list[Click], regions: dict[str, str]) -> Expected:
    """The final value of every output key once every click and the users' `regions` (their
    last region each) are processed."""
    windows: Counter[str] = Counter()
    totals: Counter[str] = Counter()
    for click in all_clicks:
        start = click.timestamp - click.timestamp % WINDOW_MS
        windows[f"{click.user}@{start}"] += click.amount
        totals[click.user] += click.amount
    by_region: Counter[str] = Counter()
    for user, total in totals.items():
        by_region[regions[user]] += total
    return Expected(
        clicks_by_user=Counter((click.user, click.click_id) for click in all_clicks),
        window_sums={key: str(value) for key, value in windows.items()},
        user_regions={user: f"{regions[user]}:{total}" for user, total in totals.items()},
        region_totals={region: str(total) for region, total in by_region.items()},
    )
