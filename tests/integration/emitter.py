"""Emit numbered events through `MemoryClient` from a separate process (used by the integration tests).

python -m tests.integration.emitter TENANT COUNT [--offset N] [--sessions S] [--pause-every K --pause-s X]
Event ids are deterministic (`ev-<n>`), so re-running re-emits the same events.
"""

from __future__ import annotations

import argparse
import time

from shared.client import MemoryClient


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("tenant")
    ap.add_argument("count", type=int)
    ap.add_argument("--offset", type=int, default=0)
    ap.add_argument("--sessions", type=int, default=10)
    ap.add_argument("--pause-every", type=int, default=0)
    ap.add_argument("--pause-s", type=float, default=0.0)
    args = ap.parse_args()
    client = MemoryClient(args.tenant)
    for n in range(args.offset, args.offset + args.count):
        client.emit(
            user_id=f"user-{n % 7}",
            session_id=f"session-{n % args.sessions}",
            content=f"turn number {n}: we deploy with docker compose",
            event_id=f"ev-{n}",
        )
        if args.pause_every and n % args.pause_every == 0:
            time.sleep(args.pause_s)
    client.close()
    print(f"emitted {args.count} spooled {client.spooled}")


if __name__ == "__main__":
    main()
