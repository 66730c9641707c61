"""JAAS configuration text as Kafka reads `sasl.jaas.config` (JaasConfig): one or more
`<LoginModule class> <required|requisite|sufficient|optional> key=value ... ;` entries, values
bare or double-quoted."""

from __future__ import annotations

import re
from dataclasses import dataclass

PLAIN_LOGIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
SCRAM_LOGIN_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"
CONTROL_FLAGS = ("required", "requisite", "sufficient", "optional")

_TOKEN = re.compile(r'\s*(?:"((?:[^"\\]|\\.)*)"|(;)|(=)|([^\s;="]+))', re.DOTALL)


class JaasError(ValueError):
    """Text that is not a JAAS configuration."""


@dataclass(frozen=True, slots=True)
class LoginModule:
    name: str
    flag: str
    options: dict[str, str]


def _tokens(text: str) -> list[tuple[str, str]]:
    """(kind, text) pairs: kind is `q` (quoted), `;`, `=` or `w` (a bare word)."""
    tokens = []
    position = 0
    while text[position:].strip():
        match = _TOKEN.match(text, position)
        if match is None:
            raise JaasError(f"unexpected character at {position}: {text[position:][:20]!r}")
        quoted, semicolon, equals, word = match.groups()
        if quoted is not None:
            tokens.append(("q", re.sub(r"\\(.)", r"\1", quoted)))
        elif semicolon:
            tokens.append((";", ";"))
        elif equals:
            tokens.append(("=", "="))
        else:
            tokens.append(("w", word))
        position = match.end()
    return tokens


def parse(text: str) -> list[LoginModule]:
    """Every login module of the configuration; raises JaasError."""
    tokens = _tokens(text)
    modules = []
    index = 0
    while index < len(tokens):
        if index + 1 >= len(tokens) or tokens[index][0] != "w" or tokens[index + 1][0] != "w":
            raise JaasError("expected a login module class and a control flag")
        name, flag = tokens[index][1], tokens[index + 1][1]
        if flag.lower() not in CONTROL_FLAGS:
            raise JaasError(f"invalid control flag {flag!r} of login module {name}")
        index += 2
        options: dict[str, str] = {}
        while index < len(tokens) and tokens[index][0] != ";":
            key, equals, value = tokens[index:index + 3] + [("", "")] * (3 - len(
                tokens[index:index + 3]))
            if key[0] != "w" or equals[0] != "=" or value[0] not in "wq" or not value[0]:
                raise JaasError(f"expected key=value in login module {name}")
            options[key[1]] = value[1]
            index += 3
        if index >= len(tokens):
            raise JaasError(f"login module {name} does not end with ';'")
        modules.append(LoginModule(name, flag.lower(), options))
        index += 1
    if not modules:
        raise JaasError("no login module")
    return modules


def plain_users(text: str) -> dict[str, str]:
    """The `user_<name>="<password>"` options of a PlainLoginModule entry."""
    return {key[5:]: value for module in parse(text) if module.name == PLAIN_LOGIN_MODULE
            for key, value in module.options.items() if key.startswith("user_")}


def client_credentials(text: str) -> tuple[str, str] | None:
    """`username` and `password` of the first module that has both: what a broker logs in
    with as a client of another broker."""
    for module in parse(text):
        if "username" in module.options and "password" in module.options:
            return module.options["username"], module.options["password"]
    return None
