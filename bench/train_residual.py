"""Train the residual sentence filter (`core/extraction/residual.py`) on the extraction corpus's dev split.

    python -m bench.train_residual [--check] [--threshold 0.8]

Labels come from the corpus itself, sentence by sentence (`sentence_rows`): every sentence of a user turn of
a dev `single` case (cleaned and split as the rules read it) is positive when one expected memory's term
groups all match it (tier: that memory's, MUST winning), negative when the case must yield nothing, when it
matches a forbidden statement, or when it matches nothing expected; a sentence matching only an `allow`
group is left out. The test split is never read.

`--check` prints the leave-one-round-out figures (train on every other dev file group, score the held-out
round's sentences) at several thresholds and writes nothing. Without it, both models are trained on all dev
sentences and written to `core/extraction/residual_weights.py` (features whose weight is
smaller than `MIN_WEIGHT` are dropped). Needs scikit-learn (installed with the `local-embeddings` extra,
through sentence-transformers); the server never imports it.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.lib.paths import REPO
from bench.lib.quality import CORPUS_DIR, load_cases, matches
from core.extraction.residual import features
from core.extraction.rules.sentences import clean_text, split_sentences

OUT = REPO / "core" / "extraction" / "residual_weights.py"
C = 1.0  # inverse L2 strength; 0.3 and 1.0 compared by --check (1.0: more recall at the same precision)
DECIMALS = 3
# features with a smaller weight are dropped: measured on two held-out rounds, cutting at 0.1 keeps about a
# quarter of the features (a ~300 KB module instead of 1.2 MB) at the same precision and recall
MIN_WEIGHT = 0.1


@dataclass(frozen=True)
class Row:
    text: str
    keep: int
    must: int
    group: str  # the file group (round) the sentence came from
    nothing: bool  # from a case that must yield nothing


def _group(source: str) -> str:
    found = re.search(r"round(\d+)", source)
    return f"round{found.group(1)}" if found else source.split("_", 1)[1].rsplit(".", 1)[0]


def sentence_rows(directory: Path = CORPUS_DIR) -> list[Row]:
    rows: list[Row] = []
    for case in load_cases("dev", directory=directory).cases:
        if case.type != "single":
            continue
        nothing = not case.expect and not case.allow
        for turn in case.turns:
            if turn.role != "user" or not turn.text:
                continue
            for sentence in split_sentences(clean_text(turn.text)):
                sentence = sentence.strip()
                if len(sentence) < 4:
                    continue
                tiers = {e.tier for e in case.expect if matches(e.terms, sentence)}
                if any(matches(f, sentence) for f in case.forbid):
                    tiers = set()
                elif not tiers and any(matches(a, sentence) for a in case.allow):
                    continue
                rows.append(
                    Row(sentence, int(bool(tiers)), int("must" in tiers), _group(case.source), nothing)
                )
    return rows


def _fit(rows: list[Row], target: str) -> tuple[Any, Any]:
    from sklearn.feature_extraction import DictVectorizer
    from sklearn.linear_model import LogisticRegression

    vectorizer = DictVectorizer()
    x = vectorizer.fit_transform([features(r.text) for r in rows])
    y = [getattr(r, target) for r in rows]
    model = LogisticRegression(C=C, max_iter=5000, class_weight="balanced").fit(x, y)
    return vectorizer, model


def _predict(fitted: tuple[Any, Any], rows: list[Row]) -> list[float]:
    vectorizer, model = fitted
    return list(model.predict_proba(vectorizer.transform([features(r.text) for r in rows]))[:, 1])


def check(rows: list[Row]) -> None:
    rounds = sorted({r.group for r in rows if r.group.startswith("round")})
    thresholds = (0.5, 0.6, 0.7, 0.8, 0.9)
    total: Counter[tuple[float, str]] = Counter()
    for held in rounds:
        train = [r for r in rows if r.group != held]
        test = [r for r in rows if r.group == held]
        probs = _predict(_fit(train, "keep"), test)
        cells = []
        for th in thresholds:
            tp = sum(1 for r, p in zip(test, probs, strict=True) if p >= th and r.keep)
            fp = sum(1 for r, p in zip(test, probs, strict=True) if p >= th and not r.keep)
            fn = sum(1 for r, p in zip(test, probs, strict=True) if p < th and r.keep)
            fpn = sum(1 for r, p in zip(test, probs, strict=True) if p >= th and r.nothing)
            for name, n in (("tp", tp), ("fp", fp), ("fn", fn), ("fpn", fpn)):
                total[(th, name)] += n
            total[(th, "nothing")] += sum(r.nothing for r in test)
            cells.append(f"{th}: P {tp / max(tp + fp, 1):.2f} R {tp / max(tp + fn, 1):.2f}")
        print(f"{held:8} {len(test):4} sentences  " + "  ".join(cells))
    print("all rounds held out in turn:")
    for th in thresholds:
        tp, fp, fn = total[(th, "tp")], total[(th, "fp")], total[(th, "fn")]
        print(
            f"  threshold {th}: precision {tp / max(tp + fp, 1):.3f} recall {tp / max(tp + fn, 1):.3f} "
            f"sentences of nothing-cases kept {total[(th, 'fpn')]}/{total[(th, 'nothing')]}"
        )


def _weights(fitted: tuple[Any, Any]) -> tuple[dict[str, float], float]:
    vectorizer, model = fitted
    coef = model.coef_[0]
    named = {
        name: round(float(coef[i]), DECIMALS)
        for name, i in vectorizer.vocabulary_.items()
        if abs(float(coef[i])) >= MIN_WEIGHT
    }
    return dict(sorted(named.items())), round(float(model.intercept_[0]), DECIMALS)


def write(rows: list[Row], threshold: float) -> None:
    keep, keep_bias = _weights(_fit(rows, "keep"))
    kept = [r for r in rows if r.keep]
    must, must_bias = _weights(_fit(kept, "must"))
    counts = Counter(r.group for r in rows)
    lines = [
        '"""Weights of the residual sentence filter (`core/extraction/residual.py`). GENERATED by',
        "`python -m bench.train_residual` from the extraction corpus's dev split; do not edit by hand.",
        "",
        f"Trained on {len(rows)} sentences ({sum(r.keep for r in rows)} kept, "
        f"{sum(r.must for r in rows)} of them MUST) from {len(counts)} file groups.",
        '"""',
        "",
        f"THRESHOLD = {threshold}",
        f"KEEP_BIAS = {keep_bias}",
        f"MUST_BIAS = {must_bias}",
    ]
    for name, table in (("KEEP", keep), ("MUST", must)):
        lines.append(f"{name}: dict[str, float] = {{")
        lines.extend(f"    {json.dumps(key, ensure_ascii=False)}: {value}," for key, value in table.items())
        lines.append("}")
    OUT.write_text("\n".join(lines) + "\n")
    print(
        f"wrote {OUT.relative_to(REPO)}: {len(keep)} keep and {len(must)} must weights from {len(rows)} sentences"
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.train_residual", description=__doc__.split("\n", 1)[0])
    ap.add_argument("--check", action="store_true", help="leave-one-round-out figures only; write nothing")
    ap.add_argument("--threshold", type=float, default=0.8, help="keep probability needed to keep a sentence")
    ap.add_argument("--corpus", type=Path, default=CORPUS_DIR)
    args = ap.parse_args(argv)
    rows = sentence_rows(args.corpus)
    if args.check:
        check(rows)
    else:
        write(rows, args.threshold)
    return 0


if __name__ == "__main__":
    sys.exit(main())
