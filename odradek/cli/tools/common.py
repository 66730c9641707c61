"""What every operator tool shares: Kafka's client options (`--bootstrap-server`,
`--command-config`, `--json`), the client properties built from them, output as a table or
JSON, and failures reported as one line with a non-zero exit status, never a traceback."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from odradek.config.config_providers import resolve_variables
from odradek.config.kafka_configs import InvalidConfigError, load_properties
from odradek.net.kafka_client.spelling import librdkafka_spelling

DEFAULT_BOOTSTRAP = "localhost:9092"
QUIET_CLIENT = {"log_level": "0"}
"""librdkafka logs every refused connection to stderr; the tools report failures themselves,
as one line."""


class ToolError(Exception):
    """A failure the tool reports as one line on stderr, with exit status 1."""


def add_client_options(parser: argparse.ArgumentParser, *, tabular: bool = True) -> None:
    """Kafka's `--bootstrap-server` and `--command-config`, and `--json` for tabular output."""
    parser.add_argument("--bootstrap-server", default=DEFAULT_BOOTSTRAP, metavar="HOST:PORT",
                        help=f"comma-separated brokers to bootstrap from "
                             f"(default {DEFAULT_BOOTSTRAP})")
    parser.add_argument("--command-config", metavar="FILE", type=Path,
                        help="a properties file of client configs")
    parser.add_argument("--timeout", type=float, default=30.0,
                        help="seconds to wait for each cluster answer (default 30)")
    if tabular:
        parser.add_argument("--json", action="store_true", help="print JSON, not a table")


def client_properties(args: argparse.Namespace) -> dict[str, str]:
    """The `--command-config` properties, with `bootstrap.servers` from `--bootstrap-server`."""
    path: Path | None = getattr(args, "command_config", None)
    properties = read_client_properties(path) if path is not None else {}
    properties["bootstrap.servers"] = args.bootstrap_server
    return properties


def read_client_properties(path: Path) -> dict[str, str]:
    """A client properties file with its config provider variables resolved
    (odradek.config.config_providers), as Kafka's clients resolve them; a ToolError names
    what cannot be read or resolved."""
    return _reading(path, lambda: resolve_variables(load_properties(path)))


def read_properties(path: Path) -> dict[str, str]:
    """A properties file as written (configs to set are passed on unresolved, for the broker
    to take); a file that cannot be read is a ToolError."""
    return _reading(path, lambda: load_properties(path))


def _reading(path: Path, read: Callable[[], dict[str, str]]) -> dict[str, str]:
    try:
        return read()
    except (OSError, UnicodeDecodeError) as error:
        raise ToolError(f"cannot read {path}: {_os_reason(error)}") from None
    except InvalidConfigError as error:
        raise ToolError(str(error)) from None


def librdkafka_config(properties: Mapping[str, str]) -> dict[str, str]:
    """Client properties in either spelling as confluent-kafka takes them
    (`librdkafka_spelling`); what has no counterpart is a ToolError naming it."""
    try:
        return librdkafka_spelling(properties)
    except InvalidConfigError as error:
        raise ToolError(str(error)) from None


def read_json_file(path: Path) -> Any:
    """A JSON file's content; a missing or malformed file is a ToolError."""
    try:
        return json.loads(Path(path).read_text())
    except (OSError, UnicodeDecodeError) as error:
        raise ToolError(f"cannot read {path}: {_os_reason(error)}") from None
    except json.JSONDecodeError as error:
        raise ToolError(f"{path} is not valid JSON: {error}") from None


def wait(future: Any, args: argparse.Namespace) -> Any:
    """A client future's result; librdkafka times a request out a little before us."""
    return future.result(timeout=args.timeout + 5)


def kafka_error(failure: BaseException | Any) -> Any | None:
    """The confluent-kafka KafkaError behind a failure (or the error itself), else None."""
    from confluent_kafka import KafkaError

    if isinstance(failure, KafkaError):
        return failure
    argument = failure.args[0] if getattr(failure, "args", None) else None
    return argument if isinstance(argument, KafkaError) else None


def describe_kafka_error(failure: BaseException | Any) -> str:
    """One line: the broker's message and Kafka's error name."""
    error = kafka_error(failure)
    if error is None:
        return str(failure) or type(failure).__name__
    return f"{error.str()} ({error.name()})"


def runs(tool: str, command: Callable[[argparse.Namespace], int | None]
         ) -> Callable[[argparse.Namespace], int]:
    """`command` as an `odradek` subcommand: a ToolError, a Kafka error, a timeout or Ctrl-C is
    one line on stderr and a non-zero exit status."""

    def run(args: argparse.Namespace) -> int:
        from confluent_kafka import KafkaException

        try:
            return command(args) or 0
        except ToolError as error:
            message = str(error)
        except KafkaException as error:
            message = describe_kafka_error(error)
            if _unreachable(error):
                message = f"cannot reach {args.bootstrap_server}: {message}"
        except TimeoutError:
            message = (f"timed out after {args.timeout:g} s waiting for "
                       f"{args.bootstrap_server}")
        except BrokenPipeError:
            return 1
        except KeyboardInterrupt:
            return 130
        print(f"odradek {tool}: {message}", file=sys.stderr)
        return 1

    return run


def _unreachable(failure: BaseException) -> bool:
    from confluent_kafka import KafkaError

    error = kafka_error(failure)
    return error is not None and error.code() in (KafkaError._TRANSPORT,
                                                   KafkaError._ALL_BROKERS_DOWN)


def _os_reason(error: BaseException) -> str:
    return getattr(error, "strerror", None) or str(error)


def table(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """Columns padded to their widest cell, as Kafka's tools print them."""
    cells = [list(map(str, header))] + [["" if c is None else str(c) for c in row]
                                        for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
                     for row in cells)


def print_json(value: Any) -> None:
    print(json.dumps(value, indent=2, sort_keys=False))


def print_rows(args: argparse.Namespace, header: Sequence[str],
               rows: Sequence[Sequence[Any]]) -> None:
    """A table, or with `--json` an array of objects keyed by the header."""
    if getattr(args, "json", False):
        print_json([dict(zip(header, row, strict=True)) for row in rows])
    else:
        print(table(header, rows))


def parse_key_values(text: str) -> dict[str, str]:
    """Kafka's `k1=v1,k2=[a,b]` config lists (square brackets group a value with commas)."""
    values: dict[str, str] = {}
    depth = 0
    current = ""
    items = []
    for char in text:
        depth += {"[": 1, "]": -1}.get(char, 0)
        if char == "," and depth == 0:
            items.append(current)
            current = ""
        else:
            current += char
    items.append(current)
    for item in filter(None, (i.strip() for i in items)):
        key, separator, value = item.partition("=")
        if not separator or not key.strip():
            raise ToolError(f"expected key=value, got {item!r}")
        value = value.strip()
        if value.startswith("[") and value.endswith("]"):
            value = value[1:-1]
        values[key.strip()] = value
    return values
