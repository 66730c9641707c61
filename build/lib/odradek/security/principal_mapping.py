"""`ssl.principal.mapping.rules` (KIP-371, Kafka's SslPrincipalMapper): from a client
certificate's distinguished name (RFC 2253) to a principal name. Rules are `DEFAULT` (the
whole DN) or `RULE:pattern/replacement/[LU]`, tried in order; the first that matches names
the principal."""

from __future__ import annotations

import re
from dataclasses import dataclass

_RULE = r"(DEFAULT)|RULE:((?:\\.|[^\\/])*)/((?:\\.|[^\\/])*)/([LU]?).*?|(.*?)"
_SPLITTER = re.compile(r"\s*(" + _RULE + r")\s*(?:,\s*|$)")
_PARSER = re.compile(_RULE)
_BACK_REFERENCE = re.compile(r"\$(\d+)")


class NoMatchingRule(ValueError):
    """No rule maps the name: the connection is refused."""


@dataclass(frozen=True, slots=True)
class Rule:
    pattern: re.Pattern[str] | None
    replacement: str = ""
    case: str = ""
    """`L` lower-cases the result, `U` upper-cases it."""

    def apply(self, name: str) -> str | None:
        if self.pattern is None:
            return name
        if self.pattern.fullmatch(name) is None:
            return None
        result = self.pattern.sub(_java_replacement(self.replacement, self.pattern.groups),
                                  name)
        return result.lower() if self.case == "L" else result.upper() if self.case == "U" \
            else result


def _java_replacement(replacement: str, groups: int) -> str:
    """Java's `$n` back references as Python's `\\g<n>`; as Kafka does, a reference to a group
    that does not exist drops digits until it does, or stays literal."""
    def convert(match: re.Match[str]) -> str:
        digits = match.group(1)
        number = int(digits)
        while number > groups and number >= 10:
            number //= 10
        if digits.startswith("0") or number > groups:
            return match.group(0)
        rest = digits[len(str(number)):]
        return f"\\g<{number}>{rest}"
    escaped = replacement.replace("\\", "\\\\")
    return _BACK_REFERENCE.sub(convert, escaped)


def parse_rules(text: str) -> list[Rule]:
    """Rules from `ssl.principal.mapping.rules`; raises ValueError on an invalid rule."""
    rules = []
    for match in _SPLITTER.finditer(text.strip()):
        rule = match.group(1)
        if not rule and match.end() >= len(text.strip()):
            break
        parsed = _PARSER.match(rule)
        assert parsed is not None
        if parsed.end() != len(rule):
            raise ValueError(f"Invalid rule: `{rule}`, unmatched substring: "
                             f"`{rule[parsed.end():]}`")
        if parsed.group(1):
            rules.append(Rule(None))
        elif parsed.group(2) is not None:
            try:
                pattern = re.compile(parsed.group(2))
            except re.error as error:
                raise ValueError(f"Invalid rule: {rule}: {error}") from None
            rules.append(Rule(pattern, parsed.group(3), parsed.group(4)))
        elif parsed.group(5):
            raise ValueError(f"Invalid rule: {rule}")
    return rules


def map_name(rules: list[Rule], distinguished_name: str) -> str:
    for rule in rules:
        name = rule.apply(distinguished_name)
        if name is not None:
            return name
    raise NoMatchingRule(f"No rules apply to {distinguished_name}")


_KEYWORDS = {
    "commonName": "CN", "countryName": "C", "localityName": "L",
    "stateOrProvinceName": "ST", "organizationName": "O", "organizationalUnitName": "OU",
    "streetAddress": "STREET", "domainComponent": "DC", "userId": "UID",
}
"""The attribute keywords Java's X500Principal.getName() (RFC 2253) writes by name."""


def rfc2253(subject: tuple[tuple[tuple[str, str], ...], ...]) -> str:
    """A subject as Python's `getpeercert()` gives it, in RFC 2253 form (most specific RDN
    first, as Java's X500Principal writes it)."""
    def escape(value: str) -> str:
        escaped = re.sub(r'([,+"\\<>;])', r"\\\1", value)
        if escaped.startswith(("#", " ")):
            escaped = "\\" + escaped
        return escaped[:-1] + "\\ " if escaped.endswith(" ") else escaped
    return ",".join("+".join(f"{_KEYWORDS.get(key, key)}={escape(value)}" for key, value in rdn)
                    for rdn in reversed(subject))
