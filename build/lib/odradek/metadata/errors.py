"""The error a metadata handler refuses a request with."""

from __future__ import annotations

from kio.schema.errors import ErrorCode


class MetadataError(Exception):
    """A request the metadata state refuses, with the Kafka error code to answer."""

    def __init__(self, error_code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.error_code = error_code
        self.message = message
