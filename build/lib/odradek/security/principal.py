"""Kafka principals: `User:alice`. A connection is `User:ANONYMOUS` until TLS or SASL names
it, as in Kafka's PLAINTEXT listeners."""

from __future__ import annotations

from dataclasses import dataclass

USER = "User"


@dataclass(frozen=True, slots=True)
class KafkaPrincipal:
    principal_type: str
    name: str

    def __str__(self) -> str:
        return f"{self.principal_type}:{self.name}"

    @classmethod
    def parse(cls, text: str) -> KafkaPrincipal:
        """`User:alice` (the form ACLs and `super.users` use)."""
        principal_type, separator, name = text.partition(":")
        if not separator or not principal_type or not name:
            raise ValueError(f"principal {text!r} is not of the form Type:name")
        return cls(principal_type, name)


ANONYMOUS = KafkaPrincipal(USER, "ANONYMOUS")
