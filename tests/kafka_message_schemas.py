"""The coordinators' record schemas as Odradek's committed modules, generated from Kafka's
own message definitions: the `common/message/*.json` files inside the pinned Kafka's jars
(tests/jvm/pom.xml; `scripts/bootstrap.sh --dev` fetches them). After a Kafka upgrade,
regenerate them with

    .venv/bin/python -m tests.kafka_message_schemas

`tests/unit/protocol/test_message_schema.py` fails while a committed module differs. A
module holds one `message_schema.Message` per definition: its versions, its fields' names,
types, versions, tags and defaults, and nothing else of the JSON."""

from __future__ import annotations

import argparse
import json
import re
import sys
import zipfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from odradek.protocol.message_schema import ZERO, Field, Message
from tests.jvm_toolchain import KAFKA_CLASSPATH, ROOT

LINE = 100


@dataclass(frozen=True, slots=True)
class Family:
    """The records of one internal topic: the module they are generated into, the jar that
    defines them and the definitions' names."""

    module: str
    artifact: str
    names: tuple[str, ...]


FAMILIES = (
    Family("odradek/txn/log_schema.py", "kafka-transaction-coordinator",
           ("TransactionLogKey", "TransactionLogValue")),
    Family("odradek/group/record_schema.py", "kafka-group-coordinator", (
        "LegacyOffsetCommitKey", "OffsetCommitKey", "OffsetCommitValue", "GroupMetadataKey",
        "GroupMetadataValue", "ConsumerGroupMetadataKey", "ConsumerGroupMetadataValue",
        "ConsumerGroupPartitionMetadataKey", "ConsumerGroupPartitionMetadataValue",
        "ConsumerGroupMemberMetadataKey", "ConsumerGroupMemberMetadataValue",
        "ConsumerGroupTargetAssignmentMetadataKey", "ConsumerGroupTargetAssignmentMetadataValue",
        "ConsumerGroupTargetAssignmentMemberKey", "ConsumerGroupTargetAssignmentMemberValue",
        "ConsumerGroupCurrentMemberAssignmentKey", "ConsumerGroupCurrentMemberAssignmentValue",
        "ConsumerGroupRegularExpressionKey", "ConsumerGroupRegularExpressionValue",
        "ShareGroupMemberMetadataKey", "ShareGroupMemberMetadataValue", "ShareGroupMetadataKey",
        "ShareGroupMetadataValue", "ShareGroupTargetAssignmentMetadataKey",
        "ShareGroupTargetAssignmentMetadataValue", "ShareGroupTargetAssignmentMemberKey",
        "ShareGroupTargetAssignmentMemberValue", "ShareGroupCurrentMemberAssignmentKey",
        "ShareGroupCurrentMemberAssignmentValue", "ShareGroupStatePartitionMetadataKey",
        "ShareGroupStatePartitionMetadataValue")),
    Family("odradek/share/record_schema.py", "kafka-share-coordinator",
           ("ShareSnapshotKey", "ShareSnapshotValue", "ShareUpdateKey", "ShareUpdateValue")),
)


def parse_definition(text: str) -> dict[str, Any]:
    """A definition file: JSON with whole-line `//` comments, as Kafka writes them."""
    lines = [line for line in text.splitlines() if not line.lstrip().startswith("//")]
    definition: dict[str, Any] = json.loads("\n".join(lines))
    return definition


def snake_case(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", name).lower()


def message(definition: Mapping[str, Any]) -> Message:
    common = {s["name"]: s for s in definition.get("commonStructs", ())}
    return Message(definition["name"], definition.get("apiKey"), definition["validVersions"],
                   definition.get("flexibleVersions", "none"),
                   tuple(_field(f, common) for f in definition["fields"]))


def _field(spec: Mapping[str, Any], common: Mapping[str, Mapping[str, Any]]) -> Field:
    kind = spec["type"]
    element = kind.removeprefix("[]")
    inner = spec.get("fields")
    if inner is None and element in common:
        inner = common[element]["fields"]
    tagged = spec.get("taggedVersions", "none")
    return Field(
        name=snake_case(spec["name"]), type=kind, versions=spec.get("versions", tagged),
        nullable=spec.get("nullableVersions", "none"), tagged=tagged, tag=spec.get("tag"),
        default=ZERO if spec.get("default") is None else _default(kind, spec["default"]),
        fields=tuple(_field(f, common) for f in inner or ()),
        ignorable=bool(spec.get("ignorable", False)))


def _default(kind: str, value: Any) -> Any:
    """The JSON default as the field's Python value (Kafka writes numbers as strings too; the
    string "null" is null, a JSON null no default at all, as Kafka's generator reads them)."""
    if value == "null":
        return None
    if kind in ("int8", "int16", "int32", "int64", "uint16"):
        return int(value, 0) if isinstance(value, str) else int(value)
    if kind == "float64":
        return float(value)
    if kind == "bool":
        return value is True or str(value).lower() == "true"
    return value


def definitions(jar: Path, names: Iterable[str]) -> list[dict[str, Any]]:
    with zipfile.ZipFile(jar) as archive:
        return [parse_definition(archive.read(f"common/message/{name}.json").decode())
                for name in names]


def render(family: Family, jar: Path) -> str:
    """The generated module's text."""
    files = ", ".join(f"{name}.json" for name in family.names)
    header = (f'"""Generated by `python -m tests.kafka_message_schemas` from {jar.name}: '
              f"common/message/ {files}. Do not edit.")
    out = [_wrap_docstring(header) + '"""', "", "# ruff: noqa: E501", "",
           "from odradek.protocol.message_schema import Field, Message"]
    for index, definition in enumerate(definitions(jar, family.names)):
        schema = message(definition)
        out += [""] * (1 if index == 0 else 2) + [f"{snake_case(schema.name).upper()} = Message("
                        f"{_literal(schema.name)}, {_literal(schema.api_key)}, "
                        f"{_literal(schema.valid)}, {_literal(schema.flexible)}, ("]
        out += _fields(schema.fields, 1)
        out.append("))")
    return "\n".join(out) + "\n"


def _wrap_docstring(text: str) -> str:
    words, lines, line = text.split(" "), [], ""
    for word in words:
        if line and len(line) + 1 + len(word) > LINE - 3:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    lines.append(line)
    return "\n".join(lines).replace("/ ", "/")


def _fields(fields: Sequence[Field], depth: int) -> list[str]:
    indent = "    " * depth
    lines = []
    for field in fields:
        args = [_literal(field.name), _literal(field.type), _literal(field.versions)]
        for key in ("nullable", "tagged"):
            if getattr(field, key) != "none":
                args.append(f"{key}={_literal(getattr(field, key))}")
        if field.tag is not None:
            args.append(f"tag={field.tag}")
        if field.default is not ZERO:
            args.append(f"default={_literal(field.default)}")
        if field.ignorable:
            args.append("ignorable=True")
        call = f"{indent}Field({', '.join(args)}"
        if field.fields:
            lines.append(f"{call}, fields=(")
            lines += _fields(field.fields, depth + 1)
            lines.append(f"{indent})),")
        else:
            lines.append(f"{call}),")
    return lines


def _literal(value: Any) -> str:
    """A Python literal, strings in double quotes as the code base writes them."""
    return json.dumps(value) if isinstance(value, str) else repr(value)


def jar_of(artifact: str, classpath: Path) -> Path:
    for entry in classpath.read_text().strip().split(":"):
        if Path(entry).name.startswith(f"{artifact}-"):
            return Path(entry)
    raise LookupError(f"{artifact} is not on {classpath}: run scripts/bootstrap.sh --dev")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.kafka_message_schemas",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true",
                        help="change nothing; exit 1 if a module differs from the jars")
    parser.add_argument("--classpath", type=Path, default=KAFKA_CLASSPATH)
    args = parser.parse_args(argv)
    stale = []
    for family in FAMILIES:
        text = render(family, jar_of(family.artifact, args.classpath))
        path = ROOT / family.module
        if path.exists() and path.read_text() == text:
            continue
        stale.append(family.module)
        if not args.check:
            path.write_text(text)
    for module in stale:
        print(f"{'differs' if args.check else 'written'}: {module}")
    return 1 if args.check and stale else 0


if __name__ == "__main__":
    sys.exit(main())
