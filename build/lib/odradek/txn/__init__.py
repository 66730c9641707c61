"""Idempotent and transactional producers: per-partition producer state and the transaction
coordinator, without IO."""
