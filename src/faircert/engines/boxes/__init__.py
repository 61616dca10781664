"""Shared box machinery: the frontier of open boxes (largest open mass first, bounded memory) and
the pool that batches boxes for an engine's bound computation. Every box engine refines its
domain through these; the parallel runner plugs in here."""
