"""The batch options of Spark's built-in Kafka source (KafkaSourceProvider), parsed and
validated without IO, with Spark's names, defaults and precedence:

- exactly one of `assign` (JSON `{"t":[0,1]}`), `subscribe` (comma list) and
  `subscribePattern` (a regex matched against whole topic names);
- start: `startingTimestamp`, else `startingOffsetsByTimestamp`, else `startingOffsets`
  (`earliest`, default, or JSON with -2 for earliest); `latest` is refused for batch reads;
- end: `endingTimestamp`, else `endingOffsetsByTimestamp`, else `endingOffsets` (`latest`,
  default, or JSON with -1 for latest); `earliest` is refused;
- `kafka.*` options go to the client with the prefix dropped; `kafka.bootstrap.servers` is
  required; the options Spark refuses (`auto.offset.reset`, deserializers, auto commit,
  interceptors) are refused here too.

A streaming read (`streaming=True`) starts at `latest` by default, takes `latest` as a start,
refuses every end option, and reads `maxOffsetsPerTrigger`. The sink's options
(`WriteOptions`): `topic` and the producer's `kafka.*`, serializers refused.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

EARLIEST = -2
LATEST = -1
TopicPartition = tuple[str, int]


class OptionError(ValueError):
    """A bad option: Spark's IllegalArgumentException."""


@dataclass(frozen=True)
class Subscribe:
    topics: tuple[str, ...]


@dataclass(frozen=True)
class SubscribePattern:
    pattern: str

    def matches(self, topic: str) -> bool:
        """Java's `Pattern.matcher(topic).matches()`: the whole name."""
        return re.fullmatch(self.pattern, topic) is not None


@dataclass(frozen=True)
class Assign:
    partitions: tuple[TopicPartition, ...]


Strategy = Subscribe | SubscribePattern | Assign


@dataclass(frozen=True)
class Earliest:
    pass


@dataclass(frozen=True)
class Latest:
    pass


@dataclass(frozen=True)
class SpecificOffsets:
    """Per partition; EARLIEST (-2) and LATEST (-1) stand for the log's ends."""

    offsets: Mapping[TopicPartition, int]


@dataclass(frozen=True)
class GlobalTimestamp:
    timestamp: int


@dataclass(frozen=True)
class SpecificTimestamps:
    timestamps: Mapping[TopicPartition, int]


OffsetLimit = Earliest | Latest | SpecificOffsets | GlobalTimestamp | SpecificTimestamps

REFUSED_CLIENT_CONFIGS = {
    "auto.offset.reset": "Kafka option 'auto.offset.reset' is not supported. Instead set the "
    "source option 'startingOffsets' to 'earliest' or 'latest' to specify where to start.",
    "key.deserializer": "Kafka option 'key.deserializer' is not supported as keys are read as "
    "bytes. Use DataFrame operations to explicitly deserialize the keys.",
    "value.deserializer": "Kafka option 'value.deserializer' is not supported as values are "
    "read as bytes. Use DataFrame operations to explicitly deserialize the values.",
    "enable.auto.commit": "Kafka option 'enable.auto.commit' is not supported",
    "interceptor.classes": "Kafka option 'interceptor.classes' is not supported",
}
REFUSED_PRODUCER_CONFIGS = {
    "key.serializer": "Kafka option 'key.serializer' is not supported as keys are serialized "
    "with ByteArraySerializer.",
    "value.serializer": "Kafka option 'value.serializer' is not supported as value are "
    "serialized with ByteArraySerializer.",
}
STRATEGIES = ("assign", "subscribe", "subscribepattern")


@dataclass(frozen=True)
class ReadOptions:
    strategy: Strategy
    starting: OffsetLimit
    ending: OffsetLimit
    client: dict[str, str]
    """The `kafka.*` options without their prefix."""
    include_headers: bool = False
    min_partitions: int | None = None
    fail_on_data_loss: bool = True
    no_match_latest: bool = False
    """startingOffsetsByTimestampStrategy=latest: a start timestamp past every record reads
    nothing instead of failing."""
    poll_timeout_ms: int = 120_000
    group_id_prefix: str = "spark-kafka-relation"
    max_offsets_per_trigger: int | None = None

    @property
    def isolation_level(self) -> str:
        return self.client.get("isolation.level", "read_uncommitted")


@dataclass(frozen=True)
class WriteOptions:
    topic: str | None
    """The `topic` option: every row's topic, whatever its `topic` column says."""
    client: dict[str, str]


def parse_options(options: Mapping[str, str], streaming: bool = False) -> ReadOptions:
    """Spark's option map (keys in any case) as ReadOptions; OptionError when it is bad."""
    params = _lower(options)
    client = _client(params, REFUSED_CLIENT_CONFIGS, "consumer")
    starting = _limit(params, "startingtimestamp", "startingoffsetsbytimestamp",
                      "startingoffsets", Latest() if streaming else Earliest())
    if streaming:
        for key, what in (("endingoffsets", "offset"), ("endingoffsetsbytimestamp", "timestamp"),
                          ("endingtimestamp", "timestamp")):
            if key in params:
                raise OptionError(f"ending {what} not valid in streaming queries")
        ending: OffsetLimit = Latest()
    else:
        ending = _limit(params, "endingtimestamp", "endingoffsetsbytimestamp",
                        "endingoffsets", Latest())
        _check_batch_limits(starting, ending)
    strategy_name = params.get("startingoffsetsbytimestampstrategy", "error").lower()
    if strategy_name not in ("error", "latest"):
        raise OptionError(f"startingOffsetsByTimestampStrategy must be 'error' or 'latest', "
                          f"not {strategy_name!r}")
    return ReadOptions(
        strategy=_strategy(params),
        starting=starting,
        ending=ending,
        client=client,
        include_headers=include_headers(params),
        min_partitions=_positive(params, "minpartitions"),
        fail_on_data_loss=_boolean(params, "failondataloss", True),
        no_match_latest=strategy_name == "latest",
        poll_timeout_ms=_positive(params, "kafkaconsumer.polltimeoutms") or 120_000,
        group_id_prefix=params.get("groupidprefix", "spark-kafka-source" if streaming
                                   else "spark-kafka-relation"),
        max_offsets_per_trigger=_positive(params, "maxoffsetspertrigger") if streaming else None,
    )


def parse_write_options(options: Mapping[str, str]) -> WriteOptions:
    """The sink's options (keys in any case); OptionError when they are bad."""
    params = _lower(options)
    topic = params.get("topic")
    return WriteOptions(topic=None if topic is None else topic.strip(),
                        client=_client(params, REFUSED_PRODUCER_CONFIGS, "producer"))


def include_headers(options: Mapping[str, str]) -> bool:
    return _boolean(_lower(options), "includeheaders", False)


def _lower(options: Mapping[str, str]) -> dict[str, str]:
    return {key.lower(): str(value) for key, value in options.items()}


def _client(params: Mapping[str, str], refused: Mapping[str, str], role: str
            ) -> dict[str, str]:
    """The `kafka.*` options without their prefix; those Spark refuses raise OptionError, as
    does a missing `kafka.bootstrap.servers`."""
    client = {key[len("kafka."):]: value for key, value in params.items()
              if key.startswith("kafka.")}
    for key, message in refused.items():
        if key in client:
            raise OptionError(message)
    if "bootstrap.servers" not in client:
        raise OptionError("Option 'kafka.bootstrap.servers' must be specified for "
                          f"configuring Kafka {role}")
    return client


def _strategy(params: Mapping[str, str]) -> Strategy:
    given = [name for name in STRATEGIES if name in params]
    if len(given) != 1:
        which = "One" if not given else "Only one"
        verb = "must" if not given else "can"
        raise OptionError(f"{which} of the following options {verb} be specified for Kafka "
                          "source: assign, subscribe, subscribePattern")
    name, value = given[0], params[given[0]].strip()
    if name == "assign":
        if not value.startswith("{"):
            raise OptionError(f"No topicpartitions to assign as specified value for option "
                              f"'assign' is '{value}'")
        data = _json(value, "assign")
        try:
            parts = sorted((str(topic), int(p)) for topic, ps in data.items() for p in ps)
        except (TypeError, ValueError, AttributeError):
            raise OptionError(f"Expected e.g. {{\"topicA\":[0,1]}}, got {value}") from None
        return Assign(tuple(parts))
    if name == "subscribe":
        topics = tuple(t.strip() for t in value.split(",") if t.strip())
        if not topics:
            raise OptionError(f"No topics to subscribe to as specified value for option "
                              f"'subscribe' is '{value}'")
        return Subscribe(topics)
    if not value:
        raise OptionError("Pattern to subscribe is empty as specified value for option "
                          f"'subscribePattern' is '{value}'")
    try:
        re.compile(value)
    except re.error as error:
        raise OptionError(f"subscribePattern {value!r} is not a valid regex: {error}") from None
    return SubscribePattern(value)


def _limit(params: Mapping[str, str], global_key: str, by_timestamp_key: str,
           offsets_key: str, default: OffsetLimit) -> OffsetLimit:
    """The first of the three options given, in Spark's order of preference."""
    if global_key in params:
        text = params[global_key].strip()
        try:
            return GlobalTimestamp(int(text))
        except ValueError:
            raise OptionError(f"Expected a single long value, got {text}") from None
    if by_timestamp_key in params:
        return SpecificTimestamps(_partition_map(params[by_timestamp_key], by_timestamp_key))
    if offsets_key not in params:
        return default
    text = params[offsets_key].strip()
    if text.lower() == "latest":
        return Latest()
    if text.lower() == "earliest":
        return Earliest()
    return SpecificOffsets(_partition_map(text, offsets_key))


def _partition_map(text: str, option: str) -> dict[TopicPartition, int]:
    data = _json(text, option)
    try:
        return {(str(topic), int(partition)): int(value)
                for topic, partitions in data.items()
                for partition, value in partitions.items()}
    except (TypeError, ValueError, AttributeError):
        raise OptionError(f"Expected e.g. {{\"topicA\":{{\"0\":23,\"1\":-1}},\"topicB\":"
                          f"{{\"0\":-2}}}}, got {text}") from None


def _json(text: str, option: str) -> Any:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise OptionError(f"option {option!r} is not valid JSON: {error}") from None
    if not isinstance(data, dict):
        raise OptionError(f"option {option!r} must be a JSON object, got {text}")
    return data


def _check_batch_limits(starting: OffsetLimit, ending: OffsetLimit) -> None:
    if isinstance(starting, Latest):
        raise OptionError("starting offset can't be latest for batch queries on Kafka")
    if isinstance(ending, Earliest):
        raise OptionError("ending offset can't be earliest for batch queries on Kafka")
    if isinstance(starting, SpecificOffsets):
        for tp, offset in starting.offsets.items():
            if offset == LATEST:
                raise OptionError(f"startingOffsets for {_name(tp)} can't be latest for "
                                  "batch queries on Kafka")
    if isinstance(ending, SpecificOffsets):
        for tp, offset in ending.offsets.items():
            if offset == EARLIEST:
                raise OptionError(f"ending offset for {_name(tp)} can't be earliest for "
                                  "batch queries on Kafka")
    pairs: tuple[Mapping[TopicPartition, int], Mapping[TopicPartition, int]] | None = None
    if isinstance(starting, SpecificOffsets) and isinstance(ending, SpecificOffsets):
        pairs = (starting.offsets, ending.offsets)
    elif isinstance(starting, SpecificTimestamps) and isinstance(ending, SpecificTimestamps):
        pairs = (starting.timestamps, ending.timestamps)
    if pairs is None:
        return
    start, end = pairs
    if set(start) != set(end):
        raise OptionError("The starting and ending offsets name different partitions: "
                          f"{sorted(map(_name, start))} and {sorted(map(_name, end))}")
    for tp, first in start.items():
        if first >= 0 and end[tp] >= 0 and first > end[tp]:
            raise OptionError(f"The start ({first}) is after the end ({end[tp]}) for "
                              f"{_name(tp)}")


def _boolean(params: Mapping[str, str], key: str, default: bool) -> bool:
    if key not in params:
        return default
    value = params[key].strip().lower()
    if value not in ("true", "false"):
        raise OptionError(f"option {key!r} must be true or false, not {params[key]!r}")
    return value == "true"


def _positive(params: Mapping[str, str], key: str) -> int | None:
    if key not in params:
        return None
    try:
        value = int(params[key])
    except ValueError:
        raise OptionError(f"{key} must be an integer, not {params[key]!r}") from None
    if value <= 0:
        raise OptionError(f"{key} must be positive")
    return value


def _name(tp: TopicPartition) -> str:
    return f"{tp[0]}-{tp[1]}"
