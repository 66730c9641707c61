"""Partition replication cores: the leader's view of its followers, the follower's truncation."""
