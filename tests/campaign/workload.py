"""The campaign's clients (confluent-kafka), each a thread that records what it does in the
History: idempotent producers, transactional producers, consume-transform-produce stages,
and consumers (subscribe with both group protocols, assign; both isolation levels).

Values are `<process>-<n>` (a transaction's `<process>-<k>-<i>`); a consume-transform-produce
output ends in `-h<hops>`, the number of stages it went through.
"""

from __future__ import annotations

import random
import threading
import time
import traceback
from collections import defaultdict, deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

from confluent_kafka import (
    OFFSET_BEGINNING,
    Consumer,
    KafkaError,
    KafkaException,
    Message,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient

from tests.campaign.history import (
    ABORTED,
    COMMITTED,
    READ_COMMITTED,
    UNKNOWN,
    UNKNOWN_OFFSET,
    Ack,
    Assignment,
    Commit,
    Failure,
    History,
    Read,
    Send,
    Txn,
)

CALL_TIMEOUT = 60.0
TRANSACTION_TIMEOUT_MS = 30000
IDLE_CONNECTION_MS = 10000
"""A transactional producer closes connections idle this long. librdkafka waits for ever for
a group coordinator it dropped when Metadata stopped listing that broker (its issues 5456 and
5511; against Apache Kafka too: docs/reliability.md) until one of the producer's connections
changes state; a closed idle connection is such a change."""


def known_offset(message: Message) -> int:
    """The message's offset; UNKNOWN_OFFSET when the client did not learn it."""
    offset = message.offset()
    return UNKNOWN_OFFSET if offset is None or offset < 0 else int(offset)


def close(consumer: Consumer, name: str, history: History) -> None:
    """Close a consumer, waiting CALL_TIMEOUT at most: librdkafka 2.16's close sometimes
    never returns after a campaign (a client error in the report, not a hang of the run)."""
    closing = threading.Thread(target=consumer.close, daemon=True)
    closing.start()
    closing.join(CALL_TIMEOUT)
    if closing.is_alive():
        history.add(Failure(name, "", "consumer close did not return", time.monotonic()))


def quiet(config: dict[str, Any]) -> dict[str, Any]:
    """librdkafka's errors during faults are expected; the history is what counts."""
    return {"log_level": 0, "error_cb": lambda error: None, **config}


class Client(threading.Thread):
    """A workload thread: `step()` until the stop event, then `finish()`; an exception in
    either is kept in `crash` for the report instead of killing the campaign."""

    def __init__(self, name: str, bootstrap: str, history: History, seed: int,
                 stop: threading.Event) -> None:
        super().__init__(name=name, daemon=True)
        self.bootstrap = bootstrap
        self.history = history
        self.random = random.Random(f"{seed}/{name}")
        self.stop = stop
        self.crash: str | None = None
        self.operations = 0

    def run(self) -> None:
        try:
            self.open()
            while not self.stop.is_set():
                self.step()
            self.finish()
        except Exception as error:  # noqa: BLE001 - reported, not raised
            frame = traceback.extract_tb(error.__traceback__)[-1]
            self.crash = (f"{type(error).__name__}: {error} (in {frame.name}, "
                          f"{Path(frame.filename).name}:{frame.lineno})")

    def open(self) -> None:
        """Create the client(s)."""

    def step(self) -> None:
        raise NotImplementedError

    def finish(self) -> None:
        """Flush and close."""


class IdempotentProducer(Client):
    """acks=all with enable.idempotence, one record at a time at a steady pace."""

    def __init__(self, name: str, bootstrap: str, history: History, seed: int,
                 stop: threading.Event, topic: str, interval: float = 0.05) -> None:
        super().__init__(name, bootstrap, history, seed, stop)
        self.topic = topic
        self.interval = interval
        self.fatal: KafkaError | None = None

    def open(self) -> None:
        self.fatal = None
        self.producer = Producer(quiet({
            "bootstrap.servers": self.bootstrap, "enable.idempotence": True, "acks": "all",
            "linger.ms": 5, "message.timeout.ms": 120000,
            "error_cb": self.on_error}))

    def on_error(self, error: KafkaError) -> None:
        if error.fatal():
            self.fatal = error

    def step(self) -> None:
        if self.fatal is not None:
            self.history.add(Failure(self.name, "", f"fatal: {self.fatal}", time.monotonic()))
            self.open()  # the dead producer is not flushed (see `finish`)
        value = f"{self.name}-{self.operations}"
        self.operations += 1
        sent = time.monotonic()
        self.history.add(Send(self.name, value, self.topic, sent))
        while True:
            try:
                self.producer.produce(self.topic, value.encode(), key=value.encode(),
                                      on_delivery=self.delivered(value, sent))
                break
            except BufferError:
                self.producer.poll(0.5)
            except KafkaException as error:  # fatal: an idempotent producer starts over
                self.fatal = error.args[0]
                self.history.add(Failure(self.name, value, str(error), time.monotonic()))
                return
        self.producer.poll(0)
        self.stop.wait(self.interval)

    def delivered(self, value: str, sent: float) -> Callable[[KafkaError | None, Message], None]:
        def report(error: KafkaError | None, message: Message) -> None:
            now = time.monotonic()
            if error is not None:
                self.history.add(Failure(self.name, value, str(error), now))
            else:
                self.history.add(Ack(self.name, value, str(message.topic()),
                                     int(message.partition() or 0), known_offset(message),
                                     now, now - sent))
        return report

    def finish(self) -> None:
        """Flush, unless the producer hit a fatal error. The hour-long run's two idempotent
        producers died after one, of a SystemError raised in a delivery callback (called
        with an exception already set) while a fatal producer was flushed. Such a flush
        tells the history nothing: the sends it holds stay of unknown outcome."""
        if self.fatal is None:
            self.producer.flush(CALL_TIMEOUT * 2)


class TransactionalProducer(IdempotentProducer):
    """Transactions of one to four records over several topics and partitions; a quarter
    aborted on purpose. `txn_values()` and `after_values()` are the hooks of the
    consume-transform-produce subclass."""

    abort_ratio = 0.25

    def __init__(self, name: str, bootstrap: str, history: History, seed: int,
                 stop: threading.Event, topics: list[str], interval: float = 0.2) -> None:
        super().__init__(name, bootstrap, history, seed, stop, topics[0], interval)
        self.topics = topics

    def open(self) -> None:
        self.producer = Producer(quiet({
            "bootstrap.servers": self.bootstrap, "transactional.id": self.name,
            "acks": "all", "linger.ms": 5, "transaction.timeout.ms": TRANSACTION_TIMEOUT_MS,
            "message.timeout.ms": TRANSACTION_TIMEOUT_MS,
            "connections.max.idle.ms": IDLE_CONNECTION_MS}))
        self.producer.init_transactions(CALL_TIMEOUT)

    def outputs(self, txn: str) -> list[tuple[str, str]]:
        """(topic, value) of the next transaction; empty: nothing to do now."""
        count = self.random.randint(1, 4)
        return [(self.random.choice(self.topics), f"{txn}-{i}") for i in range(count)]

    def step(self) -> None:
        txn = f"{self.name}-{self.operations}"
        outputs = self.outputs(txn)
        if not outputs:
            return
        self.operations += 1
        start = time.monotonic()
        commit_started: float | None = None
        outcome = UNKNOWN
        try:
            self.producer.begin_transaction()
            for topic, value in outputs:
                self.history.add(Send(self.name, value, topic, time.monotonic(), txn))
                self.producer.produce(topic, value.encode(), key=value.encode(),
                                      on_delivery=self.delivered_in(txn, value, start))
            self.attach_offsets()
            if self.random.random() < self.abort_ratio:
                self.producer.abort_transaction(CALL_TIMEOUT)
                outcome = ABORTED
            else:
                commit_started = time.monotonic()
                outcome = self.commit()
        except KafkaException as error:
            self.failed("transaction", error.args[0])
            outcome = self.recover(error.args[0])
        self.history.add(Txn(self.name, txn, [v for _, v in outputs], outcome, start,
                             time.monotonic(), commit_started, **self.txn_reads()))
        if outcome != COMMITTED:
            self.rewind()
        self.stop.wait(self.interval)

    def commit(self) -> str:
        for _ in range(5):
            try:
                self.producer.commit_transaction(CALL_TIMEOUT)
                return COMMITTED
            except KafkaException as error:
                if not error.args[0].retriable():
                    raise
                self.failed("commit", error.args[0])
        return UNKNOWN

    def recover(self, error: KafkaError) -> str:
        """After a failed transaction: abort it if the client may, else start over with a
        new producer of the same id."""
        if error.txn_requires_abort():
            try:
                self.producer.abort_transaction(CALL_TIMEOUT)
                return ABORTED
            except KafkaException as abort_error:
                self.failed("abort", abort_error.args[0])
        self.reopen()
        return UNKNOWN

    def failed(self, call: str, error: KafkaError) -> None:
        """Record a failed transaction call with how librdkafka classed the error, so a
        report tells a fatal error from one the client retried or aborted."""
        kinds = [kind for kind, flag in (("fatal", error.fatal()), ("retriable", error.retriable()),
                                         ("abortable", error.txn_requires_abort())) if flag]
        self.history.add(Failure(self.name, "", f"{call} ({', '.join(kinds) or 'permanent'}): "
                                 f"{error.name()}: {error.str()}",
                                 time.monotonic()))

    def reopen(self) -> None:
        while not self.stop.is_set():
            try:
                self.open()
                return
            except KafkaException as error:
                self.history.add(Failure(self.name, "", f"reopening: {error.args[0]}",
                                         time.monotonic()))
                self.stop.wait(1.0)

    def delivered_in(self, txn: str, value: str, sent: float
                     ) -> Callable[[KafkaError | None, Message], None]:
        def report(error: KafkaError | None, message: Message) -> None:
            now = time.monotonic()
            if error is None:
                self.history.add(Ack(self.name, value, str(message.topic()),
                                     int(message.partition() or 0), known_offset(message),
                                     now, now - sent, txn))
        return report

    def attach_offsets(self) -> None:
        """Hook: send the consumed offsets to the transaction."""

    def txn_reads(self) -> dict[str, Any]:
        return {}

    def rewind(self) -> None:
        """Hook: go back to the last committed input."""

    def finish(self) -> None:
        self.producer.flush(CALL_TIMEOUT)


class TransformStage(TransactionalProducer):
    """Consume-transform-produce: a read_committed group member reads a batch, and one
    transaction writes one output per input (to `forward` while the value has been through
    fewer than `hops` stages, else to `sink`) with the consumed offsets
    (send_offsets_to_transaction)."""

    abort_ratio = 0.1

    def __init__(self, name: str, bootstrap: str, history: History, seed: int,
                 stop: threading.Event, inputs: list[str], forward: str, sink: str,
                 hops: int = 3) -> None:
        super().__init__(name, bootstrap, history, seed, stop, [forward, sink], interval=0)
        self.inputs, self.forward, self.sink, self.hops = inputs, forward, sink, hops
        self.group = name
        self.batch: list[Message] = []
        self.offsets: dict[str, int] = {}

    def open(self) -> None:
        super().open()
        if not hasattr(self, "consumer"):
            self.consumer = Consumer(quiet({
                "bootstrap.servers": self.bootstrap, "group.id": self.group,
                "isolation.level": READ_COMMITTED, "enable.auto.commit": False,
                "auto.offset.reset": "earliest", "session.timeout.ms": 10000,
                "heartbeat.interval.ms": 1000}))
            self.consumer.subscribe(self.inputs, on_assign=self.on_rebalance,
                                    on_revoke=self.on_rebalance, on_lost=self.on_rebalance)

    def on_rebalance(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        self.history.add(Assignment(self.name, [(p.topic, p.partition) for p in partitions],
                                    time.monotonic()))

    def outputs(self, txn: str) -> list[tuple[str, str]]:
        self.batch = [m for m in self.consumer.consume(20, 1.0) if m.error() is None]
        now = time.monotonic()
        for message in self.batch:
            self.history.add(Read(self.name, READ_COMMITTED, str(message.topic()),
                                  int(message.partition() or 0), known_offset(message),
                                  (message.value() or b"").decode(), now, self.group))
        result = []
        for i, message in enumerate(self.batch):
            value = (message.value() or b"").decode()
            hops = int(value.rsplit("-h", 1)[1]) + 1 if "-h" in value else 1
            topic = self.forward if hops < self.hops else self.sink
            result.append((topic, f"{txn}-{i}-h{hops}"))
        return result

    def attach_offsets(self) -> None:
        positions = self.consumer.position(self.consumer.assignment())
        consumed = {(m.topic(), m.partition()) for m in self.batch}
        self.offsets = {f"{p.topic}/{p.partition}": p.offset for p in positions
                        if p.offset >= 0 and (p.topic, p.partition) in consumed}
        self.producer.send_offsets_to_transaction(
            positions, self.consumer.consumer_group_metadata(), CALL_TIMEOUT)

    def txn_reads(self) -> dict[str, Any]:
        return {"reads": [(m.value() or b"").decode() for m in self.batch],
                "group": self.group, "offsets": self.offsets}

    def rewind(self) -> None:
        """Seek every assigned partition back to the group's committed offset (its
        beginning when there is none), as an exactly-once application must after a failed
        transaction. An answer that does not come is asked for again, never guessed:
        guessing re-processes committed input or skips uncommitted input."""
        while not self.stop.is_set():
            try:
                committed = self.consumer.committed(self.consumer.assignment(), CALL_TIMEOUT)
                for partition in committed:
                    if partition.error is not None:
                        raise KafkaException(partition.error)
                    if partition.offset < 0:
                        partition.offset = OFFSET_BEGINNING
                    if (partition.topic, partition.partition) in self.assigned():
                        self.consumer.seek(partition)  # a revoked one's next owner rewinds
            except KafkaException as error:
                self.history.add(Failure(self.name, "", f"rewinding: {error.args[0]}",
                                         time.monotonic()))
                continue
            self.history.add(Assignment(self.name, [(p.topic, p.partition) for p in committed],
                                        time.monotonic()))
            return

    def assigned(self) -> set[tuple[str, int]]:
        return {(p.topic, p.partition) for p in self.consumer.assignment()}

    def finish(self) -> None:
        super().finish()
        close(self.consumer, self.name, self.history)


class Reader(Client):
    """A consumer: a group member (`protocol` classic or consumer) committing its position
    about once a second, or (group None) assigned every partition from the beginning."""

    def __init__(self, name: str, bootstrap: str, history: History, seed: int,
                 stop: threading.Event, topics: list[str], isolation: str,
                 group: str | None = None, protocol: str = "classic") -> None:
        super().__init__(name, bootstrap, history, seed, stop)
        self.topics, self.isolation, self.group, self.protocol = \
            topics, isolation, group, protocol
        self.last_commit = time.monotonic()
        self.issued: defaultdict[tuple[str, int, int], deque[float]] = defaultdict(deque)
        """When the commits not yet answered of each (topic, partition, offset) were issued,
        oldest first (a partition that did not move is committed again at the same
        offset)."""
        self.committing = False
        """A commit is in flight: the next waits for its answer. librdkafka retries a commit
        the coordinator could not take (COORDINATOR_NOT_AVAILABLE, REQUEST_TIMED_OUT), so
        overlapping commits could land oldest last and move the group's offset back (a
        short campaign's monitor saw 1616, then 1595, then 1636), as Java's commitAsync
        warns; one at a time, as commitSync does, they land in order."""

    def open(self) -> None:
        config: dict[str, Any] = {
            "bootstrap.servers": self.bootstrap, "group.id": self.group or self.name,
            "isolation.level": self.isolation, "enable.auto.commit": False,
            "auto.offset.reset": "earliest", "group.protocol": self.protocol}
        if self.protocol == "classic":
            config.update({"session.timeout.ms": 10000, "heartbeat.interval.ms": 1000})
        if self.group is not None:
            config["on_commit"] = self.on_commit
        self.consumer = Consumer(quiet(config))
        if self.group is None:
            partitions = self.all_partitions()
            self.history.add(Assignment(self.name, [(p.topic, p.partition)
                                                    for p in partitions], time.monotonic()))
            self.consumer.assign(partitions)
        else:
            self.consumer.subscribe(self.topics, on_assign=self.on_rebalance,
                                    on_revoke=self.on_rebalance, on_lost=self.on_rebalance)

    def all_partitions(self) -> list[TopicPartition]:
        """Every partition of the topics from their beginning, once a broker's metadata
        lists them all (a broker may not have applied the topics' creation yet)."""
        admin = AdminClient(quiet({"bootstrap.servers": self.bootstrap}))
        while True:
            topics = admin.list_topics(timeout=CALL_TIMEOUT).topics
            if all(t in topics and topics[t].error is None and topics[t].partitions
                   for t in self.topics) or self.stop.is_set():
                return [TopicPartition(t, p, OFFSET_BEGINNING) for t in self.topics
                        if t in topics for p in topics[t].partitions]
            self.stop.wait(0.5)

    def on_rebalance(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        self.history.add(Assignment(self.name, [(p.topic, p.partition) for p in partitions],
                                    time.monotonic()))

    def step(self) -> None:
        messages = self.consumer.consume(100, 0.5)
        now = time.monotonic()
        for message in messages:
            if message.error() is None:
                self.operations += 1
                self.history.add(Read(self.name, self.isolation, str(message.topic()),
                                      int(message.partition() or 0),
                                      known_offset(message),
                                      (message.value() or b"").decode(), now, self.group))
        if self.group is not None and not self.committing and now - self.last_commit > 1.0:
            self.last_commit = now
            self.commit()

    def commit(self) -> None:
        """The consumer's positions, committed asynchronously, so that a coordinator that
        never answers cannot block the reader past its stop (a synchronous commit has no
        timeout); `on_commit` records the acknowledgement when a later `consume` serves
        it."""
        issued = time.monotonic()
        try:
            positions = [p for p in self.consumer.position(self.consumer.assignment())
                         if p.offset >= 0]
            if positions:
                self.consumer.commit(offsets=positions, asynchronous=True)
                self.committing = True
        except KafkaException:
            return
        for p in positions:
            self.issued[(p.topic, p.partition, p.offset)].append(issued)

    def on_commit(self, error: KafkaError | None, partitions: list[TopicPartition]) -> None:
        """An answer to a commit: recorded at the time the commit was issued, whose
        positions it committed (answers may come in another order, and reads served while
        it was in flight come after it)."""
        now = time.monotonic()
        self.committing = False
        for partition in partitions:
            key = (partition.topic, partition.partition, partition.offset)
            pending = self.issued.get(key)
            issued = pending.popleft() if pending else now
            if pending is not None and not pending:
                del self.issued[key]
            if error is None and partition.error is None and partition.offset >= 0:
                self.history.add(Commit(self.name, str(self.group), partition.topic,
                                        partition.partition, partition.offset, issued))

    def finish(self) -> None:
        close(self.consumer, self.name, self.history)


class OffsetMonitor(Client):
    """Reads the groups' committed offsets from the brokers every second, through a
    read_committed consumer per group that never joins it (OffsetFetch with require_stable).
    Not through the AdminClient: librdkafka 2.16's ListConsumerGroupOffsets crashes the
    process (a NULL consumer group in rd_kafka_cgrp_op, from rd_kafka_handle_OffsetFetch)
    when the group coordinator moves."""

    def __init__(self, name: str, bootstrap: str, history: History, seed: int,
                 stop: threading.Event, groups: list[str], topics: list[str]) -> None:
        super().__init__(name, bootstrap, history, seed, stop)
        self.groups, self.topics = groups, topics

    def open(self) -> None:
        admin = AdminClient(quiet({"bootstrap.servers": self.bootstrap}))
        while True:
            # a broker that has not applied a topic's creation yet leaves it out (the
            # hour-long run's monitor died of that at its start)
            try:
                listed = admin.list_topics(timeout=CALL_TIMEOUT).topics
            except KafkaException:  # under a fault
                listed = {}
            known = {name: topic.partitions for name, topic in listed.items()
                     if not topic.error}
            if all(known.get(topic) for topic in self.topics) or self.stop.wait(0.5):
                break
        self.partitions = [(t, p) for t in self.topics for p in sorted(known.get(t, ()))]
        self.consumers = {group: Consumer(quiet({
            "bootstrap.servers": self.bootstrap, "group.id": group,
            "isolation.level": READ_COMMITTED, "enable.auto.commit": False}))
            for group in self.groups}

    def step(self) -> None:
        for group, consumer in self.consumers.items():
            try:
                result = consumer.committed([TopicPartition(t, p) for t, p in self.partitions],
                                            10)
            except KafkaException:
                continue
            now = time.monotonic()
            self.operations += 1
            for partition in result:
                if partition.error is None and partition.offset >= 0:
                    self.history.add(Commit("monitor", group, partition.topic,
                                            partition.partition, partition.offset, now))
        self.stop.wait(1.0)

    def finish(self) -> None:
        for consumer in self.consumers.values():
            close(consumer, self.name, self.history)
