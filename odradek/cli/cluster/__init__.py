"""`odradek cluster`: a local multi-process cluster on loopback, for users and fault tests."""
