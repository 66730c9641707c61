"""The operator tools against a secured broker: one `odradek dev` with an authorizer, a
SASL_SSL listener (SCRAM-SHA-512) and an SSL listener (client certificates required). Each
tool family works with a `--command-config` file as the admin, in Kafka's spelling of the
client properties and in librdkafka's; a wrong password fails in one line; SCRAM users are
added, described and deleted with `odradek configs`, and a real client logs in with them
(or no longer can)."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException

from tests.certificates import Authority
from tests.integration.broker_process import ODRADEK
from tests.integration.clients import unique
from tests.integration.secured_broker import ADMIN_PASSWORD, TIMEOUT, Secured, running_secured
from tests.integration.tool_runs import one_line_failure, succeeded
from tests.waiting import wait_until

CLIENT = "<client options>"


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Secured]:
    yield from running_secured(tmp_path_factory.mktemp("tools-security"))


def tool(secured: Secured, listener: str, config: Path | None, *args: str,
         stdin: str | None = None, config_option: str = "--command-config"
         ) -> subprocess.CompletedProcess[str]:
    """`odradek *args` with the client options at CLIENT in args, or at the end."""
    options = ["--bootstrap-server", secured.bootstrap(listener), "--timeout", "20"]
    if config is not None:
        options += [config_option, str(config)]
    if CLIENT not in args:
        args = (*args, CLIENT)
    command = [*ODRADEK, *(o for arg in args for o in (options if arg == CLIENT else [arg]))]
    return subprocess.run(command, capture_output=True, text=True, input=stdin, timeout=90)


def every_family(secured: Secured, listener: str, config: Path) -> None:
    """Each tool family, as the admin: topics, configs, acls, produce and consume, groups,
    quorum, log-dirs and transactions."""
    def ok(*args: str, stdin: str | None = None, option: str = "--command-config") -> str:
        return succeeded(tool(secured, listener, config, *args, stdin=stdin,
                              config_option=option))

    topic, group = unique("sec"), unique("sec-group")
    ok("topics", "create", "--topic", topic, "--partitions", "1")
    assert topic in ok("topics", "list").split()
    ok("configs", "alter", "--topic", topic, "--add-config", "retention.ms=60000")
    assert "retention.ms=60000" in ok("configs", "describe", "--topic", topic)
    ok("acls", "add", "--allow-principal", "User:reader", "--operation", "Read",
       "--topic", topic)
    assert "User:reader" in ok("acls", "list", "--topic", topic)
    ok("produce", "--topic", topic, stdin="one\ntwo\n", option="--producer.config")
    consumed = ok("consume", "--topic", topic, "--group", group, "--from-beginning",
                  "--max-messages", "2", option="--consumer.config")
    assert consumed.split() == ["one", "two"]
    assert group in ok("groups", "list")
    assert topic in ok("groups", "describe", "--group", group)
    assert "LeaderId" in ok("quorum", CLIENT, "describe", "--status")
    assert topic in ok("log-dirs", "describe", "--topic-list", topic)
    ok("transactions", CLIENT, "list")


def test_every_tool_family_over_sasl_ssl_in_kafkas_spelling(secured: Secured) -> None:
    every_family(secured, "SASL_SSL", secured.command_config(secured.kafka_properties()))


def test_every_tool_family_over_sasl_ssl_in_librdkafkas_spelling(secured: Secured) -> None:
    every_family(secured, "SASL_SSL", secured.command_config(secured.librdkafka_config()))


def test_every_tool_family_over_ssl_with_a_client_certificate(secured: Secured) -> None:
    every_family(secured, "SSL", secured.command_config(secured.ssl_properties()))


WRONG_PASSWORD_RUNS = {
    "topics": ("topics", "list"),
    "configs": ("configs", "describe", "--broker", "1"),
    "acls": ("acls", "list"),
    "produce": ("produce", "--topic", "orders"),
    "consume": ("consume", "--topic", "orders", "--max-messages", "1"),
    "groups": ("groups", "list"),
    "quorum": ("quorum", CLIENT, "describe", "--status"),
}


@pytest.mark.parametrize("family", WRONG_PASSWORD_RUNS)
def test_a_wrong_password_fails_in_one_line(secured: Secured, family: str) -> None:
    config = secured.command_config(secured.kafka_properties(password="wrong"))
    result = tool(secured, "SASL_SSL", config, *WRONG_PASSWORD_RUNS[family], stdin="v\n")
    line = one_line_failure(result, None if family == "groups" else family)
    assert "SASL SCRAM-SHA-512 login as admin failed" in line, line
    assert "sasl_authentication_failed" in line.lower(), line
    good = secured.command_config(secured.kafka_properties())
    succeeded(tool(secured, "SASL_SSL", good, "topics", "list"))


def login(secured: Secured, user: str, password: str, mechanism: str) -> KafkaError | None:
    """confluent-kafka logging in on the SASL_SSL listener: None once the broker answered a
    Metadata request, else the authentication error librdkafka reported."""
    errors: list[KafkaError] = []
    consumer = Consumer({**secured.librdkafka_config(user, password, mechanism),
                         "group.id": "login-probe", "error_cb": errors.append})

    def refused() -> bool:
        return any(error.code() == KafkaError._AUTHENTICATION for error in errors)

    def settled() -> bool:
        if refused():
            return True
        consumer.list_topics(timeout=0.5)
        return True

    try:
        wait_until(settled, TIMEOUT, f"{user} logging in with {mechanism}",
                   between=lambda: consumer.poll(0.1), ignoring=KafkaException)
    finally:
        consumer.close()
    return next((error for error in errors if error.code() == KafkaError._AUTHENTICATION), None)


def configs(secured: Secured, *args: str, user: str = "admin",
            password: str = ADMIN_PASSWORD) -> subprocess.CompletedProcess[str]:
    config = secured.command_config(secured.kafka_properties(user, password))
    return tool(secured, "SASL_SSL", config, "configs", *args)


def test_a_scram_user_is_added_logs_in_is_described_and_deleted(secured: Secured) -> None:
    user = unique("carol")
    secret = f"{user}-secret"
    assert login(secured, user, secret, "SCRAM-SHA-256") is not None

    added = succeeded(configs(
        secured, "alter", "--entity-type", "users", "--entity-name", user, "--add-config",
        f"SCRAM-SHA-256=[iterations=8192,password={secret}],SCRAM-SHA-512=[password={secret}]"))
    assert added == f"Completed updating config for user {user}.\n"
    assert login(secured, user, secret, "SCRAM-SHA-256") is None
    assert login(secured, user, secret, "SCRAM-SHA-512") is None
    assert login(secured, user, "not-the-secret", "SCRAM-SHA-512") is not None

    described = succeeded(configs(secured, "describe", "--entity-type", "users",
                                  "--entity-name", user))
    assert described == (f"SCRAM credential configs for user-principal '{user}' are "
                         "SCRAM-SHA-256=iterations=8192, SCRAM-SHA-512=iterations=4096\n")
    every_user = succeeded(configs(secured, "describe", "--entity-type", "users"))
    assert described in every_user
    assert "SCRAM credential configs for user-principal 'admin' are" in every_user
    assert secret not in every_user

    succeeded(configs(secured, "alter", "--user", user, "--delete-config", "SCRAM-SHA-512"))
    assert login(secured, user, secret, "SCRAM-SHA-512") is not None
    assert login(secured, user, secret, "SCRAM-SHA-256") is None
    succeeded(configs(secured, "alter", "--user", user, "--delete-config", "SCRAM-SHA-256"))
    assert succeeded(configs(secured, "describe", "--user", user)) == ""
    assert login(secured, user, secret, "SCRAM-SHA-256") is not None


def test_quota_configs_of_a_scram_user_are_kept_apart(secured: Secured) -> None:
    user = unique("dave")
    succeeded(configs(secured, "alter", "--user", user, "--add-config",
                      f"SCRAM-SHA-512=[password={user}-secret]"))
    succeeded(configs(secured, "alter", "--user", user, "--add-config",
                      "producer_byte_rate=1024"))
    assert succeeded(configs(secured, "describe", "--user", user)).splitlines() == [
        f"Quota configs for user-principal '{user}' are producer_byte_rate=1024.0",
        f"SCRAM credential configs for user-principal '{user}' are "
        "SCRAM-SHA-512=iterations=4096"]
    assert succeeded(configs(secured, "describe", "--user-defaults")) == ""
    one_line_failure(configs(secured, "alter", "--user", user, "--add-config",
                             "SCRAM-SHA-256=[password=x],consumer_byte_rate=5"), "configs",
                     "Cannot alter both quota and SCRAM credential configs simultaneously for "
                     "'users' using --bootstrap-server.")


@pytest.mark.parametrize(("args", "message"), [
    (("--user", "{user}", "--add-config", "SCRAM-SHA-256=[iterations=1000,password=x]"),
     "Iterations 1000 is less than the minimum 4096 required for SCRAM-SHA-256"),
    (("--user", "{user}", "--add-config", "SCRAM-SHA-512=[iterations=16385,password=x]"),
     "Too many iterations: 16385 is more than the maximum 16384 allowed for SCRAM-SHA-512"),
    (("--user", "{user}", "--add-config", "SCRAM-SHA-256=[iterations=many,password=x]"),
     "Invalid credential property SCRAM-SHA-256=iterations=many,password=x"),
    (("--user", "{user}", "--add-config", "SCRAM-SHA-256=[secret=x]"),
     "Invalid credential property SCRAM-SHA-256=secret=x"),
    (("--user-defaults", "--add-config", "SCRAM-SHA-256=[password=x]"),
     "The use of --entity-default or --user-defaults is not allowed with User SCRAM "
     "Credentials using --bootstrap-server."),
    (("--user", "{user}", "--client", "c", "--add-config", "SCRAM-SHA-256=[password=x]"),
     "Only quota configs can be added for 'clients' using --bootstrap-server. Unexpected "
     "config names: SCRAM-SHA-256"),
    (("--user", "{user}", "--delete-config", "SCRAM-SHA-256"),
     "altering the SCRAM-SHA-256 credential of user {user}: RESOURCE_NOT_FOUND"),
])
def test_bad_scram_configs_get_kafka_configs_messages(secured: Secured, args: tuple[str, ...],
                                                      message: str) -> None:
    user = unique("erin")
    result = configs(secured, "alter", *(arg.format(user=user) for arg in args))
    one_line_failure(result, "configs", message.format(user=user))
    assert succeeded(configs(secured, "describe", "--user", user)) == ""


def test_authorization_failures_read_as_kafkas(secured: Secured) -> None:
    """A user without ACLs: the wire tools and the librdkafka ones both say what Kafka says."""
    user = unique("frank")
    succeeded(configs(secured, "alter", "--user", user, "--add-config",
                      f"SCRAM-SHA-512=[password={user}-secret]"))
    config = secured.command_config(secured.kafka_properties(user, f"{user}-secret"))
    for args in (("configs", "describe", "--broker", "1"),
                 ("configs", "alter", "--user", user, "--add-config",
                  "SCRAM-SHA-512=[password=mine]"),
                 ("acls", "list"),
                 ("acls", "add", "--allow-principal", f"User:{user}", "--operation", "All",
                  "--cluster"),
                 ("quorum", CLIENT, "describe", "--status")):
        line = one_line_failure(tool(secured, "SASL_SSL", config, *args), args[0])
        assert "Cluster authorization failed" in line and "CLUSTER_AUTHORIZATION_FAILED" in line
    assert login(secured, user, f"{user}-secret", "SCRAM-SHA-512") is None


@pytest.mark.parametrize("family", ["topics", "configs"])
def test_tls_refusals_fail_in_one_line(secured: Secured, family: str, tmp_path: Path) -> None:
    """No client certificate where the listener requires one, and a broker certificate from
    a CA the client does not trust: one line each, from the tools on either client."""
    args = WRONG_PASSWORD_RUNS[family]
    no_certificate = {k: v for k, v in secured.ssl_properties().items()
                      if not k.startswith("ssl.keystore")}
    line = one_line_failure(tool(secured, "SSL", secured.command_config(no_certificate), *args),
                            family)
    assert "the broker closed the connection" in line, line
    other_ca = {**secured.kafka_properties(),
                "ssl.truststore.location": str(Authority("Other CA").write(tmp_path / "o.pem"))}
    line = one_line_failure(tool(secured, "SASL_SSL", secured.command_config(other_ca), *args),
                            family)
    assert "CERTIFICATE_VERIFY_FAILED" in line, line
