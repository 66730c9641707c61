"""SASL/PLAIN as Kafka serves it (PlainSaslServer with PlainServerCallbackHandler): the
client sends `authzid NUL username NUL password`, checked against the listener's JAAS users."""

from __future__ import annotations

import hmac
from collections.abc import Mapping

from odradek.security.sasl import SaslAuthenticationFailed as PlainError


class PlainServer:
    """One PLAIN exchange against `users` ({name: password}, from `user_<name>` options)."""

    def __init__(self, users: Mapping[str, str]) -> None:
        self._users = users
        self.complete = False
        self.authorization_id = ""

    def evaluate(self, message: bytes) -> bytes:
        tokens = message.decode(errors="replace").split("\0", 3)
        if len(tokens) != 3:
            raise PlainError(f"Invalid SASL/PLAIN response: expected 3 tokens, got "
                             f"{len(tokens)}")
        authzid, user, password = tokens
        if not user:
            raise PlainError("Authentication failed: username not specified")
        if not password:
            raise PlainError("Authentication failed: password not specified")
        expected = self._users.get(user)
        # compare even for an unknown user, so that timing does not tell which users exist
        matches = hmac.compare_digest((expected or "").encode(), password.encode())
        if expected is None or not matches:
            raise PlainError("Authentication failed: Invalid username or password")
        if authzid and authzid != user:
            raise PlainError("Authentication failed: Client requested an authorization id "
                             "that is different from username")
        self.authorization_id = user
        self.complete = True
        return b""
