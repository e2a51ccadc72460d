"""Passages (pure): adjacent turn hits of one session merged into one result.

An answer is often split over two or three turns ("What did you paint?" / "A sunset, last week"), and the
turns around a hit are often hits themselves. Returning them as separate results spends two or three of the
k slots on one moment of the conversation; merging them keeps each slot for a different moment, and the
result still carries only text that matched the query. A passage is contiguous (consecutive turns of one
session), at most `max_turns` long, and ranked where its best turn ranked.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

# LoCoMo dev (the only data it was set on): 3 -> 5 turns moved R@5 / R@10 from 73.1 / 79.7 to 75.3 / 81.0
# for 50 more tokens per query (801 -> 850); beyond 5 nothing changed (a run of more than five consecutive
# hits is rare)
MAX_PASSAGE_TURNS = 5
# Lower-ranked hits (down to POOL_FACTOR x k) may still join a passage above them. LoCoMo dev (2026-12-07, 40
# candidates per list): 5, 8, 12 and 20 gave R@10 80.9, 81.8, 81.9 and 81.9 at 849 to 899 tokens per query;
# the gain stops at about 8, and 10 sits inside the flat part (50 per list: 8 -> 82.1, 10 -> 82.4)
POOL_FACTOR = 10


def merge_passages(
    ranked: Sequence[str],
    *,
    is_turn: Mapping[str, bool],
    previous: Mapping[str, str | None],
    following: Mapping[str, str | None],
    k: int,
    max_turns: int = MAX_PASSAGE_TURNS,
) -> list[list[str]]:
    """Group `ranked` keys (best first) into at most k results, each a list of keys in conversation order.

    A turn joins the best-ranked passage whose first turn it precedes or whose last turn it follows (when
    that passage has room); otherwise it starts a new result while fewer than k exist. Non-turn keys
    (memories) are results of their own. `previous` / `following` give each turn's neighbour in its session
    (None at the ends); keys outside `ranked` never join.
    """
    if k <= 0:
        return []
    groups: list[list[str]] = []
    placed: dict[str, int] = {}  # key -> index of its group
    for key in ranked:
        if key in placed:
            continue
        if not is_turn.get(key, False):
            if len(groups) < k:
                placed[key] = len(groups)
                groups.append([key])
            continue
        options = []
        before, after = previous.get(key), following.get(key)
        if before is not None and before in placed:
            g = placed[before]
            if is_turn.get(before, False) and groups[g][-1] == before and len(groups[g]) < max_turns:
                options.append((g, "append"))
        if after is not None and after in placed:
            g = placed[after]
            if is_turn.get(after, False) and groups[g][0] == after and len(groups[g]) < max_turns:
                options.append((g, "prepend"))
        if options:
            g, where = min(options)
            if where == "append":
                groups[g].append(key)
            else:
                groups[g].insert(0, key)
            placed[key] = g
        elif len(groups) < k:
            placed[key] = len(groups)
            groups.append([key])
    return groups
