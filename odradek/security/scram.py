"""SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677) as Kafka serves them
(ScramSaslServer, ScramFormatter, ScramMessages): the credential formulas and the server's
side of the exchange. Pure: the shell supplies the server nonce and the credential lookup.

Kafka's limits hold: usernames are SASL names (`=2C` for `,`, `=3D` for `=`), passwords are
hashed as UTF-8 without SASLprep, and a credential needs 4096 to 16384 iterations."""

from __future__ import annotations

import base64
import binascii
import enum
import hashlib
import hmac
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from odradek.security.sasl import SaslAuthenticationFailed


class ScramMechanism(enum.Enum):
    """Kafka's ScramMechanism: the type byte AlterUserScramCredentials uses, the hash."""

    SCRAM_SHA_256 = (1, "sha256")
    SCRAM_SHA_512 = (2, "sha512")

    def __init__(self, type_id: int, hash_name: str) -> None:
        self.type_id = type_id
        self.hash_name = hash_name

    @property
    def mechanism_name(self) -> str:
        """`SCRAM-SHA-256`, as SaslHandshake names it."""
        return self.name.replace("_", "-")

    @classmethod
    def from_type(cls, type_id: int) -> ScramMechanism | None:
        return next((m for m in cls if m.type_id == type_id), None)

    @classmethod
    def from_name(cls, name: str) -> ScramMechanism | None:
        return next((m for m in cls if m.mechanism_name == name), None)


MIN_ITERATIONS = 4096
MAX_ITERATIONS = 16384


@dataclass(frozen=True, slots=True)
class ScramCredential:
    """What the server stores for a user: never the password (Kafka's ScramCredential)."""

    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int


class StoredForm(Protocol):
    """A credential as the metadata log holds it (UserScramCredentialRecord)."""

    @property
    def salt(self) -> str: ...
    @property
    def stored_key(self) -> str: ...
    @property
    def server_key(self) -> str: ...
    @property
    def iterations(self) -> int: ...


class ScramError(ValueError):
    """The exchange failed; the client gets Kafka's generic message, not this one."""


def _hmac(mechanism: ScramMechanism, key: bytes, data: bytes) -> bytes:
    return hmac.new(key, data, mechanism.hash_name).digest()


def salted_password(mechanism: ScramMechanism, password: str, salt: bytes,
                    iterations: int) -> bytes:
    """Hi(password, salt, i): PBKDF2 with the mechanism's HMAC."""
    return hashlib.pbkdf2_hmac(mechanism.hash_name, password.encode(), salt, iterations)


def credential_from_salted(mechanism: ScramMechanism, salted: bytes, salt: bytes,
                           iterations: int) -> ScramCredential:
    """The stored form of a salted password (what AlterUserScramCredentials sends)."""
    client_key = _hmac(mechanism, salted, b"Client Key")
    stored_key = hashlib.new(mechanism.hash_name, client_key).digest()
    server_key = _hmac(mechanism, salted, b"Server Key")
    return ScramCredential(salt, stored_key, server_key, iterations)


def stored_credential(record: StoredForm) -> ScramCredential:
    """A credential from its metadata record (salt and keys in base64)."""
    return ScramCredential(base64.b64decode(record.salt), base64.b64decode(record.stored_key),
                           base64.b64decode(record.server_key), record.iterations)


def credential(mechanism: ScramMechanism, password: str, salt: bytes,
               iterations: int) -> ScramCredential:
    return credential_from_salted(
        mechanism, salted_password(mechanism, password, salt, iterations), salt, iterations)


def username(sasl_name: str) -> str:
    """Kafka's ScramFormatter.username: `=2C` is `,`, `=3D` is `=`, any other `=` is bad."""
    name = sasl_name.replace("=2C", ",")
    if "=" in name.replace("=3D", ""):
        raise ScramError(f"Invalid username: {sasl_name}")
    return name.replace("=3D", "=")


def sasl_name(user: str) -> str:
    return user.replace("=", "=3D").replace(",", "=2C")


_ASCII_SAFE = r"[\x01-\x2b\x2d-\x3c\x3e-\x7f]"
"""ScramMessages' VALUE_SAFE character: ASCII but NUL, `=` and `,`. (Written as the ranges
kept: a negated class reaching U+10FFFF took 30 ms of every start to compile.)"""
_SASLNAME = f"(?:{_ASCII_SAFE}|=2C|=3D)+"
_VALUE = r"[\x01-\x2b\x2d-\x7f]+"
"""ASCII but NUL and `,`."""
_PRINTABLE = r"[\x21-\x2b\x2d-\x7e]+"
_BASE64 = "(?:[a-zA-Z0-9/+]{4})*(?:[a-zA-Z0-9/+]{3}=|[a-zA-Z0-9/+]{2}==)?"
_EXTENSIONS = f"(?:,[A-Za-z]+={_VALUE})*"
_CLIENT_FIRST = re.compile(
    f"n,(?:a=(?P<authzid>{_SASLNAME}))?,(?:m={_VALUE},)?n=(?P<name>{_SASLNAME}),"
    f"r=(?P<nonce>{_PRINTABLE})(?P<extensions>{_EXTENSIONS})")
_CLIENT_FINAL = re.compile(
    f"c=(?P<channel>{_BASE64}),r=(?P<nonce>{_PRINTABLE}){_EXTENSIONS},p=(?P<proof>{_BASE64})")


def _text(message: bytes, kind: str) -> str:
    try:
        return message.decode()
    except UnicodeDecodeError:
        raise ScramError(f"Invalid SCRAM {kind} message format: not UTF-8") from None


CredentialLookup = Callable[[str, ScramMechanism], ScramCredential | None]


class ScramServer:
    """The server's side of one SCRAM exchange: `evaluate` the client-first message (answering
    server-first), then the client-final one (answering server-final). Any failure raises
    ScramError and leaves the exchange failed."""

    def __init__(self, mechanism: ScramMechanism, lookup: CredentialLookup,
                 server_nonce: str) -> None:
        self.mechanism = mechanism
        self._lookup = lookup
        self._server_nonce = server_nonce
        self._state = "first"
        self._client_first_bare = ""
        self._server_first = ""
        self._gs2_header = ""
        self._nonce = ""
        self._credential: ScramCredential | None = None
        self.authorization_id = ""
        """The authenticated user, once `complete`."""

    @property
    def complete(self) -> bool:
        return self._state == "complete"

    def evaluate(self, message: bytes) -> bytes:
        try:
            if self._state == "first":
                return self._client_first(message)
            if self._state == "final":
                return self._client_final(message)
            raise ScramError(f"Unexpected challenge in Sasl server state {self._state}")
        except (ScramError, SaslAuthenticationFailed):
            self._state = "failed"
            self._credential = None
            raise

    def _client_first(self, message: bytes) -> bytes:
        text = _text(message, "client first")
        match = _CLIENT_FIRST.fullmatch(text)
        if match is None:
            raise ScramError(f"Invalid SCRAM client first message format: {text}")
        user = username(match["name"])
        found = self._lookup(user, self.mechanism)
        if found is None:
            raise ScramError("Authentication failed: Invalid user credentials")
        authzid = match["authzid"] or ""
        if authzid and authzid != user:
            raise SaslAuthenticationFailed("Authentication failed: Client requested an "
                                           "authorization id that is different from username")
        if found.iterations < MIN_ITERATIONS:
            raise ScramError(f"Iterations {found.iterations} is less than the minimum "
                             f"{MIN_ITERATIONS} for {self.mechanism.mechanism_name}")
        self._credential = found
        self.authorization_id = user
        self._gs2_header = text[:match.start("name") - 2]
        self._client_first_bare = text[len(self._gs2_header):]
        self._nonce = match["nonce"] + self._server_nonce
        salt = base64.b64encode(found.salt).decode()
        self._server_first = f"r={self._nonce},s={salt},i={found.iterations}"
        self._state = "final"
        return self._server_first.encode()

    def _client_final(self, message: bytes) -> bytes:
        text = _text(message, "client final")
        match = _CLIENT_FINAL.fullmatch(text)
        if match is None:
            raise ScramError(f"Invalid SCRAM client final message format: {text}")
        # Kafka checks only that the nonce ends with the server-first one: librdkafka before
        # 2.1 sends the client nonce twice
        if not match["nonce"].endswith(self._nonce):
            raise ScramError("Invalid client nonce in the final client message.")
        try:
            channel = base64.b64decode(match["channel"], validate=True)
            proof = base64.b64decode(match["proof"], validate=True)
        except binascii.Error:
            raise ScramError("Invalid SCRAM client final message format: bad base64") from None
        if channel != self._gs2_header.encode():
            raise ScramError("Invalid channel binding in the final client message.")
        found = self._credential
        assert found is not None
        without_proof = text[:match.start("proof") - 3]
        auth_message = f"{self._client_first_bare},{self._server_first},{without_proof}".encode()
        signature = _hmac(self.mechanism, found.stored_key, auth_message)
        if len(proof) != len(signature):
            raise ScramError("Invalid client credentials")
        client_key = bytes(a ^ b for a, b in zip(proof, signature, strict=True))
        computed = hashlib.new(self.mechanism.hash_name, client_key).digest()
        if not hmac.compare_digest(computed, found.stored_key):
            raise ScramError("Invalid client credentials")
        server_signature = _hmac(self.mechanism, found.server_key, auth_message)
        self._credential = None
        self._state = "complete"
        return b"v=" + base64.b64encode(server_signature)


_SERVER_FIRST = re.compile(
    f"(?:m={_VALUE},)?r=(?P<nonce>{_PRINTABLE}),s=(?P<salt>{_BASE64}),i=(?P<iterations>[0-9]+)"
    f"{_EXTENSIONS}")
_SERVER_FINAL = re.compile(f"(?:e=(?P<error>{_VALUE})|v=(?P<signature>{_BASE64})){_EXTENSIONS}")


class ScramClient:
    """The client's side of one SCRAM exchange (Kafka's ScramSaslClient), without channel
    binding: `first_message`, then `final_message` answering the server-first message,
    then `verify` the server-final one. A bad or refused exchange raises ScramError."""

    def __init__(self, mechanism: ScramMechanism, user: str, password: str,
                 client_nonce: str) -> None:
        self.mechanism = mechanism
        self._password = password
        self._nonce = client_nonce
        self._client_first_bare = f"n={sasl_name(user)},r={client_nonce}"
        self._auth_message = b""
        self._server_key = b""

    def first_message(self) -> bytes:
        return f"n,,{self._client_first_bare}".encode()

    def final_message(self, server_first: bytes) -> bytes:
        text = _text(server_first, "server first")
        match = _SERVER_FIRST.fullmatch(text)
        if match is None:
            raise ScramError(f"Invalid SCRAM server first message format: {text}")
        if not match["nonce"].startswith(self._nonce):
            raise ScramError("Invalid server nonce: does not start with client nonce")
        iterations = int(match["iterations"])
        if iterations < MIN_ITERATIONS:
            raise ScramError(f"Requested iterations {iterations} is less than the minimum "
                             f"{MIN_ITERATIONS} for {self.mechanism.mechanism_name}")
        salt = base64.b64decode(match["salt"])
        salted = salted_password(self.mechanism, self._password, salt, iterations)
        client_key = _hmac(self.mechanism, salted, b"Client Key")
        stored_key = hashlib.new(self.mechanism.hash_name, client_key).digest()
        without_proof = f"c={base64.b64encode(b'n,,').decode()},r={match['nonce']}"
        self._auth_message = f"{self._client_first_bare},{text},{without_proof}".encode()
        signature = _hmac(self.mechanism, stored_key, self._auth_message)
        proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
        self._server_key = _hmac(self.mechanism, salted, b"Server Key")
        return f"{without_proof},p={base64.b64encode(proof).decode()}".encode()

    def verify(self, server_final: bytes) -> None:
        text = _text(server_final, "server final")
        match = _SERVER_FINAL.fullmatch(text)
        if match is None:
            raise ScramError(f"Invalid SCRAM server final message format: {text}")
        if match["error"] is not None:
            raise ScramError(f"Sasl authentication using {self.mechanism.mechanism_name} "
                             f"failed with error: {match['error']}")
        expected = _hmac(self.mechanism, self._server_key, self._auth_message)
        if not hmac.compare_digest(base64.b64decode(match["signature"]), expected):
            raise ScramError("Invalid server signature in server final message")
