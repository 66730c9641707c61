"""The confluent-kafka AdminClient of the tools built on it (topics, acls add and remove,
delete-records, leader-election): the `--command-config` in librdkafka's spelling, after a
login check when it asks for TLS or SASL (`wire.check_login`)."""

from __future__ import annotations

import argparse
from typing import Any

from odradek.cli.tools.common import (
    QUIET_CLIENT,
    ToolError,
    client_properties,
    describe_kafka_error,
    librdkafka_config,
)
from odradek.cli.tools.wire import check_login


def admin_client(args: argparse.Namespace) -> Any:
    """A confluent-kafka AdminClient for the tool's cluster."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient

    properties = client_properties(args)
    check_login(properties, args.bootstrap_server, args.timeout)
    try:
        return AdminClient({**QUIET_CLIENT, **librdkafka_config(properties)})
    except (KafkaException, ValueError, TypeError) as error:
        raise ToolError(f"invalid client configuration: {describe_kafka_error(error)}") from None
