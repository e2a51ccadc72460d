"""Every prompt the worker sends, one module per prompt: the versioned builder of its chat messages and the
parser of its answer. Pure: no I/O; the stages in `worker.services` send them through `worker.llm`.

- `extraction`: memories of one window of turns (+ the repair request), answer -> candidates.
- `summary`: the session's rolling summary, rewritten as a whole.
- `judge`: verdicts on similar-but-unclear (existing, new) memory pairs.
- `episode`: a finished session as what happened, its outcome and lesson.
- `working_memory`: the user's working-memory document, four sections.
- `distill`: clusters of fragments rewritten into consolidated memories.
- `common`: how turns and lists are laid out.
"""
