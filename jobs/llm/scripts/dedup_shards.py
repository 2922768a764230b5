"""Exact and near-duplicate keys of a text corpus, one shard per Flux task.

Run with ``flux run -n N``: Flux gives every task FLUX_TASK_RANK and FLUX_JOB_SIZE. Task ``r``
reads every file whose sorted position is ``r`` modulo the job size and writes, per document
line, its SHA-256 and a MinHash signature of its word 5-grams to ``<out>/keys-<r>.tsv``; a
later step groups equal keys.
"""

from __future__ import annotations

import argparse
import hashlib
import os
from pathlib import Path

PERMUTATIONS = 16
PRIME = (1 << 61) - 1


def shingles(text: str, n: int = 5) -> set[int]:
    words = text.split()
    grams = (" ".join(words[i : i + n]) for i in range(max(1, len(words) - n + 1)))
    return {int.from_bytes(hashlib.blake2b(g.encode(), digest_size=8).digest(), "big") for g in grams}


def minhash(features: set[int]) -> list[int]:
    return [
        min(((a * f + a // 2) % PRIME for f in features), default=0)
        for a in range(1, 2 * PERMUTATIONS, 2)
    ]


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--src", type=Path, required=True)
    p.add_argument("--out", type=Path, required=True)
    args = p.parse_args()
    rank = int(os.environ.get("FLUX_TASK_RANK", "0"))
    size = int(os.environ.get("FLUX_JOB_SIZE", "1"))
    files = sorted(f for f in args.src.rglob("*.txt") if f.is_file())[rank::size]
    args.out.mkdir(parents=True, exist_ok=True)
    with (args.out / f"keys-{rank}.tsv").open("w", encoding="utf-8") as out:
        for path in files:
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines()):
                digest = hashlib.sha256(line.encode()).hexdigest()
                signature = ",".join(map(str, minhash(shingles(line))))
                out.write(f"{path.relative_to(args.src)}\t{number}\t{digest}\t{signature}\n")
    print(f"task {rank}/{size}: {len(files)} files", flush=True)


if __name__ == "__main__":
    main()
