"""Cluster metadata: records in the spirit of KRaft's __cluster_metadata, and their replay."""
