"""Share groups (KIP-932): share-partition state and the share coordinator, without IO."""
