"""The controller process: the Raft quorum that owns the cluster metadata, and its gRPC services."""
