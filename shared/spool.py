"""The client's spool (`memory_client.spool`), where the server's callers have always imported it from."""

from memory_client.spool import Spool

__all__ = ["Spool"]
