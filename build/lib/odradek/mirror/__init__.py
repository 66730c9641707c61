"""The mirror service: MirrorMaker 2's semantics between two clusters. The modules without
IO (configuration, replication policy, record formats, offset translation) are its core;
the asyncio shell beside them reads the source cluster and writes the target."""
