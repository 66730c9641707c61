"""Every operator tool fails as Kafka's tools do: an unreachable bootstrap server, an unknown
topic or a bad JSON file is one line on stderr and a non-zero exit status, never a
traceback. (Tools that act per partition print each partition's error on stdout, as Kafka's
do, and sum them up in that one line.) Each tool's own tests cover its other failures."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.integration.broker_process import ODRADEK, BrokerProcess
from tests.integration.tool_runs import one_line_failure

UNREACHABLE = "127.0.0.1:1"
TOPIC = "no-such-topic"
TOOLS_BEFORE_VERB = {"transactions", "quorum"}
"""Tools whose client options go before their verb, as in Kafka's."""


def run(tool: str, verb: list[str], bootstrap: str, *args: str,
        stdin: str = "") -> subprocess.CompletedProcess[str]:
    client = ["--bootstrap-server", bootstrap, "--timeout", "3"]
    command = ([tool, *client, *verb, *args] if tool in TOOLS_BEFORE_VERB
               else [tool, *verb, *client, *args])
    return subprocess.run([*ODRADEK, *command], capture_output=True, text=True, input=stdin,
                          timeout=120)




@pytest.fixture(scope="module")
def json_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("json")
    files = {"bad": '{"version": 1, "partitions": [', "unknown": (
        f'{{"version": 1, "partitions": [{{"topic": "{TOPIC}", "partition": 0, '
        f'"offset": 1, "replicas": [1]}}], "topics": [{{"topic": "{TOPIC}"}}]}}')}
    for name, text in files.items():
        (root / f"{name}.json").write_text(text)
    return {name: root / f"{name}.json" for name in files}


def json_tools(path: Path) -> list[tuple[str, list[str], list[str]]]:
    return [
        ("reassign", ["execute"], ["--reassignment-json-file", str(path)]),
        ("reassign", ["verify"], ["--reassignment-json-file", str(path)]),
        ("reassign", ["generate"], ["--topics-to-move-json-file", str(path),
                                    "--broker-list", "1"]),
        ("delete-records", [], ["--offset-json-file", str(path)]),
        ("leader-election", [], ["--election-type", "preferred",
                                 "--path-to-json-file", str(path)]),
    ]


UNREACHABLE_TOOLS = [
    ("topics", ["list"], []), ("topics", ["describe"], []),
    ("topics", ["create"], ["--topic", "t"]), ("configs", ["describe"], ["--topic", "t"]),
    ("configs", ["alter"], ["--topic", "t", "--add-config", "retention.ms=1"]),
    ("consume", [], ["--topic", "t"]), ("groups", ["list"], []),
    ("transactions", ["list"], []), ("reassign", ["list"], []),
    ("leader-election", [], ["--election-type", "preferred", "--all-topic-partitions"]),
    ("log-dirs", ["describe"], []), ("quorum", ["describe", "--status"], []),
    ("perf", ["consume"], ["--topic", "t", "--messages", "1"]),
]


@pytest.mark.parametrize(("tool", "verb", "args"), UNREACHABLE_TOOLS,
                         ids=lambda v: " ".join(v) if isinstance(v, list) else v)
def test_an_unreachable_bootstrap_server_is_one_line(tool: str, verb: list[str],
                                                    args: list[str]) -> None:
    one_line_failure(run(tool, verb, UNREACHABLE, *args))


def test_the_console_producer_reports_an_unreachable_server_in_one_line() -> None:
    one_line_failure(run("produce", [], UNREACHABLE, "--topic", "t", stdin="x\n"),
                     "produce", "failed delivery")


@pytest.mark.parametrize("index", range(5))
def test_a_malformed_json_file_is_one_line(broker: BrokerProcess, json_files: dict[str, Path],
                                          index: int) -> None:
    tool, verb, args = json_tools(json_files["bad"])[index]
    one_line_failure(run(tool, verb, broker.bootstrap, *args), None, "bad.json")


@pytest.mark.parametrize(("tool", "verb", "args"), [
    ("topics", ["describe"], ["--topic", TOPIC]),
    ("topics", ["delete"], ["--topic", TOPIC]),
    ("configs", ["describe"], ["--topic", TOPIC]),
    ("consume", [], ["--topic", TOPIC, "--timeout-ms", "2000"]),
    ("leader-election", [], ["--election-type", "preferred", "--topic", TOPIC,
                             "--partition", "0"]),
    ("transactions", ["describe-producers"], ["--topic", TOPIC, "--partition", "0"]),
], ids=lambda v: " ".join(v) if isinstance(v, list) else v)
def test_an_unknown_topic_is_one_line(broker: BrokerProcess, tool: str, verb: list[str],
                                     args: list[str]) -> None:
    result = run(tool, verb, broker.bootstrap, *args)
    one_line_failure(result)
    assert TOPIC in result.stderr + result.stdout, result.stderr


@pytest.mark.parametrize("index", range(4))
def test_a_json_file_naming_an_unknown_topic_is_one_line(
        broker: BrokerProcess, json_files: dict[str, Path], index: int) -> None:
    tool, verb, args = [t for t in json_tools(json_files["unknown"])
                        if t[1] != ["verify"]][index]
    result = run(tool, verb, broker.bootstrap, *args)
    one_line_failure(result)
    assert TOPIC in result.stderr + result.stdout, result.stderr
