"""The cross-encoder reranker at a GPU budget: train it on a GPU machine, score there the pairs
the benchmark's rerank rows need, and bring back the model (fp16, in parts) and its scores.

On 2 CPU cores a step of ``train-cross-encoder`` takes ~6 s and scoring ~26 pairs/s, so the README's
reranker had 320 (then 960) steps and its all-dev row only the top 5. Here the pairs are chosen on
this machine, where the base systems' rankings are (``squad_open.py --pairs-to-score``), scored on
the GPU, and installed as the ``PairScores`` cache of the returned model: ``squad_open.py`` then
reports the rerank rows without scoring a pair.

    # here: the pairs of the rows to report (the base systems as in cross_encoder_rerank.sh)
    .venv/bin/python benchmarks/squad_open.py --questions 0 --contrast-set data/meq_dev --out /tmp/collect.json \\
        --system BM25=bm25 --system "$DENSE=ranked:runs/gpu/qq_mb_off_epoch1.ranked.json.xz" \\
        --system "$HYBRID=hybrid:$DENSE+BM25" --system "CE=rerank-blend:$HYBRID+runs/gpu_ce/ce@20" \\
        --pairs-to-score .gpu/ce_pairs.jsonl.xz
    # on the GPU machine (CUDA torch, this repository, .gpu/ copied over): train, export, score
    python3 benchmarks/studies/gpu_cross_encoder.py run --data .gpu/train --base .gpu/minilm \\
        --pairs .gpu/ce_pairs.jsonl.xz --out runs/gpu_ce_out --name ce --set max_steps=4000
    # here: the model to runs/gpu_ce/ce, its scores to the benchmark's cache; then run squad_open.py as usual
    python benchmarks/studies/gpu_cross_encoder.py install runs/gpu_ce_out runs/gpu_ce benchmarks/cache/squad_open

A large base (all-mpnet-base-v2: 179 MiB of fp16 xz) can stay on the GPU machine with only its scores copied
back (``--model-stays``); ``--budget-s`` sizes the run to a time slot.

The scores are computed by the model as it arrives here (fp16 weights, read back as fp32), so the cache
file is keyed by the fingerprint of the very directory ``install`` writes. Training reads the packed MEQ
file (``train_meq``), with its BM25 negatives and MEQ golds, as ``train-cross-encoder`` reads
``data/squad_train_meq.jsonl`` here.
"""

import argparse
import io
import json
import lzma
import sys
import tarfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT)] + [str(ROOT / "benchmarks" / d) for d in ("lib", "studies", ".")]
from gpu_throughput import import_core  # noqa: E402
from gpu_train import PROBE_STEPS, PROBE_WARM_STEPS, export, fp32_copy, steps_in_budget, unpack, unpacked_records  # noqa: E402

SCORES = ".scores.jsonl.xz"  # NAME.scores.jsonl.xz: a header line, then {"q", "p": [ids], "s": [logits]} a question


def read_pairs(*paths: Path) -> list:
    """(question, passage ids) of one or more ``--pairs-to-score`` files, each question once, its ids merged
    in first-seen order (rows of different depths, e.g. all dev at 20 and the contrast set at 50)."""
    merged = {}
    for path in paths:
        with lzma.open(path, "rt") as handle:
            for row in map(json.loads, handle):
                merged.setdefault(row["q"], {}).update(dict.fromkeys(row["p"]))
    return [(question, list(pids)) for question, pids in merged.items()]


def run(args) -> None:
    import torch

    import_core()  # also puts the repository on sys.path
    from cross_encoder_rerank import directory_fingerprint

    from haystack_dcsr.core.cross_encoder import CrossEncoder
    from haystack_dcsr.training.config import CrossEncoderConfig
    from haystack_dcsr.training.cross_encoder import train_cross_encoder

    device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda":  # TF32 matmuls: fp32 masters and logits at tensor-core speed (plain fp32: ~7x slower)
        torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = True
    workdir = Path(args.workdir or f"/tmp/dcsr_ce_{args.name}")
    workdir.mkdir(parents=True, exist_ok=True)
    corpus = json.load(lzma.open(args.data / "corpus.json.xz", "rt"))
    questions = read_pairs(*args.pairs)  # read first: a bad file fails before training
    missing = sorted({pid for _, pids in questions for pid in pids} - corpus.keys())
    if missing:
        raise SystemExit(f"{args.pairs}: {len(missing)} passage ids not in the packed corpus, e.g. {missing[:3]}")
    report = {"device": torch.cuda.get_device_name() if device == "cuda" else "cpu"}
    if args.eval_only:
        last = workdir / "run" / "last"
    else:
        train_file = unpacked_records(args.data, "train_meq", workdir, corpus)
        overrides = [f"train_file={train_file}", f"model={fp32_copy(args.base, workdir / 'base')}"]
        overrides += [f"output_dir={workdir / 'run'}", *args.set]
        if args.budget_s:
            step_s = probe_step_seconds(overrides, workdir / "probe", device)
            overrides.append(f"max_steps={steps_in_budget(args.budget_s, step_s)}")
            report.update(probe_step_s=round(step_s, 4), budget_s=args.budget_s)
        config = CrossEncoderConfig.from_yaml(None, overrides)
        start = time.perf_counter()
        last = train_cross_encoder(config, device=device)
        report.update(train_s=round(time.perf_counter() - start, 1), config=config.to_yaml())
        (args.out / f"{args.name}.log.jsonl").write_bytes((workdir / "run" / "log.jsonl").read_bytes())
    # with --model-stays the model (mpnet-base: 209 MiB of fp16) stays there: only its scores come back
    archive = export(last, workdir if args.model_stays else args.out, args.name, parts=("",))
    served = workdir / "served"  # the directory install writes here, byte for byte
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(served, filter="data")
    start = time.perf_counter()
    model = CrossEncoder(str(served), batch_size=args.batch_size, device=device)
    flat = [(q, pid) for q, pids in questions for pid in pids]
    logits = model.score_pairs([(q, corpus[pid][1]) for q, pid in flat])
    report.update(pairs=len(flat), score_s=round(time.perf_counter() - start, 1))
    fingerprint = directory_fingerprint(served)
    with lzma.open(args.out / f"{args.name}{SCORES}", "wt") as handle:
        handle.write(json.dumps({"fingerprint": fingerprint, **report}) + "\n")
        position = 0
        for question, pids in questions:
            scores = [float(s) for s in logits[position : position + len(pids)]]
            handle.write(json.dumps({"q": question, "p": pids, "s": scores}) + "\n")
            position += len(pids)
    print(json.dumps({"name": args.name, "fingerprint": fingerprint, **report}))


def probe_step_seconds(overrides: list, output_dir: Path, device: str) -> float:
    """Seconds a training step takes at these settings on this machine: the mean of the steps after the
    warm ones of a throw-away run (read from the log's elapsed time at those two steps), so a run can be sized
    to a budget."""
    from haystack_dcsr.training.config import CrossEncoderConfig
    from haystack_dcsr.training.cross_encoder import train_cross_encoder

    settings = [f"max_steps={PROBE_STEPS}", f"log_every={PROBE_WARM_STEPS}", f"save_every={PROBE_STEPS}"]
    config = CrossEncoderConfig.from_yaml(None, [*overrides, *settings, f"output_dir={output_dir}"])
    train_cross_encoder(config, device=device)
    elapsed = [json.loads(line)["elapsed_s"] for line in (output_dir / "log.jsonl").read_text().splitlines()]
    return max(elapsed[-1] - elapsed[0], 1e-3) / (PROBE_STEPS - PROBE_WARM_STEPS)


def install(parts_dir: Path, target: Path, workdir: Path) -> None:
    """Each returned model unpacked to ``target/NAME`` and its scores appended to that directory's
    ``PairScores`` cache in ``workdir``; a model whose files differ from the scored one is refused. Scores
    whose model stayed there (``--model-stays``) install with a directory holding only ``SCORED_ELSEWHERE``
    (the scored model's fingerprint and run report), which ``PairScores`` reads from the cache alone."""
    sys.path.insert(0, str(ROOT))
    from cross_encoder_rerank import SCORED_ELSEWHERE, model_fingerprint

    unpack(parts_dir, target)
    workdir.mkdir(parents=True, exist_ok=True)
    for scores in sorted(parts_dir.glob(f"*{SCORES}")):
        name = scores.name[: -len(SCORES)]
        with lzma.open(scores, "rt") as handle:
            header = json.loads(next(handle))
            if not (target / name).exists():
                (target / name).mkdir(parents=True)
                (target / name / SCORED_ELSEWHERE).write_text(json.dumps(header, indent=1) + "\n")
            elsewhere = target / name / SCORED_ELSEWHERE
            if elsewhere.is_file() and any(path != elsewhere for path in (target / name).iterdir()):
                elsewhere.unlink()  # its model was fetched since: the files themselves are the fingerprint now
            fingerprint = model_fingerprint(target / name)
            if header["fingerprint"] != fingerprint:
                raise SystemExit(
                    f"{scores}: scored by model {header['fingerprint']}, but {target / name} is {fingerprint}"
                )
            cache = workdir / f"cross-encoder-{fingerprint}.jsonl"
            count = 0
            with cache.open("a") as out:
                for row in map(json.loads, handle):
                    for pid, score in zip(row["p"], row["s"]):
                        out.write(json.dumps({"q": row["q"], "p": pid, "s": score}) + "\n")
                        count += 1
        print(f"{name}: {count} scores -> {cache} ({json.dumps({k: header[k] for k in header if k != 'config'})})")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    p = commands.add_parser("run", help="train, export and score (on the GPU machine)")
    p.add_argument("--data", type=Path, required=True, help="gpu_train.py pack's output (.gpu/train)")
    p.add_argument("--base", type=Path, required=True, help="gpu_train.py pack-model's output (.gpu/minilm)")
    p.add_argument(
        "--pairs",
        type=Path,
        required=True,
        action="append",
        help="squad_open.py --pairs-to-score's output (repeatable: each question scored once)",
    )
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--name", default="ce")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="a train-cross-encoder field")
    p.add_argument("--batch-size", type=int, default=256, help="pairs per scoring batch")
    p.add_argument("--workdir", help="default /tmp/dcsr_ce_NAME")
    p.add_argument("--eval-only", action="store_true", help="score with the model an earlier invocation trained")
    p.add_argument(
        "--budget-s",
        type=float,
        help="train as many steps as fit this many seconds (a 30-step probe times a step; rounded down to 100s), "
        "overriding --set max_steps",
    )
    p.add_argument(
        "--model-stays",
        action="store_true",
        help="keep the exported model in the workdir, not --out: only its scores are written there",
    )
    p = commands.add_parser("install", help="unpack the returned model and install its scores (here)")
    p.add_argument("parts_dir", type=Path)
    p.add_argument("target", type=Path)
    p.add_argument("workdir", type=Path)
    args = parser.parse_args(argv)
    if args.command == "run":
        args.out.mkdir(parents=True, exist_ok=True)
        run(args)
    else:
        install(args.parts_dir, args.target, args.workdir)


if __name__ == "__main__":
    main()
