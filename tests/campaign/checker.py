"""The campaign's checker: a pure function of a History to the anomalies it holds, in the
categories of Jepsen's Kafka workload.

The final read (made after healing, once no transaction is open) is the log's truth: a
transaction committed if its values are in the read_committed final read, aborted if none is.
"""

from __future__ import annotations

import bisect
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from tests.campaign.history import (
    ABORTED,
    COMMITTED,
    READ_COMMITTED,
    READ_UNCOMMITTED,
    UNKNOWN_OFFSET,
    Assignment,
    Commit,
    History,
    Read,
    Txn,
)

LOST = "lost-write"
DUPLICATE = "duplicate"
OUT_OF_ORDER = "out-of-order-read"
POLL_SKIP = "poll-skip"
ABORTED_READ = "aborted-read (G1a)"
INTERMEDIATE = "intermediate-read"
CYCLE = "cycle (G1c)"
DIVERGENT = "divergent-read"
OFFSET_BACKWARDS = "committed-offset-backwards"
CATEGORIES = (LOST, DUPLICATE, OUT_OF_ORDER, POLL_SKIP, ABORTED_READ, INTERMEDIATE, CYCLE,
              DIVERGENT, OFFSET_BACKWARDS)
EPOCH_BUMP_DUPLICATE = "duplicate across a producer epoch bump"
NOT_PROMISED = (EPOCH_BUMP_DUPLICATE,)
"""Reported with their evidence, not counted as anomalies: docs/reliability.md, "Not
promised". A broker cannot tell a record re-sent under a new epoch from a new one (librdkafka
re-sends records that may have been written when it bumps an idempotent producer's epoch)."""
MONITOR = "monitor"
EVIDENCE_LIMIT = 20
"""Offsets listed at most in one anomaly's evidence."""

TopicPartition = tuple[str, int]
Anomaly = dict[str, Any]


class View:
    """What the final read says, indexed."""

    def __init__(self, history: History) -> None:
        self.log: dict[str, dict[TopicPartition, dict[int, str]]] = {
            READ_COMMITTED: defaultdict(dict), READ_UNCOMMITTED: defaultdict(dict)}
        for stored in history.final:
            self.log[stored.isolation][(stored.topic, stored.partition)][stored.offset] = \
                stored.value
        self.visible = {isolation: {tp: sorted(records) for tp, records in logs.items()}
                        for isolation, logs in self.log.items()}
        self.committed_values = {value for records in self.log[READ_COMMITTED].values()
                                 for value in records.values()}
        self.txn_of = {value: txn for txn in history.txns for value in txn.values}

    def committed(self, txn: Txn) -> bool:
        return any(value in self.committed_values for value in txn.values)

    def between(self, isolation: str, tp: TopicPartition, low: int, high: int) -> list[int]:
        """Visible offsets strictly between low and high."""
        offsets = self.visible[isolation].get(tp, [])
        return offsets[bisect.bisect_right(offsets, low):bisect.bisect_left(offsets, high)]


def check(history: History) -> dict[str, list[Anomaly]]:
    """Every anomaly of the history, by category, and what is not promised (every category
    of both present, maybe empty)."""
    view = View(history)
    found: dict[str, list[Anomaly]] = {category: [] for category in
                                       (*CATEGORIES, *NOT_PROMISED)}
    for anomaly in [*lost_writes(history, view), *duplicates(history, view),
                    *divergent_reads(history, view), *sessions(history, view),
                    *aborted_reads(history, view), *intermediate_reads(history, view),
                    *cycles(history, view), *offsets_backwards(history),
                    *unprocessed_inputs(history, view)]:
        found[anomaly["category"]].append(anomaly)
    return found


def lost_writes(history: History, view: View) -> Iterable[Anomaly]:
    committed_log = view.log[READ_COMMITTED]
    for ack in history.acks:
        if ack.txn is None:
            records = committed_log[(ack.topic, ack.partition)]
            if ack.offset == UNKNOWN_OFFSET:  # acknowledged without an offset: anywhere
                found = ack.value if ack.value in records.values() else None
            else:
                found = records.get(ack.offset)
            if found != ack.value:
                yield {"category": LOST, "value": ack.value, "topic": ack.topic,
                       "partition": ack.partition, "offset": ack.offset, "found": found,
                       "acked_at": ack.time}
    for txn in history.txns:
        present = [v for v in txn.values if v in view.committed_values]
        missing = [v for v in txn.values if v not in view.committed_values]
        if missing and (present or txn.outcome == COMMITTED):
            yield {"category": LOST, "txn": txn.txn, "outcome": txn.outcome,
                   "missing": missing, "present": present}


def observations(history: History) -> Iterable[tuple[str, str, int, int, str]]:
    """(source, topic, partition, offset, value) of every ack, read and final record."""
    for ack in history.acks:
        if ack.offset != UNKNOWN_OFFSET:
            yield f"ack:{ack.process}", ack.topic, ack.partition, ack.offset, ack.value
    for read in history.reads:
        yield f"read:{read.process}", read.topic, read.partition, read.offset, read.value
    for stored in history.final:
        yield f"final:{stored.isolation}", stored.topic, stored.partition, stored.offset, \
            stored.value


Place = tuple[str, int, int]


def places_of_values(history: History) -> dict[str, set[Place]]:
    """Every (topic, partition, offset) where each value was acknowledged, read or found."""
    places: dict[str, set[Place]] = defaultdict(set)
    for _, topic, partition, offset, value in observations(history):
        places[value].add((topic, partition, offset))
    return places


def duplicate_places(history: History) -> set[Place]:
    """The places of every value seen at more than one: where the campaign reads the
    writers' producer ids and epochs from the logs (`History.writers`)."""
    return {place for where in places_of_values(history).values() if len(where) > 1
            for place in where}


def duplicates(history: History, view: View) -> Iterable[Anomaly]:
    places = places_of_values(history)
    writers = {(w.topic, w.partition, w.offset): (w.producer_id, w.producer_epoch)
               for w in history.writers}
    for value, where in places.items():
        if len(where) > 1:
            wrote = [writers.get(place) for place in sorted(where)]
            bumped = value not in view.txn_of and _one_producer_epoch_each(wrote)
            yield {"category": EPOCH_BUMP_DUPLICATE if bumped else DUPLICATE, "value": value,
                   "at": sorted(where), "producer_id_and_epoch": wrote}
    processed: dict[str, list[str]] = defaultdict(list)
    for txn in history.txns:
        if view.committed(txn):
            for value in txn.reads:
                processed[value].append(txn.txn)
    for value, txns in processed.items():
        if len(txns) > 1:
            yield {"category": DUPLICATE, "input": value, "processed_by_committed": txns}


def _one_producer_epoch_each(wrote: list[tuple[int, int] | None]) -> bool:
    """The copies were written by one producer id, each copy under an epoch of its own."""
    known = [w for w in wrote if w is not None]
    return (len(known) == len(wrote) and len({pid for pid, _ in known}) == 1
            and known[0][0] >= 0 and len({epoch for _, epoch in known}) == len(known))


def divergent_reads(history: History, view: View) -> Iterable[Anomaly]:
    seen: dict[tuple[str, int, int], dict[str, str]] = defaultdict(dict)
    for source, topic, partition, offset, value in observations(history):
        seen[(topic, partition, offset)].setdefault(value, source)
    for (topic, partition, offset), values in seen.items():
        if len(values) > 1:
            yield {"category": DIVERGENT, "topic": topic, "partition": partition,
                   "offset": offset, "values": values}


def timelines(history: History) -> dict[str, list[Read | Assignment | Commit]]:
    """Each process's reads, assignments and own commits in time order."""
    by_process: dict[str, list[Read | Assignment | Commit]] = defaultdict(list)
    for assignment in history.assignments:
        by_process[assignment.process].append(assignment)
    for read in history.reads:
        by_process[read.process].append(read)
    for commit in history.commits:
        if commit.source != MONITOR:
            by_process[commit.source].append(commit)
    for events in by_process.values():
        events.sort(key=lambda e: e.time)
    return by_process


def sessions(history: History, view: View) -> Iterable[Anomaly]:
    """Within one assignment session of one consumer and partition: reads in increasing
    offset order with no visible record skipped, and commits never behind what was read."""
    for process, events in timelines(history).items():
        last: dict[TopicPartition, Read] = {}
        for event in events:
            if isinstance(event, Assignment):
                for tp in event.partitions:
                    last.pop(tp, None)
            elif isinstance(event, Commit):
                previous = last.get((event.topic, event.partition))
                if previous is not None and event.offset <= previous.offset:
                    yield {"category": OFFSET_BACKWARDS, "process": process,
                           "group": event.group, "topic": event.topic,
                           "partition": event.partition, "committed": event.offset,
                           "after_reading_offset": previous.offset, "time": event.time}
            else:
                tp = (event.topic, event.partition)
                previous = last.get(tp)
                last[tp] = event
                if previous is None:
                    continue
                if event.offset <= previous.offset:
                    yield {"category": OUT_OF_ORDER, "process": process, "topic": event.topic,
                           "partition": event.partition, "offset": event.offset,
                           "after": previous.offset, "time": event.time}
                    continue
                skipped = view.between(event.isolation, tp, previous.offset, event.offset)
                if skipped:
                    yield {"category": POLL_SKIP, "process": process, "topic": event.topic,
                           "partition": event.partition, "from": previous.offset,
                           "to": event.offset, "skipped": skipped[:EVIDENCE_LIMIT],
                           "skipped_count": len(skipped), "time": event.time}


def aborted_reads(history: History, view: View) -> Iterable[Anomaly]:
    for read in history.reads:
        txn = view.txn_of.get(read.value)
        if read.isolation == READ_COMMITTED and txn is not None and not view.committed(txn):
            yield {"category": ABORTED_READ, "process": read.process, "value": read.value,
                   "txn": txn.txn, "outcome": txn.outcome, "topic": read.topic,
                   "partition": read.partition, "offset": read.offset}
    for txn in history.txns:
        if txn.outcome == ABORTED and view.committed(txn):
            yield {"category": ABORTED_READ, "txn": txn.txn, "process": "final read",
                   "visible": [v for v in txn.values if v in view.committed_values]}


def intermediate_reads(history: History, view: View) -> Iterable[Anomaly]:
    """A read_committed read of a transaction's record before its commit was asked for."""
    for read in history.reads:
        txn = view.txn_of.get(read.value)
        if (read.isolation == READ_COMMITTED and txn is not None and view.committed(txn)
                and (txn.commit_started is None or read.time < txn.commit_started)):
            yield {"category": INTERMEDIATE, "process": read.process, "value": read.value,
                   "txn": txn.txn, "read_at": read.time, "commit_started": txn.commit_started}


def cycles(history: History, view: View) -> Iterable[Anomaly]:
    """Cycles among committed transactions over write-read edges (a transaction consumed
    another's record) and process order (one producer's transactions follow each other)."""
    committed = [txn for txn in history.txns if view.committed(txn)]
    edges: dict[str, set[str]] = defaultdict(set)
    kinds: dict[tuple[str, str], str] = {}
    for txn in committed:
        for value in txn.reads:
            writer = view.txn_of.get(value)
            if writer is not None and writer.txn != txn.txn:
                edges[writer.txn].add(txn.txn)
                kinds[(writer.txn, txn.txn)] = "wr"
    by_process: dict[str, list[Txn]] = defaultdict(list)
    for txn in committed:
        by_process[txn.process].append(txn)
    for txns in by_process.values():
        txns.sort(key=lambda t: t.start)
        for before, after in zip(txns, txns[1:], strict=False):
            edges[before.txn].add(after.txn)
            kinds.setdefault((before.txn, after.txn), "process")
    for component in strongly_connected(edges):
        if len(component) > 1:
            cycle = find_cycle(edges, component)
            yield {"category": CYCLE, "cycle": cycle,
                   "edges": [kinds[(a, b)] for a, b in zip(cycle, cycle[1:], strict=False)]}


def strongly_connected(edges: dict[str, set[str]]) -> list[set[str]]:
    """Tarjan's algorithm, iterative."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[set[str]] = []
    nodes = set(edges) | {n for targets in edges.values() for n in targets}
    for root in sorted(nodes):
        if root in index:
            continue
        work = [(root, iter(sorted(edges.get(root, ()))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, successors = work[-1]
            advanced = False
            for successor in successors:
                if successor not in index:
                    index[successor] = low[successor] = len(index)
                    stack.append(successor)
                    on_stack.add(successor)
                    work.append((successor, iter(sorted(edges.get(successor, ())))))
                    advanced = True
                    break
                if successor in on_stack:
                    low[node] = min(low[node], index[successor])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                components.append(component)
    return components


def find_cycle(edges: dict[str, set[str]], component: set[str]) -> list[str]:
    """A cycle through the component's smallest node, as a path that ends where it starts."""
    start = min(component)
    parents: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for successor in sorted(edges.get(node, ())):
                if successor == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(parents[path[-1]])
                    return [*reversed(path), start]
                if successor in component and successor not in parents:
                    parents[successor] = node
                    following.append(successor)
        frontier = following
    return [start]


def offsets_backwards(history: History) -> Iterable[Anomaly]:
    """A group's committed offsets, as its consumers' acknowledged commits and committed
    transactions set them, and as the monitor saw them on the brokers, never go back."""
    series: dict[tuple[str, str, str, int], list[tuple[float, int, str]]] = defaultdict(list)
    for commit in history.commits:
        family = MONITOR if commit.source == MONITOR else "clients"
        series[(family, commit.group, commit.topic, commit.partition)].append(
            (commit.time, commit.offset, commit.source))
    for txn in history.txns:
        if txn.outcome == COMMITTED and txn.group is not None:
            for key, committed in txn.offsets.items():
                name, number = key.rsplit("/", 1)
                series[("clients", txn.group, name, int(number))].append(
                    (txn.end, committed, txn.process))
    for (family, group, topic, partition), points in series.items():
        points.sort()
        for (_, before, by), (time, after, source) in zip(points, points[1:], strict=False):
            if after < before:
                yield {"category": OFFSET_BACKWARDS, "seen_by": family, "group": group,
                       "topic": topic, "partition": partition, "from": before, "to": after,
                       "from_source": by, "to_source": source, "time": time}


def unprocessed_inputs(history: History, view: View) -> Iterable[Anomaly]:
    """Exactly-once processing: below the offsets a consume-transform-produce group
    committed, every visible input record was consumed by a committed transaction."""
    processed: set[str] = set()
    reach: dict[tuple[str, TopicPartition], int] = {}
    for txn in history.txns:
        if view.committed(txn) and txn.group is not None:
            processed.update(txn.reads)
            for key, offset in txn.offsets.items():
                topic, partition = key.rsplit("/", 1)
                slot = (txn.group, (topic, int(partition)))
                reach[slot] = max(reach.get(slot, 0), offset)
    for (group, tp), offset in sorted(reach.items()):
        records = view.log[READ_COMMITTED].get(tp, {})
        missing = sorted(o for o, value in records.items()
                         if o < offset and value not in processed)
        if missing:
            yield {"category": POLL_SKIP, "group": group, "topic": tp[0], "partition": tp[1],
                   "committed": offset, "never_processed": missing[:EVIDENCE_LIMIT],
                   "count": len(missing)}
