"""Model IRs (plain numpy data) and the importers that produce them."""

from .network import ReluNetwork

__all__ = ["ReluNetwork"]
