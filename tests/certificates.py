"""Test certificates made with `cryptography`: a CA that issues server and client
certificates (any validity window), written as Kafka's PEM stores (KIP-651)."""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

DAY = datetime.timedelta(days=1)


@dataclass(frozen=True)
class Issued:
    key_pem: str
    certificate_pem: str
    """The certificate, then its issuer's (the chain a key store holds)."""

    def write(self, path: Path) -> Path:
        """A PEM key store file: the private key, then the chain."""
        path.write_text(self.key_pem + self.certificate_pem)
        return path


def _name(**attributes: str) -> x509.Name:
    """The attributes most general first (C, O, OU, CN), so that the RFC 2253 form (most
    specific first) reads CN=...,OU=...,O=...,C=..."""
    oids = {"C": NameOID.COUNTRY_NAME, "O": NameOID.ORGANIZATION_NAME,
            "OU": NameOID.ORGANIZATIONAL_UNIT_NAME, "CN": NameOID.COMMON_NAME}
    return x509.Name([x509.NameAttribute(oid, attributes[key])
                      for key, oid in oids.items() if key in attributes])


def _pem(certificate: x509.Certificate) -> str:
    return certificate.public_bytes(serialization.Encoding.PEM).decode()


class Authority:
    """A self-signed CA."""

    def __init__(self, name: str = "Odradek Test CA") -> None:
        self.key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.UTC)
        subject = _name(CN=name)
        self.certificate = (
            x509.CertificateBuilder().subject_name(subject).issuer_name(subject)
            .public_key(self.key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - DAY).not_valid_after(now + 30 * DAY)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(self.key, hashes.SHA256()))

    @property
    def pem(self) -> str:
        return _pem(self.certificate)

    def write(self, path: Path) -> Path:
        """A PEM trust store file holding this CA."""
        path.write_text(self.pem)
        return path

    def issue(self, common_name: str, hosts: tuple[str, ...] = ("127.0.0.1", "localhost"),
              not_before: datetime.datetime | None = None,
              not_after: datetime.datetime | None = None, **subject: str) -> Issued:
        """A certificate for servers and clients named `hosts` (IP addresses or DNS names)."""
        now = datetime.datetime.now(datetime.UTC)
        key = ec.generate_private_key(ec.SECP256R1())
        names: list[x509.GeneralName] = []
        for host in hosts:
            try:
                names.append(x509.IPAddress(ipaddress.ip_address(host)))
            except ValueError:
                names.append(x509.DNSName(host))
        certificate = (
            x509.CertificateBuilder().subject_name(_name(CN=common_name, **subject))
            .issuer_name(self.certificate.subject).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(not_before or now - DAY).not_valid_after(not_after or now + DAY)
            .add_extension(x509.SubjectAlternativeName(names), critical=False)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH,
                                                  ExtendedKeyUsageOID.CLIENT_AUTH]),
                           critical=False)
            .sign(self.key, hashes.SHA256()))
        key_pem = key.private_bytes(serialization.Encoding.PEM,
                                    serialization.PrivateFormat.PKCS8,
                                    serialization.NoEncryption()).decode()
        return Issued(key_pem, _pem(certificate) + self.pem)

    def expired(self, common_name: str, **subject: str) -> Issued:
        now = datetime.datetime.now(datetime.UTC)
        return self.issue(common_name, not_before=now - 3 * DAY, not_after=now - DAY,
                          **subject)
