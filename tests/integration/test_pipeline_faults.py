"""The whole mirroring pipeline under faults: two real clusters, east and west (a controller
and two brokers each, every topic on both brokers), `odradek mirror` east->west in two
processes sharing the flow, and `odradek audit`.

Records go to east, into every partition of four topics and across four event-time buckets,
while the faults happen: plain ones, transactions of which every other one is aborted,
batches of every codec, and updates of a few keys in a compacted topic. One mirror process
is killed with -9 three times and restarted; the other (the zombie) is paused with SIGSTOP
past its group session, until the first has taken its partitions over and copied into each
of them, then resumed; one broker of each cluster is killed and restarted. Then:

- west holds every committed east record exactly once, in order in each partition, and the
  compressed topic's batches keep their four codecs;
- the zombie wrote nothing after it resumed: it started no copy of its own before the group
  gave it partitions again, and along each target partition's log (`odradek dump-log`) the
  mirror's producer epoch never goes back, so no batch of a fenced epoch landed after its
  successor's;
- `odradek audit` reports every bucket complete and exits 0;
- after DeleteRecords on west and records added to one bucket there, it names exactly those
  buckets (missing, extra) and exits 1.
"""

from __future__ import annotations

import json
import re
import subprocess
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from confluent_kafka import Producer, TopicPartition
from confluent_kafka.admin import NewTopic

from tests.integration.broker_process import ODRADEK
from tests.integration.clients import (
    Headers,
    Out,
    TransactionalWriter,
    deliver,
    now_ms,
    produce_confluent,
    read_confluent,
)
from tests.integration.cluster import Cluster, admin, partitions
from tests.integration.mirror_process import MirrorProcess, properties
from tests.waiting import wait_until

pytestmark = [pytest.mark.integration, pytest.mark.mirror, pytest.mark.spark,
              pytest.mark.timeout(1800)]

TOPICS = {"plain": 3, "txn": 2, "compressed": 2, "compacted": 2}
"""Source topics and their partitions."""
TARGETS = {f"east.{topic}": count for topic, count in TOPICS.items()}
BUCKET_MS = 600_000
BUCKETS = 4
CODECS = ("gzip", "snappy", "lz4", "zstd")
COMPACTED_KEYS = 24
FEED_PACE_S = 0.2
"""Between two rounds of the feed: a rate, so that the run holds a few thousand records."""
SLOW = 120.0
"""Seconds for anything that waits on a failover or a rebalance on a loaded machine."""
SETTLE = 300.0
"""Seconds for west to catch up at the end: a copier whose InitProducerId waits for the
abort of a dead owner's transaction (CONCURRENT_TRANSACTIONS) retried for over 120 s on a
loaded machine; the wait ends as soon as west has caught up."""
OVERRIDES = {
    "broker.session.timeout.ms": "4000",  # a killed broker's partitions move within seconds
    "min.insync.replicas": "1",  # acks=all goes on with one of the two replicas down
    "transaction.state.log.min.isr": "1",
    "group.min.session.timeout.ms": "1000",  # the mirror's group session below
    "group.initial.rebalance.delay.ms": "0",
}
MIRROR = {
    "east->west.enabled": "true", "east->west.topics": ", ".join(TOPICS),
    **dict.fromkeys(("replication.factor", "heartbeats.topic.replication.factor",
                     "checkpoints.topic.replication.factor",
                     "offset-syncs.topic.replication.factor",
                     "offset.storage.replication.factor"), "2"),
    # the group that shares the flow's partitions: a process gone for 4 s loses them
    "west.consumer.session.timeout.ms": "4000", "west.consumer.heartbeat.interval.ms": "1000",
}
SESSION = re.compile(r"odradek\.mirror\.copier: (\S+)-(\d+): copying from upstream offset \d+ "
                     r"\(producer (\d+) epoch (\d+)\)")
ASSIGNED = re.compile(r"odradek\.mirror\.replicator: east->west: copying (.*)")
FENCED = "fenced by a newer owner"


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Cluster, Cluster]]:
    """East and west, started side by side."""
    root = tmp_path_factory.mktemp("pipeline")
    clusters = (Cluster(root / "east", 1, 2, OVERRIDES), Cluster(root / "west", 1, 2, OVERRIDES))
    try:
        with ThreadPoolExecutor(2) as pool:
            for started in [pool.submit(cluster.up) for cluster in clusters]:
                started.result()
        yield clusters
    finally:
        for cluster in clusters:
            cluster.down()


@pytest.fixture(scope="module")
def east(pair: tuple[Cluster, Cluster]) -> Cluster:
    return pair[0]


@pytest.fixture(scope="module")
def west(pair: tuple[Cluster, Cluster]) -> Cluster:
    return pair[1]


class Feed(threading.Thread):
    """Rounds of records to every partition of every topic, each round spread over the
    buckets, until `stopping` is set: plain records, a committed and an aborted
    transaction, a batch of each codec, and updates of COMPACTED_KEYS keys. The idempotent
    producers ride out a broker kill; a transaction one fails is aborted and counted."""

    def __init__(self, bootstrap: str, start_ms: int) -> None:
        super().__init__(daemon=True)
        self.bootstrap = bootstrap
        self.start_ms = start_ms
        self.stopping = threading.Event()
        self.rounds = 0
        self.aborted = 0
        self.recoveries = 0
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            config = {"bootstrap.servers": self.bootstrap, "enable.idempotence": True,
                      "linger.ms": 5}
            plain = Producer(config)
            codecs = {codec: Producer({**config, "compression.type": codec})
                      for codec in CODECS}
            transactions = TransactionalWriter(self.bootstrap, "pipeline-feed", SLOW,
                                               **{"linger.ms": 5})
            while not self.stopping.is_set():
                self._round(plain, codecs, transactions)
                self.rounds += 1
                self.stopping.wait(FEED_PACE_S)
            self.recoveries = transactions.recoveries
        except BaseException as error:  # noqa: BLE001 - reported by the test
            self.error = error

    def _round(self, plain: Producer, codecs: dict[str, Producer],
               transactions: TransactionalWriter) -> None:
        deliver(plain, "plain", self._outs("plain", 12), SLOW)
        deliver(plain, "compacted", self._outs("compacted", 8, keys=COMPACTED_KEYS), SLOW)
        for codec, producer in codecs.items():
            deliver(producer, "compressed", self._outs(codec, 8, padding=200), SLOW)
        for tag, commit in (("paid", True), ("void", False)):
            committed = transactions.write_recovering("txn", self._outs(tag, 8), commit)
            self.aborted += not committed

    def _outs(self, tag: str, count: int, padding: int = 0, keys: int = 0) -> list[Out]:
        """`count` records of this round, in turn in each bucket and each partition."""
        topic = {"paid": "txn", "void": "txn", **dict.fromkeys(CODECS, "compressed")}.get(
            tag, tag)
        outs = []
        for i in range(count):
            n = self.rounds * count + i
            bucket = (self.rounds + i) % BUCKETS
            key = b"%s-%d" % (tag.encode(), n % keys if keys else n)
            outs.append(Out(key, b"%s-%d;" % (tag.encode(), n) + b"x" * padding,
                            self.start_ms + bucket * BUCKET_MS + n % BUCKET_MS,
                            (("tag", tag.encode()),), i % TOPICS[topic]))
        return outs


EVERY = {(topic, p) for topic, count in TARGETS.items() for p in range(count)}
"""The target partitions (the mirror also copies east's heartbeats, as MM2 does)."""


def shared(first: MirrorProcess, second: MirrorProcess) -> bool:
    """Both processes copy, and every target partition has exactly one of them."""
    mine, theirs = first.owned(), second.owned()
    return bool(mine) and bool(theirs) and not mine & theirs and mine | theirs >= EVERY


def ownership(*mirrors: MirrorProcess) -> str:
    """What each process copies, and the end of its log."""
    return "\n".join(f"{sorted(mirror.owned())}\n{mirror.logs()[-2000:]}" for mirror in mirrors)


def took_over(survivor: MirrorProcess, partitions: set[tuple[str, int]]) -> bool:
    """`survivor` copies every partition and has copied records into each of `partitions`
    (so a newer producer epoch than the zombie's wrote there)."""
    copied = {(labels["topic"], int(labels["partition"])): value
              for labels, value in ((dict(key), value) for key, value in
                                    survivor.samples(
                                        "kafka_connect_mirror_mirrorsourceconnector_"
                                        "record_count").items())}
    return set(copied) >= EVERY | partitions and all(copied[p] > 0 for p in partitions)


def sessions(log: str) -> dict[tuple[str, int], tuple[int, int]]:
    """The (producer id, epoch) of the last copy session of each target partition."""
    return {(f"east.{m[1]}", int(m[2])): (int(m[3]), int(m[4])) for m in SESSION.finditer(log)}


def unowned_sessions(log: str) -> list[str]:
    """Copy sessions a process started for partitions the group had not given it (since
    the start of `log`): a zombie's copiers writing on."""
    owned: set[str] = set()
    found = []
    for line in log.splitlines():
        assigned = ASSIGNED.search(line)
        if assigned is not None:
            owned = set(assigned[1].split(", "))
        session = SESSION.search(line)
        if session is not None and f"{session[1]}-{session[2]}" not in owned:
            found.append(line)
    return found


def restart(mirror: MirrorProcess) -> None:
    """kill -9, start again, and wait until the new process copies."""
    mirror.kill()
    mirror.start()
    wait_until(lambda: mirror.copied() > 0, SLOW,
               lambda: f"the restarted mirror copying\n{mirror.logs()[-3000:]}",
               ignoring=OSError)


class Row(NamedTuple):
    key: bytes | None
    value: bytes | None
    timestamp: int
    headers: Headers


def committed(bootstrap: str, prefix: str = "") -> dict[tuple[str, int], list[Row]]:
    """Every committed record, in order, of each partition of the topics named `prefix` +
    source topic, by source topic and partition."""
    found: dict[tuple[str, int], list[Row]] = {
        (topic, p): [] for topic, count in TOPICS.items() for p in range(count)}
    for topic, count in TOPICS.items():
        for record in read_confluent(bootstrap, prefix + topic, range(count)):
            found[(topic, record.partition)].append(
                Row(record.key, record.value, record.timestamp, record.headers))
    return found


def caught_up(source: dict[tuple[str, int], list[Row]],
              target: dict[tuple[str, int], list[Row]]) -> bool:
    """West holds at least as many records as east in every partition."""
    return all(len(target[partition]) >= len(rows) for partition, rows in source.items())


def concurrently(pool: ThreadPoolExecutor, *calls: Callable[[], object]) -> None:
    """Run the calls side by side and wait for all; the first failure is raised."""
    for done in [pool.submit(call) for call in calls]:
        done.result()


def target_batches(west: Cluster) -> dict[tuple[str, int], list[dict[str, Any]]]:
    """Every batch of every target partition, in offset order, from the segment files of
    its leader (`odradek dump-log --json`)."""
    files: dict[str, tuple[str, int]] = {}
    for topic, count in TARGETS.items():
        leaders = partitions(west.bootstrap, topic)
        for p in range(count):
            directory = west.data_dir / f"broker-{leaders[p].leader}" / f"{topic}-{p}"
            files.update(dict.fromkeys(map(str, sorted(directory.glob("*.log"))), (topic, p)))
    dumped = subprocess.run([*ODRADEK, "dump-log", "--json", *files], capture_output=True,
                            text=True, timeout=SLOW, check=True).stdout
    batches: dict[tuple[str, int], list[dict[str, Any]]] = {p: [] for p in files.values()}
    current: tuple[str, int] | None = None
    for line in map(json.loads, dumped.splitlines()):
        if line["type"] == "file":
            current = files[line["file"]]
        elif line["type"] == "batch":
            assert current is not None
            batches[current].append(line)
    return {p: sorted(found, key=lambda b: b["baseOffset"]) for p, found in batches.items()}


def epochs_go_back(batches: list[dict[str, Any]]) -> list[tuple[int, int, int]]:
    """(offset, epoch, newest epoch before it) of each batch whose producer epoch is older
    than one written before it in the same log."""
    newest = -1
    back = []
    for batch in batches:
        if batch["producerEpoch"] < newest:
            back.append((batch["baseOffset"], batch["producerEpoch"], newest))
        newest = max(newest, batch["producerEpoch"])
    return back


def audit(east: Cluster, west: Cluster, start_ms: int, output: Path
          ) -> tuple[int, dict[str, Any], str]:
    """`odradek audit` over the buckets: exit status, summary.json, stdout."""
    done = subprocess.run(
        [*ODRADEK, "audit", "--source-bootstrap", east.bootstrap, "--target-bootstrap",
         west.bootstrap, "--source-alias", "east", "--topics", "|".join(TOPICS),
         "--from", str(start_ms), "--to", str(start_ms + BUCKETS * BUCKET_MS),
         "--bucket", "10m", "--grace", "5m", "--master", "local[2]",
         "--output", str(output)], capture_output=True, text=True, timeout=900)
    assert done.returncode in (0, 1), done.stderr[-3000:]
    return done.returncode, json.loads((output / "summary.json").read_text()), done.stdout


def statuses(summary: dict[str, Any]) -> dict[tuple[str, int], str]:
    return {(b["topic"], b["bucket_start_ms"]): b["status"] for b in summary["buckets"]}


def bucket_of(timestamp: int) -> int:
    return timestamp // BUCKET_MS * BUCKET_MS


def test_the_pipeline_under_faults(east: Cluster, west: Cluster, tmp_path: Path,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    start_ms = (now_ms() - 7_200_000) // BUCKET_MS * BUCKET_MS
    client = admin(east.bootstrap)
    created = client.create_topics([
        NewTopic(topic, count, 2, config={"cleanup.policy": "compact"}
                 if topic == "compacted" else {}) for topic, count in TOPICS.items()])
    for future in created.values():
        future.result(60)
    feed = Feed(east.bootstrap, start_ms)
    feed.start()
    config = properties({"east": east.bootstrap, "west": west.bootstrap}, **MIRROR)
    first, zombie = (MirrorProcess(tmp_path / name, config) for name in ("first", "zombie"))
    both = lambda: shared(first, zombie)  # noqa: E731
    kills = pauses = 0
    with ThreadPoolExecutor(2) as pool:
        try:
            concurrently(pool, first.start, zombie.start)
            wait_until(both, SLOW, lambda: f"both mirrors copying: {ownership(first, zombie)}",
                       ignoring=OSError)
            restart(first)
            kills += 1
            wait_until(both, SLOW, lambda: f"both mirrors copying again: "
                       f"{ownership(first, zombie)}", ignoring=OSError)

            owned = zombie.owned()
            zombie.pause()
            pauses += 1
            fenced = {p: epoch for p, epoch in sessions(zombie.logs()).items()
                      if p in owned & EVERY}
            concurrently(pool, *(lambda c=cluster: c.stop("broker-2", kill=True)
                                 for cluster in (east, west)))
            wait_until(lambda: took_over(first, owned), SLOW,
                       lambda: f"{owned} taken over\n{first.logs()[-3000:]}", ignoring=OSError)
            resumed_at = len(zombie.logs())
            zombie.resume()
            wait_until(both, SLOW, lambda: f"the zombie sharing again: "
                       f"{ownership(first, zombie)}", ignoring=OSError)

            restarting = [pool.submit(cluster.start, "broker-2") for cluster in (east, west)]
            restart(first)
            restart(first)
            kills += 2
            for restarted in restarting:
                restarted.result()
            feed.stopping.set()
            feed.join(SLOW)
            assert feed.error is None, feed.error
            source = committed(east.bootstrap)
            wait_until(lambda: caught_up(source, committed(west.bootstrap, "east.")), SETTLE,
                       lambda: f"west catching up: {ownership(first, zombie)}")
            assert first.stop() == 0 and zombie.stop() == 0
        finally:
            feed.stopping.set()
            for mirror in (first, zombie):
                if mirror.alive():
                    mirror.resume()
                    mirror.kill()

        auditing = pool.submit(audit, east, west, start_ms, tmp_path / "clean")
        target = committed(west.bootstrap, "east.")
        for (topic, p), rows in source.items():
            copy = target[(topic, p)]
            assert Counter(copy) == Counter(rows), f"{topic}-{p}: west differs from east"
            assert copy == rows, f"{topic}-{p}: out of order"
        records = sum(map(len, source.values()))
        assert feed.aborted >= feed.rounds > 0
        assert all(not row.value.startswith(b"void-") for rows in target.values()
                   for row in rows if row.value is not None)
        assert {row.key for (topic, _), rows in source.items() if topic == "compacted"
                for row in rows} == {b"compacted-%d" % k for k in range(COMPACTED_KEYS)}

        zombie_log = zombie.logs()[resumed_at:]
        assert unowned_sessions(zombie_log) == [], "the zombie copied on after it resumed"
        batches = target_batches(west)
        for partition, found in batches.items():
            assert len({b["producerId"] for b in found}) == 1, partition
            assert epochs_go_back(found) == [], f"{partition}: a fenced producer wrote"
        for partition, (producer, epoch) in fenced.items():  # the zombie was fenced there
            assert batches[partition][0]["producerId"] == producer
            assert max(b["producerEpoch"] for b in batches[partition]) > epoch, partition
        assert {b["compresscodec"] for p in range(TOPICS["compressed"])
                for b in batches[("east.compressed", p)] if not b["isControl"]} == set(CODECS)

        code, summary, printed = auditing.result()
    assert code == 0 and summary["complete"] is True, printed
    expected = Counter((topic, bucket_of(row.timestamp)) for (topic, _), rows in source.items()
                       for row in rows)
    assert {(b["topic"], b["bucket_start_ms"]): (b["source_count"], b["target_count"])
            for b in summary["buckets"]} == {k: (n, n) for k, n in expected.items()}
    assert set(statuses(summary).values()) == {"complete"}
    assert len(summary["buckets"]) == len(TOPICS) * BUCKETS

    first_rows = read_confluent(west.bootstrap, "east.plain", (0,))[:2]
    client = admin(west.bootstrap)
    futures = client.delete_records(
        [TopicPartition("east.plain", 0, first_rows[-1].offset + 1)])
    next(iter(futures.values())).result(60)
    stray = start_ms + BUCKET_MS + 7
    produce_confluent(west.bootstrap, "east.compressed",
                      [Out(b"stray-%d" % i, b"x", stray, (), 0) for i in range(3)])
    code, summary, printed = audit(east, west, start_ms, tmp_path / "damaged")
    assert code == 1 and summary["complete"] is False, printed
    damaged = {("plain", bucket_of(r.timestamp)): "missing" for r in first_rows}
    damaged[("compressed", bucket_of(stray))] = "extra"
    assert {k: s for k, s in statuses(summary).items() if s != "complete"} == damaged

    with capsys.disabled():
        print(f"\npipeline under faults: {records} committed records in {feed.rounds} rounds "
              f"({feed.aborted} transactions aborted, {feed.recoveries} of them by a fault), "
              f"{kills} mirror kill -9s, {pauses} SIGSTOP of the other past its session "
              f"({len(owned)} partitions taken over, "
              f"{zombie_log.count(FENCED)} of its copies fenced after SIGCONT), "
              f"2 broker kills; fenced epochs {sorted(fenced.values())}; "
              f"audit: {len(summary['buckets'])} buckets, damaged {sorted(damaged.items())}")
