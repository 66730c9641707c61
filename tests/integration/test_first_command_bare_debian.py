"""The README's first command on a bare Debian: a container of Debian bookworm that holds
`python3` but not `python3-venv` runs `bash scripts/dev.sh` from a copy of this checkout
(bootstrap installs `python3-venv` itself) with the runtime dependencies only, and one record
is produced and consumed through the port the container publishes. CI's proof of the first
command."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator

import pytest
from confluent_kafka import Consumer, Producer
from testcontainers.core.container import DockerContainer
from testcontainers.core.image import DockerImage

from tests.integration.broker_process import free_port
from tests.integration.compose_stack import ENVIRONMENT, ROOT, local_base_images
from tests.waiting import wait_until

pytestmark = [pytest.mark.containers, pytest.mark.timeout(1800)]

BARE_DOCKERFILE = f"""\
FROM {ENVIRONMENT["ODRADEK_BASE_IMAGE"]}
RUN apt-get purge -y -qq python3-venv 'python3.*-venv' >/dev/null \\
 && apt-get autoremove -y -qq >/dev/null \\
 && ! python3 -m venv /tmp/probe
COPY . /src
WORKDIR /src
"""
"""The local debootstrap base without python3-venv (checked: `python3 -m venv` fails), and
the checkout as `git ls-files` has it."""


@pytest.fixture(scope="module")
def bare_image(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with local_base_images():
        context = tmp_path_factory.mktemp("bare-debian")
        files = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z", "--cached",
                                "--others", "--exclude-standard"],
                               capture_output=True, check=True).stdout
        subprocess.run(["tar", "-C", str(ROOT), "--null", "--ignore-failed-read", "-T", "-",
                        "-cf", str(context / "checkout.tar")], input=files, check=True)
        subprocess.run(["tar", "-C", str(context), "-xf", str(context / "checkout.tar")],
                       check=True)
        os.unlink(context / "checkout.tar")
        (context / "Dockerfile").write_text(BARE_DOCKERFILE)
        (context / ".dockerignore").write_text("**/__pycache__\n")  # not the images' own
        with DockerImage(path=context, tag="odradek-bare-debian:test") as image:
            yield str(image)


def test_dev_sh_on_bare_debian_serves_a_record(bare_image: str) -> None:
    port = free_port()
    container = (DockerContainer(bare_image)
                 .with_bind_ports(port, port)
                 .with_command(["bash", "scripts/dev.sh", "--host", "0.0.0.0", "--port", str(port),
                                "--override", f"advertised.listeners=PLAINTEXT://127.0.0.1:{port}",
                                "--override", "metrics.port=0"]))
    with container:
        def logs() -> str:
            out, err = container.get_logs()
            return (out + err).decode(errors="replace")

        producer = Producer({"bootstrap.servers": f"127.0.0.1:{port}"})

        def serving() -> bool:
            return producer.list_topics(timeout=2).brokers.get(1) is not None

        # bootstrap installs python3-venv and Odradek's dependencies first: minutes
        wait_until(serving, timeout=1200, interval=2, ignoring=Exception,
                   what=lambda: f"odradek dev serving on {port}\n{logs()[-3000:]}")
        assert "bootstrap: installing python3-venv from Debian" in logs()
        leaked, _ = container.exec(["/src/.venv/bin/python", "-c", "import pytest"])
        assert leaked != 0, "the dev extra leaked into the runtime venv"
        producer.produce("bare", key=b"k", value=b"hello")
        assert producer.flush(30) == 0
        consumer = Consumer({"bootstrap.servers": f"127.0.0.1:{port}", "group.id": "bare",
                             "auto.offset.reset": "earliest"})
        consumer.subscribe(["bare"])
        received: list[tuple[bytes | None, bytes | None]] = []

        def consumed() -> bool:
            message = consumer.poll(1)
            if message is not None and message.error() is None:
                received.append((message.key(), message.value()))
            return bool(received)

        try:
            wait_until(consumed, timeout=60, interval=0, what="the record consumed")
        finally:
            consumer.close()
        assert received == [(b"k", b"hello")]
