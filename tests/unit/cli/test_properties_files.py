"""Client properties files resolve Kafka's config providers; a file of configs to set
(`configs --add-config-file`) is passed on as written, for the broker to take."""

from __future__ import annotations

from pathlib import Path

import pytest

from odradek.cli.tools.common import ToolError, read_client_properties, read_properties

DIR = "org.apache.kafka.common.config.provider.DirectoryConfigProvider"


def test_client_files_resolve_and_config_files_stay_as_written(tmp_path: Path) -> None:
    (tmp_path / "password").write_text("s3cret")
    path = tmp_path / "client.properties"
    path.write_text(f"config.providers=d\nconfig.providers.d.class={DIR}\n"
                    f"sasl.password=${{d:{tmp_path}:password}}\n")
    assert read_client_properties(path) == {"sasl.password": "s3cret"}
    assert read_properties(path)["sasl.password"] == f"${{d:{tmp_path}:password}}"
    assert read_properties(path)["config.providers"] == "d"


def test_an_unresolvable_variable_is_a_tool_error(tmp_path: Path) -> None:
    path = tmp_path / "client.properties"
    path.write_text(f"config.providers=d\nconfig.providers.d.class={DIR}\n"
                    f"sasl.password=${{d:{tmp_path}:missing}}\n")
    with pytest.raises(ToolError, match="no file 'missing' in"):
        read_client_properties(path)
