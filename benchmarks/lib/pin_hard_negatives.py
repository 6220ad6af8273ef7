"""Put back the hard negatives a recorded run was trained on, so it can be retrained exactly.

Until ``SparseBM25DocumentStore`` broke ties at the k-th place by corpus order, which of several
tied passages made the cut was up to numpy's selection code, and numpy picks that code by CPU. On
SQuAD train one record changed with it: "dd" matches a single paragraph, so the rest of its BM25
negatives are zero-score ties. The 1-group MEQ-centred run (``train_cpu.sh dcsr_qq_mb1``) batches
that record at step 168, and it was trained on a machine whose numpy took the AVX2 path; the pins
file records those negatives by passage id. The 600-step MEQ-centred run (step 210) was trained on
the pinned file; no other recorded CPU run batches the record within its steps::

    .venv/bin/python benchmarks/lib/pin_hard_negatives.py data/squad_train_meq.jsonl \\
        benchmarks/results/training/pinned-negatives.json data/squad_train_meq.jsonl

Every other line is copied byte for byte; the output may be the input file (it is replaced whole).
"""

import argparse
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Dict, List


def pin(records: Path, pins: Dict[str, List[str]], corpus: Path, out: Path) -> int:
    """Copy ``records`` to ``out`` with ``hard_negative_ctxs`` of each question in ``pins`` set to
    the listed corpus passages; returns how many records were changed. Unknown ids or questions raise
    ``ValueError`` and leave ``out`` as it was."""
    wanted = {i for ids in pins.values() for i in ids}
    passages = {}
    with corpus.open(encoding="utf-8") as handle:
        for line in handle:
            passage = json.loads(line)
            if passage.get("passage_id") in wanted:
                passages[passage["passage_id"]] = passage
    missing = sorted(wanted - set(passages))
    if missing:
        raise ValueError(f"passage ids not in {corpus}: {missing}")
    found = dict.fromkeys(pins, 0)
    fd, tmp = tempfile.mkstemp(dir=out.parent, prefix=out.name, suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as sink, records.open(encoding="utf-8") as source:
            for line in source:
                record = json.loads(line) if line.strip() else None
                if record is not None and record["question"] in pins:
                    found[record["question"]] += 1
                    record["hard_negative_ctxs"] = [passages[i] for i in pins[record["question"]]]
                    line = json.dumps(record, ensure_ascii=False) + "\n"
                sink.write(line)
        absent = [q for q, n in found.items() if n == 0]
        if absent:
            raise ValueError(f"questions not in {records}: {absent}")
        shutil.copymode(records, tmp)  # mkstemp's file is private; keep the records file's mode
        os.replace(tmp, out)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
    return sum(found.values())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("records", type=Path, help="DPR-format JSONL (e.g. data/squad_train_meq.jsonl)")
    parser.add_argument("pins", type=Path, help='JSON: {"negatives": {question: [passage_id, ...]}}')
    parser.add_argument("out", type=Path)
    parser.add_argument("--corpus", type=Path, default=Path("data/corpus.jsonl"))
    args = parser.parse_args()
    pins = json.loads(args.pins.read_text(encoding="utf-8"))["negatives"]
    changed = pin(args.records, pins, args.corpus, args.out)
    print(f"{changed} records pinned -> {args.out}")


if __name__ == "__main__":
    main()
