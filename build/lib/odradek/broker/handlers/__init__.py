"""One module per Kafka API (or family of APIs); each handler maps a request to a response
mapping named after the response schema's fields (see odradek.protocol.codec)."""
