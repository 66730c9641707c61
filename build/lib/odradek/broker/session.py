"""One connection's identity: its peer and who it is, as its listener's TLS or SASL
established it."""

from __future__ import annotations

from dataclasses import dataclass

from odradek.security.principal import ANONYMOUS, KafkaPrincipal
from odradek.security.sasl import SaslSession


@dataclass(slots=True)
class Session:
    peer: str
    principal: KafkaPrincipal = ANONYMOUS
    sasl: SaslSession | None = None
    """The SASL state on a SASL_PLAINTEXT or SASL_SSL listener."""
    failed_authentication_delay_ms: int = 0
    """connection.failed.authentication.delay.ms of the listener."""
