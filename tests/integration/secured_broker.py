"""A secured `odradek dev` broker for the tools' tests: an authorizer (super users admin and
ANONYMOUS), a PLAINTEXT listener (inter-broker), a SASL_SSL listener (SCRAM-SHA-256 and
-512, admin's SCRAM-SHA-512 credential set) and an SSL listener requiring client
certificates (principals by ssl.principal.mapping.rules), with the client properties of
each, in Kafka's and librdkafka's spelling."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from confluent_kafka.admin import (
    AdminClient,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialUpsertion,
)

from odradek.security.authorizer import STANDARD_AUTHORIZER
from tests.certificates import Authority
from tests.integration.broker_process import BrokerProcess, free_port

RULES = "RULE:^CN=([a-z]+),OU=clients,O=Odradek$/$1/,DEFAULT"
ADMIN_PASSWORD = "admin-secret"
TIMEOUT = 30


def kafka_sasl_properties(truststore: Path, user: str = "admin", password: str = ADMIN_PASSWORD,
                          mechanism: str = "SCRAM-SHA-512") -> dict[str, str]:
    """A Java client's properties for a SASL_SSL listener (SCRAM, the CA's PEM trust store)."""
    return {"security.protocol": "SASL_SSL", "sasl.mechanism": mechanism,
            "sasl.jaas.config": "org.apache.kafka.common.security.scram.ScramLoginModule "
                                f'required username="{user}" password="{password}";',
            "ssl.truststore.type": "PEM", "ssl.truststore.location": str(truststore)}


def kafka_ssl_properties(truststore: Path, keystore: Path) -> dict[str, str]:
    """A Java client's properties for an SSL listener with a client certificate (Kafka's PEM
    key store, KIP-651: a PKCS#8 key, then the chain)."""
    return {"security.protocol": "SSL", "ssl.truststore.type": "PEM",
            "ssl.truststore.location": str(truststore), "ssl.keystore.type": "PEM",
            "ssl.keystore.location": str(keystore)}


def write_properties(path: Path, properties: dict[str, str]) -> Path:
    """A Java properties file of a client's settings (bootstrap.servers left out: the tools
    take it as an argument)."""
    path.write_text("".join(f"{key}={value}\n" for key, value in properties.items()
                            if key != "bootstrap.servers"))
    return path


@dataclass
class Secured:
    broker: BrokerProcess
    ports: dict[str, int]
    root: Path
    truststore: Path
    admin_keystore: Path

    def bootstrap(self, listener: str) -> str:
        return f"127.0.0.1:{self.ports[listener]}"

    def kafka_properties(self, user: str = "admin", password: str = ADMIN_PASSWORD,
                         mechanism: str = "SCRAM-SHA-512") -> dict[str, str]:
        """A Java client's properties for the SASL_SSL listener."""
        return kafka_sasl_properties(self.truststore, user, password, mechanism)

    def librdkafka_config(self, user: str = "admin", password: str = ADMIN_PASSWORD,
                          mechanism: str = "SCRAM-SHA-512") -> dict[str, str]:
        """The same in librdkafka's spelling, with bootstrap.servers."""
        return {"bootstrap.servers": self.bootstrap("SASL_SSL"), "security.protocol": "SASL_SSL",
                "sasl.mechanism": mechanism, "sasl.username": user, "sasl.password": password,
                "ssl.ca.location": str(self.truststore)}

    def ssl_properties(self) -> dict[str, str]:
        """The admin's certificate on the SSL listener (Kafka's PEM key store, KIP-651)."""
        return kafka_ssl_properties(self.truststore, self.admin_keystore)

    def command_config(self, properties: dict[str, str]) -> Path:
        return write_properties(self.root / f"client-{uuid.uuid4().hex[:8]}.properties",
                                properties)


def security_overrides(root: Path, ca: Authority, truststore: Path) -> dict[str, str]:
    """A broker's security settings: the CA's PEM stores (the broker's certificate written under
    `root`), client certificates required on the SSL listener and mapped to user names by
    RULES, SCRAM-SHA-512, the StandardAuthorizer with admin and ANONYMOUS as super users."""
    return {
        "sasl.enabled.mechanisms": "SCRAM-SHA-512",
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(ca.issue("broker").write(root / "broker.pem")),
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(truststore),
        "listener.name.ssl.ssl.client.auth": "required",
        "ssl.principal.mapping.rules": RULES,
        "authorizer.class.name": STANDARD_AUTHORIZER,
        "super.users": "User:admin;User:ANONYMOUS",
    }


def running_secured(root: Path) -> Iterator[Secured]:
    """The broker, serving until the generator is closed."""
    ca = Authority()
    truststore = ca.write(root / "ca.pem")
    ports = {name: free_port() for name in ("PLAINTEXT", "SASL_SSL", "SSL")}
    broker = BrokerProcess(root / "data", root / "broker.log", {
        "listeners": ",".join(f"{name}://127.0.0.1:{port}" for name, port in ports.items()),
        "inter.broker.listener.name": "PLAINTEXT",
        **security_overrides(root, ca, truststore),
        "sasl.enabled.mechanisms": "SCRAM-SHA-256,SCRAM-SHA-512",
        "num.partitions": "1",
    }, port=ports["PLAINTEXT"])
    broker.start()
    try:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        upsert = UserScramCredentialUpsertion("admin", ScramCredentialInfo(
            ScramMechanism.SCRAM_SHA_512, 4096), ADMIN_PASSWORD.encode())
        for future in admin.alter_user_scram_credentials([upsert]).values():
            future.result(TIMEOUT)
        yield Secured(broker, ports, root, truststore,
                      ca.issue("admin", OU="clients", O="Odradek").write(root / "admin.pem"))
    finally:
        broker.stop()
