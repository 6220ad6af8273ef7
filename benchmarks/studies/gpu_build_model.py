"""`dcsr-train build-model` on a GPU machine, then the README's evaluation of the model it built, there.

Needs CUDA torch, this repository and nltk; no Haystack (the trainer mines with the core alone). The
model is evaluated as the README's table is: every SQuAD v1.1 dev question over every paragraph (train
and dev, `squad_data.read_squad`'s ids and order), exact sentence search and HasAns, the ranking
`DCSRRetriever` serves over FAISS Flat. It writes, under --out:

- `build_model.json`: the budget, each stage's seconds, top-1/5/20/100 on all dev questions and on the
  benchmark's 1,000-question sample;
- `NAME.ranked.json.xz`: the served rankings, which `squad_open.py --system NAME=ranked:FILE` reads back on
  a machine without a GPU (the hybrid with BM25 and paired tests come from the CPU rows' own code).

    python benchmarks/studies/gpu_train.py pack-model all-MiniLM-L6-v2 --out .gpu/minilm   # here: fp16, xz
    # on the GPU machine, with the SQuAD v1.1 files (JSON, .gz or .xz) in DIR:
    python benchmarks/studies/gpu_build_model.py --squad DIR --base .gpu/minilm --budget gpu --out gpu_out
"""

import argparse
import json
import lzma
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT)] + [str(ROOT / "benchmarks" / d) for d in ("lib", "studies", ".")]


def squad_file(directory: Path, split: str, workdir: Path) -> Path:
    """``{split}-v1.1.json`` in ``directory``, as .json, .json.gz or .json.xz (decompressed into ``workdir``)."""
    for suffix in ("", ".gz"):
        if (directory / f"{split}-v1.1.json{suffix}").is_file():
            return directory / f"{split}-v1.1.json{suffix}"
    packed = directory / f"{split}-v1.1.json.xz"
    if not packed.is_file():
        raise FileNotFoundError(f"{directory}: no {split}-v1.1.json(.gz|.xz)")
    target = workdir / f"{split}-v1.1.json"
    target.write_bytes(lzma.decompress(packed.read_bytes()))
    return target


def benchmark_corpus(train: Path, dev: Path):
    """The benchmark's corpus (``squad_data.read_squad``: its ids and order), every dev question, and its
    1,000-question sample (``sample_questions``) as positions of each text's first copy."""
    from squad_data import read_squad, sample_questions

    paragraphs, questions = read_squad(train, dev)
    first = {}
    for i, (q, _, _) in enumerate(questions):
        first.setdefault(q, i)
    sample = [first[q] for q, _, _ in sample_questions(questions, 1000)]
    return {pid: [title, text] for pid, title, text in paragraphs}, [(q, a) for q, a, _ in questions], sample


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--squad", type=Path, required=True, help="folder with train-v1.1.json and dev-v1.1.json")
    parser.add_argument("--base", type=Path, required=True, help="the base model (a pack-model folder or HF dir)")
    parser.add_argument("--budget", default="gpu", help="build_model.yaml's budget (gpu, cpu)")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/dcsr_build"))
    parser.add_argument("--name", default=None, help="the run's name in the report (default build_<budget>)")
    parser.add_argument("--set", action="append", default=[], help="key=value over every stage's settings (checks)")
    args = parser.parse_args(argv)
    import torch
    from gpu_train import evaluate, fp32_copy, sentences_of

    from haystack_dcsr.training.build_model import build_model
    from haystack_dcsr.training.config import parse_overrides

    name = args.name or f"build_{args.budget}"
    args.workdir.mkdir(parents=True, exist_ok=True)
    args.out.mkdir(parents=True, exist_ok=True)
    train, dev = (squad_file(args.squad, split, args.workdir) for split in ("train", "dev"))
    base = fp32_copy(args.base, args.workdir / "base") if (args.base / "model.safetensors.xz").is_file() else args.base
    model = args.workdir / name
    start = time.perf_counter()
    overrides = {"base_model": str(base), **parse_overrides(args.set)}
    build_model(train, model, dev=dev, budget=args.budget, overrides=overrides)
    built_s = time.perf_counter() - start
    stages = {p.stem: json.loads(p.read_text())["seconds"] for p in sorted((model / "work").glob("*.done"))}
    corpus, questions, sample = benchmark_corpus(train, dev)
    order = list(corpus)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    result, _, served = evaluate(model, sentences_of(corpus, order), questions, device, sample, order)
    report = {
        "command": " ".join(["python", *sys.argv]),
        "device": torch.cuda.get_device_name(0) if device == "cuda" else "cpu",
        "torch": torch.__version__,
        "budget": args.budget,
        "build_s": round(built_s, 1),
        "stages_s": stages,
        **result,
    }
    (args.out / "build_model.json").write_text(json.dumps(report, indent=1))
    with lzma.open(args.out / f"{name}.ranked.json.xz", "wt", preset=1) as handle:
        json.dump({"run": name, **served}, handle)
    print(json.dumps(report))


if __name__ == "__main__":
    main()
