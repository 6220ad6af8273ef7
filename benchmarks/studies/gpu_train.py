"""Train DCSR with the real ``Trainer`` on a GPU machine that has no Haystack, evaluate it there,
and bring the towers back.

    # here: pack the mined training data as passage ids (~9 MB of xz instead of 820 MB of text), and MiniLM
    python benchmarks/studies/gpu_train.py pack --out .gpu/train
    python benchmarks/studies/gpu_train.py pack-model all-MiniLM-L6-v2 --out .gpu/minilm
    # on the GPU machine (CUDA torch, this repository): train, evaluate on every SQuAD dev question, export
    # fp16 towers in parts of at most 15 MiB each (in --export-dir)
    python benchmarks/studies/gpu_train.py run --data .gpu/train --base .gpu/minilm --out runs/gpu \
        --run recipe:max_steps=200 --export recipe
    # back here, with the parts copied over: join them into HF directories that DCSRRetriever loads
    python benchmarks/studies/gpu_train.py unpack PARTS_DIR runs/gpu_recipe

Runs are ``NAME[:key=value,...]`` over the README recipe; ``data=train_meq`` trains on the MEQ file
(packed when ``data/squad_train_meq.jsonl`` exists), e.g. the #15 runs::

    --run epoch1 --run "marker:epochs=1,pooling=marker,marker_init=mean,marker_lr=1e-3,marker_warmup_steps=200"
    --run "qq_mb:data=train_meq,epochs=1,qq_form=infonce,meq_per_batch=4"
    --run "qq_mb_off:data=train_meq,epochs=1,meq_per_batch=4"          # the QQ-off control, same batches
    --run "qq_mb1:data=train_meq,epochs=1,qq_form=infonce,meq_per_batch=1"  # fewer groups: 4 cost 1.2 top-1 on CPU
    --run "qq:data=train_meq,epochs=1,qq_form=infonce"                  # shuffled batches, the reference
    --run "bm25x2:epochs=1,negatives=+2 BM25 random" --run "bm25x1:epochs=1,negatives=+1 BM25 random"
    --run epoch1 --run "hard:hard_of=epoch1,epochs=1"   # DCSR-hard: epoch1's towers mine the negatives, retrain
    --run "stage:from=hard,data=train_meq,meq_records_only=true,qq_form=infonce,lr=1e-5,epochs=3"  # a contrast
    --run "stage_off:from=hard,data=train_meq,meq_records_only=true,lr=1e-5,epochs=3"  # stage on hard, QQ and QQ off

Evaluation (``run``): the benchmark's corpus (every SQuAD v1.1 paragraph, sentence-split as the
retriever splits it), every dev question, exact top-3,000 sentence search on the GPU and HasAns
at the tower's temperature: the same ranking as DCSRRetriever over FAISS Flat. With the contrast set packed
(``data/meq_dev`` from build-contrast-set), every run also reports the MEQ metrics of the README's
table (ranking MR/MRR among 50 candidates, pair hits, overlap, own gold first, sim(q,q+) > sim(q,q-)).
Each run writes ``NAME.ranked.json.xz`` (its served rankings of every dev and contrast question, and the
candidates' scores): ``squad_open.py --system "NAME=ranked:FILE"`` reads it back on a machine without a
GPU, so hybrids and paired tests of GPU-trained towers come from the CPU rows' own code, and the towers
themselves need not be copied back. Two runs can share one GPU: start two ``run`` processes with their
own ``--workdir`` and ``--out``.
"""

import argparse
import contextlib
import dataclasses
import itertools
import json
import lzma
import math
import shutil
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT)] + [str(ROOT / "benchmarks" / d) for d in ("lib", "studies", ".")]
from gpu_throughput import import_core  # noqa: E402  (the framework-free modules, with or without Haystack)


def _recipe() -> dict:
    """The README's CPU recipe as trainer/configs/ writes it (squad_dcsr.yaml under build_model.yaml's first CPU
    stage), less the paths; a run spec's key=value pairs go on top."""
    import_core()  # the package without Haystack, where the GPU machine has none
    from haystack_dcsr.training.recipes import settings

    base = settings("squad_dcsr.yaml")
    recipe = {key: base[key] for key in ("level", "negatives", "max_passage_length") if key in base}
    recipe.update(settings("build_model.yaml", "budgets.gpu.first"))
    recipe.pop("max_steps", None)  # each run spec sets its own budget (max_steps, epochs or budget_s)
    recipe.update(log_every=50, checkpoint_every=0, dev_limit=1000, precision="fp32")
    return recipe


RECIPE = _recipe()
KS = (1, 5, 20, 100)
CONTRAST = Path("data/meq_dev")  # build-contrast-set output, packed beside the records
PART = 15 * 2**20
# run-spec keys read here, not by TrainConfig: data=NAME (train file), hard_of=RUN (DCSR-hard: that
# earlier run's towers mine the negatives), hard_keep=N (negatives kept per question), from=RUN (start there),
# budget_s=S (max_steps: as many steps as fit S seconds, timed by a probe run, so a run fits a fixed time slot)
OWN_KEYS = ("data", "hard_of", "hard_keep", "from", "budget_s")
PROBE_STEPS = 30  # a budget's throw-away probe run: the steps after the first PROBE_WARM_STEPS are timed
PROBE_WARM_STEPS = 10  # not timed: they hold the kernels' first calls


def packed_row(r: dict, corpus: dict) -> list:
    """[question, answers, positives, negatives(, paraphrases, [packed MEQ, ...])], passages as ids into ``corpus``."""

    def ids(passages):
        for p in passages:
            corpus[p["passage_id"]] = [p["title"], p["text"]]
        return [p["passage_id"] for p in passages]

    row = [r["question"], r["answers"], ids(r["positive_ctxs"]), ids(r.get("hard_negative_ctxs", []))]
    if r.get("positive_questions") or r.get("negative_questions"):
        row += [r.get("positive_questions", []), [packed_row(m, corpus) for m in r.get("negative_questions", [])]]
    return row


def pack_records(source: Path, target: Path, corpus: dict, limit=None, over=None) -> None:
    """DPR-format JSONL as packed rows. ``over=(name, path)``: ``source`` is that file line for line plus
    MEQs and paraphrases (build-meq-augmentation's output), so only the additions are written, as
    ``[line, paraphrases, MEQs]`` under an ``{"over": name}`` header: the MEQ file's 4.2 MB of xz would
    repeat train's."""
    with open(source, encoding="utf-8") as lines, lzma.open(target, "wt") as handle:
        if over is None:
            for number, line in enumerate(lines):
                if limit is not None and number >= limit:
                    break
                handle.write(json.dumps(packed_row(json.loads(line), corpus)) + "\n")
            return
        name, base_path = over
        handle.write(json.dumps({"over": name}) + "\n")
        with open(base_path, encoding="utf-8") as base_lines:
            for number, (line, base_line) in enumerate(itertools.zip_longest(lines, base_lines)):
                if line is None or base_line is None:
                    raise ValueError(f"{source} and {base_path} differ in length (one ends at line {number + 1})")
                row, base = packed_row(json.loads(line), corpus), packed_row(json.loads(base_line), corpus)
                if row[:4] != base[:4]:
                    raise ValueError(f"line {number + 1} of {source} is not line {number + 1} of {base_path}")
                if len(row) > 4:
                    handle.write(json.dumps([number, *row[4:]]) + "\n")


def pack(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    corpus = {}
    train = Path("data/squad_train_bm25.jsonl")
    pack_records(train, out / "train.jsonl.xz", corpus)
    pack_records(Path("data/squad_dev_bm25.jsonl"), out / "dev.jsonl.xz", corpus, limit=1000)
    if Path("data/squad_train_meq.jsonl").is_file():
        pack_records(Path("data/squad_train_meq.jsonl"), out / "train_meq.jsonl.xz", corpus, over=("train", train))
    for name in ("pairs", "ranking"):  # the MEQ contrast set: ids and questions only
        if (CONTRAST / f"{name}.jsonl").is_file():
            with lzma.open(out / f"contrast_{name}.json.xz", "wt") as handle:
                handle.write((CONTRAST / f"{name}.jsonl").read_text())
    with lzma.open(out / "corpus.json.xz", "wt") as handle:
        json.dump(corpus, handle)
    questions = [json.loads(line) for line in open("data/squad_dev.jsonl", encoding="utf-8")]
    from squad_data import load_squad

    benchmark, sample = load_squad(n_questions=1000, seed=0)  # the benchmark's corpus order and question sample
    with lzma.open(out / "dev_questions.json.xz", "wt") as handle:
        json.dump(
            {
                "questions": [[q["question"], q["answers"]] for q in questions],
                "order": [d.id for d in benchmark],
                "sample": [q for q, _, _ in sample],
            },
            handle,
        )
    print(f"packed {len(corpus)} passages, {len(questions)} dev questions -> {out}")


def unpacked_records(data: Path, name: str, workdir: Path, corpus: dict) -> Path:
    """The packed records as the trainer's DPR-format JSONL (loaded by its own reader); ``corpus``: the
    packed passages (``corpus.json.xz``), read once by the caller."""
    passage = lambda pid: {"title": corpus[pid][0], "text": corpus[pid][1], "passage_id": pid}  # noqa: E731

    def record(row):
        question, answers, positives, negatives, *augmented = row
        out = {
            "question": question,
            "answers": answers,
            "positive_ctxs": [passage(p) for p in positives],
            "hard_negative_ctxs": [passage(p) for p in negatives],
        }
        if augmented:
            out["positive_questions"] = augmented[0]
            out["negative_questions"] = [record(m) for m in augmented[1]]
        return out

    path = workdir / f"{name}.jsonl"
    with contextlib.ExitStack() as files:
        rows = map(json.loads, files.enter_context(lzma.open(data / f"{name}.jsonl.xz", "rt")))
        first = next(rows, None)
        if isinstance(first, dict):  # additions over another packed file (pack_records' over=)
            base_file = data / f"{first['over']}.jsonl.xz"
            if not base_file.is_file():
                raise ValueError(f"{name}.jsonl.xz adds to {base_file.name}, which is not packed beside it")
            added = {row[0]: row[1:] for row in rows}
            base = files.enter_context(lzma.open(base_file, "rt"))
            rows = (json.loads(line) + added.get(number, []) for number, line in enumerate(base))
        elif first is not None:
            rows = itertools.chain([first], rows)
        handle = files.enter_context(open(path, "w", encoding="utf-8"))
        for row in rows:
            handle.write(json.dumps(record(row)) + "\n")
    return path


def evaluate(run_dir: Path, passages, questions, device: str, sample=None, order=None, contrast=None):
    """Top-k of the trained towers on ``questions`` (all dev), and on the benchmark's 1,000 sample;
    with ``contrast`` (pairs, ranking) the MEQ contrast set's metrics, as benchmarks/squad_open.py
    reports them (``order``: the passages' ids). Also returns what ``squad_open.py``'s ``ranked:`` kind
    reads back on another machine (the third value): the served rankings, to fuse hybrids there."""

    _, _, metrics, _ = import_core()
    start = time.perf_counter()
    model, index = index_corpus(run_dir, passages, device)
    encoded = time.perf_counter() - start
    texts = [" ".join(s) for s in passages]
    rank = hasans_ranker(model, index)
    rows = rank([q for q, _ in questions])
    ranked = [[texts[p] for p, _ in row] for row in rows]
    ranks = metrics.first_hit_ranks(ranked, [answers for _, answers in questions])
    report = {
        "all_dev": {str(k): round(100 * v, 1) for k, v in metrics.top_k_accuracy(ranks, KS).items()},
        "questions": len(questions),
        "encode_corpus_s": round(encoded, 1),
    }
    if sample is not None:
        sampled = [ranks[i] for i in sample]
        report["dev_1000"] = {str(k): round(100 * v, 1) for k, v in metrics.top_k_accuracy(sampled, KS).items()}
    served = {"questions": [q for q, _ in questions], "ranked": by_id(rows, order)}
    if contrast is not None:
        report["contrast"], contrast_served = contrast_metrics(contrast, rank, model, index, order, texts)
        served.update(contrast_served)
    return report, ranks, served


def by_id(rows, order) -> list:
    """Ranked rows of (passage index, HasAns) as [passage id, HasAns] lists: squad_open.py's cache rows.
    HasAns keeps 8 significant digits (more than the float32 inner products behind it carry): full
    doubles made all of SQuAD dev ~16 MB compressed, over the 15 MiB parts this script writes."""
    return [[[order[i], float(f"{s:.8g}")] for i, s in row] for row in rows]


def sentences_of(corpus: dict, ids) -> list:
    """Each passage of ``ids`` as its sentences, split as the retriever splits them."""
    from haystack_dcsr.core.splitting import SentenceSplitter

    splitter = SentenceSplitter()
    return [[corpus[pid][1][a:b] for a, b in splitter.spans(corpus[pid][1])] for pid in ids]


def index_corpus(run_dir: Path, passages, device: str):
    """``run_dir``'s model (``DCSRModel``: its towers and settings) and the exact sentence index of ``passages``
    (each its sentences) built with its passage tower, on ``device``."""
    import torch

    import_core()
    from haystack_dcsr.core.dcsr_model import DCSRModel
    from haystack_dcsr.core.exact_index import ExactSentenceIndex

    model = DCSRModel.from_pretrained(str(run_dir), device=device, precision="fp32")
    vectors = torch.from_numpy(model.encode_passages(passages, batch_size=256))
    return model, ExactSentenceIndex(vectors, [len(s) for s in passages], device=device)


def hasans_ranker(model, index, top: int = 100):
    """questions -> per question the top passages as (passage index, HasAns), ranked as DCSRRetriever
    serves a FAISS Flat index (``ExactSentenceIndex.rank`` at the model's temperature); HasAns is the
    probability served as ``score``, which a hybrid min-max scales."""

    def rank(texts_to_ask):
        ranked = index.rank(model.encode_queries(texts_to_ask, batch_size=512), model.temperature, top_k=top)
        return [list(zip(r.passages.tolist(), r.hasans.tolist())) for r in ranked]

    return rank


def mine_dense(run_dir: Path, records_file: Path, corpus: dict, ids, out: Path, device: str, keep: int = 10) -> Path:
    """The DCSR-hard round's data: every record's hard negatives replaced by the first ``keep`` passages of
    ``run_dir``'s towers over the passages ``ids`` that are not a positive and hold no answer
    (``dcsr-train mine-dense``'s miner, ``training.mining.dense_search``)."""
    import torch

    import_core()
    from haystack_dcsr.training.data import Passage, load_records
    from haystack_dcsr.training.mining import dense_search, mine_hard_negatives

    passages = [Passage(title=corpus[pid][0], text=corpus[pid][1], passage_id=pid) for pid in ids]
    search = dense_search(run_dir, passages, device=device, progress_bar=False)
    out.unlink(missing_ok=True)
    mine_hard_negatives(load_records(records_file).records, search, out, top_k=keep + 20, keep=keep)
    torch.cuda.empty_cache()
    return out


def contrast_metrics(contrast, rank, model, index, order, texts):
    """MEQ ranking MR/MRR among the 50 candidates, pair hits, overlap, own gold first, sim(q,q+) > sim(q,q-);
    and the contrast questions' rankings and the candidates' served scores (HasAns), for ``ranked:``."""
    from evaluation import candidate_scores, pair_report, ranking_report

    pairs, ranking = contrast
    position = {pid: i for i, pid in enumerate(order)}
    temperature = model.temperature
    _, hasans, _, _ = import_core()

    def score(question, candidates):
        query = model.encode_queries([question])[0]
        chosen = [index.passage_vectors(position[c]).cpu().numpy() for c in candidates]
        return hasans.score_passages(query, chosen, temperature)

    asked = list(dict.fromkeys(q for p in pairs for q in (p["question"], p["meq"])))
    asked_rows = by_id(rank(asked), order)
    ranked_of = dict(zip(asked, asked_rows))
    by_passage = {order[i]: text for i, text in enumerate(texts)}
    embed = lambda batch: model.encode_queries(batch)  # noqa: E731
    scores = candidate_scores(score, ranking)
    ranking_result = ranking_report(scores, ranking, pairs, embed)
    served = {
        "contrast_questions": asked,
        "contrast_ranked": asked_rows,
        "candidate_scores": [hasans.hasans_of_key(s).tolist() for s in scores],
        "ranking": ranking_result,
    }
    return {**ranking_result, **pair_report(ranked_of, pairs, by_passage)}, served


def cast_floats(weights: dict, dtype) -> dict:
    """``weights`` with every floating tensor in ``dtype`` (fp16 to travel, fp32 to train), the rest as is."""
    return {k: v.to(dtype).contiguous() if v.is_floating_point() else v for k, v in weights.items()}


def export(run_dir: Path, out: Path, name: str, parts=("query_encoder", "passage_encoder")) -> bytes:
    """fp16 safetensors of ``run_dir``'s ``parts`` (both towers; ``("",)``: ``run_dir`` itself, as a
    cross-encoder), cut into files of at most 15 MiB; returns the archive they join to."""
    import io
    import tarfile

    import torch
    from safetensors.torch import load_file, save_file

    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for part in parts:
            directory = run_dir / part
            for path in sorted(directory.iterdir()):
                arcname = f"{part}/{path.name}" if part else path.name
                if path.name == "model.safetensors":
                    half = cast_floats(load_file(str(path)), torch.float16)
                    staged = Path("/tmp") / f"{name}-{part or 'model'}.safetensors"
                    save_file(half, str(staged), metadata={"format": "pt"})
                    archive.add(staged, arcname=arcname)
                elif path.is_file():
                    archive.add(path, arcname=arcname)
    data = buffer.getvalue()
    for number, start in enumerate(range(0, len(data), PART)):
        (out / f"{name}.tar.part{number}").write_bytes(data[start : start + PART])
    torch.cuda.empty_cache()
    return data


def unpack(parts_dir: Path, target: Path) -> None:
    """Each exported run's parts joined and extracted to ``target/<run>/{query,passage}_encoder``."""
    import io
    import tarfile

    for name in sorted({p.name.split(".tar.part")[0] for p in parts_dir.glob("*.tar.part*")}):
        parts = sorted(parts_dir.glob(f"{name}.tar.part*"), key=lambda p: int(p.name.rsplit("part", 1)[1]))
        with tarfile.open(fileobj=io.BytesIO(b"".join(p.read_bytes() for p in parts))) as archive:
            archive.extractall(target / name, filter="data")
        print(f"{name}: {len(parts)} parts -> {target / name}")


def pack_model(name: str, out: Path) -> None:
    """A base model packed for the GPU machine: fp16 safetensors, xz-compressed (MiniLM: 91 MB of fp32
    -> 39 MB, so records, repository and base copy over in ~50 MB), with its config
    and tokenizer files."""
    import shutil

    import torch

    import_core()
    from safetensors.torch import load_file, save

    from haystack_dcsr.core.models import resolve_model_path

    source = Path(resolve_model_path(name))
    skip = shutil.ignore_patterns(
        "model.safetensors", "pytorch_model.bin", "*.onnx", "onnx", "openvino", "README.md", ".git*"
    )
    shutil.copytree(source, out, dirs_exist_ok=True, ignore=skip)  # config, tokenizer, sentence-transformers files
    half = cast_floats(load_file(str(source / "model.safetensors")), torch.float16)
    # lp=1, pb=1, lc=0: LZMA2 told the data are 2-byte values (fp16), 2 MB smaller than preset 9e; a plain .xz still
    two_byte = [{"id": lzma.FILTER_LZMA2, "preset": 6, "lp": 1, "pb": 1, "lc": 0}]
    with lzma.open(out / "model.safetensors.xz", "wb", filters=two_byte) as handle:
        handle.write(save(half, metadata={"format": "pt"}))
    print(f"{source} -> {out} (fp16, xz: {(out / 'model.safetensors.xz').stat().st_size / 2**20:.1f} MiB)")


def fp32_copy(base: Path, target: Path) -> Path:
    """The base model with fp32 weights (they travel as fp16, plain or xz-compressed; training needs fp32
    masters)."""
    import shutil

    import torch
    from safetensors.torch import load, save_file

    shutil.copytree(base, target, dirs_exist_ok=True, ignore=shutil.ignore_patterns("model.safetensors*"))
    packed = base / "model.safetensors.xz"
    data = lzma.open(packed).read() if packed.is_file() else (base / "model.safetensors").read_bytes()
    save_file(
        cast_floats(load(data), torch.float32),
        str(target / "model.safetensors"),
        metadata={"format": "pt"},
    )
    return target


def steps_in_budget(budget_s: float, step_s: float) -> int:
    """The optimiser steps a run sized to a budget gets: what fits, rounded down to 100s, never under a probe's."""
    return max(PROBE_STEPS, int(budget_s / step_s) // 100 * 100)


def probe_step_seconds(config, output_dir: Path) -> float:
    """Seconds a DCSR step takes at these settings on this machine: the mean of the timed steps of a throw-away
    run (validated on one dev batch, no retrieval validation), so that the real run's schedule can be sized
    to a budget up front (a run cut off by the clock would stop mid-decay)."""
    from haystack_dcsr.training.engine import Trainer

    probe = dataclasses.replace(
        config,
        max_steps=PROBE_STEPS,
        output_dir=str(output_dir),
        dev_limit=config.dev_batch_size,
        retrieval_dev_passages=0,
        checkpoint_every=0,
        validate_every=None,
    )
    history = Trainer(probe).train(resume=False)
    shutil.rmtree(output_dir)  # a base-size checkpoint is GBs on the device's disk
    timed = [h["step_s"] for h in history[PROBE_WARM_STEPS:]]
    return sum(timed) / len(timed)


def parse_runs(specs, train_files) -> list:
    """``NAME[:key=value,...]`` specs as (name, own keys, TrainConfig overrides); ``data``, ``hard_of`` and
    ``from`` must name a packed file and runs earlier in the list."""
    parsed = []
    for spec in specs:
        name, _, settings = spec.partition(":")
        items = [item for item in settings.split(",") if item]
        own = {k: v for k, _, v in (item.partition("=") for item in items) if k in OWN_KEYS}
        if own.get("data", "train") not in train_files:
            raise ValueError(f"run {name!r}: data={own['data']} is not packed (have: {', '.join(sorted(train_files))})")
        if "budget_s" in own:
            if any(item.partition("=")[0] == "max_steps" for item in items):
                raise ValueError(f"run {name!r}: budget_s sets max_steps; give one of them")
            try:
                seconds = float(own["budget_s"])
            except ValueError:
                seconds = 0.0
            if not 0 < seconds < math.inf:
                raise ValueError(f"run {name!r}: budget_s={own['budget_s']} is not a positive number of seconds")
        earlier = [n for n, _, _ in parsed]
        for key in ("hard_of", "from"):
            if key in own and own[key] not in earlier:
                raise ValueError(f"run {name!r}: {key}={own[key]} is not a run before it (earlier: {earlier})")
        parsed.append((name, own, [item for item in items if item.partition("=")[0] not in OWN_KEYS]))
    return parsed


def run(args) -> None:
    import torch

    import_core()
    sys.path.insert(0, str(ROOT))
    from haystack_dcsr.training.config import TrainConfig
    from haystack_dcsr.training.engine import Trainer

    device = "cuda" if torch.cuda.is_available() else "cpu"
    workdir = args.workdir  # one per process: two runs side by side on one GPU must not share it
    workdir.mkdir(parents=True, exist_ok=True)
    packed = [path.name[: -len(".jsonl.xz")] for path in args.data.glob("*.jsonl.xz") if path.name != "dev.jsonl.xz"]
    # train (BM25 negatives), train_meq (+ MEQs and paraphrases) when packed; a run picks one by data=NAME
    specs = parse_runs(args.run, dict.fromkeys(packed))  # before any work: a bad spec fails in seconds
    used = {own.get("data", "train") for _, own, _ in specs}
    corpus = json.load(lzma.open(args.data / "corpus.json.xz", "rt"))
    train_files = {name: unpacked_records(args.data, name, workdir, corpus) for name in packed if name in used}
    dev_file = unpacked_records(args.data, "dev", workdir, corpus)
    dev = json.load(lzma.open(args.data / "dev_questions.json.xz", "rt"))
    order, questions = dev["order"], dev["questions"]
    contrast = None
    if (args.data / "contrast_pairs.json.xz").is_file():
        contrast = tuple(
            [json.loads(line) for line in lzma.open(args.data / f"contrast_{name}.json.xz", "rt") if line.strip()]
            for name in ("pairs", "ranking")
        )
    first = {}
    for i, (q, _) in enumerate(questions):
        first.setdefault(q, i)
    sample = [first[q] for q in dev["sample"]]
    if args.smoke:  # a quick check of the wiring: a slice of the corpus and questions (+ 3 contrast pairs)
        questions, sample = questions[:50], None
        keep = set(order[:300])
        if contrast:
            pairs = contrast[0][:3]
            rows = [r for r in contrast[1] if r["pair"] < 3]
            contrast = (pairs, rows)
            keep |= {c for r in rows for c in r["candidates"]} | {p[g] for p in pairs for g in ("gold", "meq_gold")}
        order = [pid for pid in order if pid in keep]
    passages = sentences_of(corpus, order)
    report = {
        "device": torch.cuda.get_device_name(0) if device == "cuda" else "cpu",
        "torch": torch.__version__,
        "runs": {},
    }
    base = fp32_copy(args.base, workdir / "base")
    args.out.mkdir(parents=True, exist_ok=True)
    for name, own, overrides in specs:
        train_file = train_files[own.get("data", "train")]
        # DCSR-hard: an earlier run's towers mine the negatives over the benchmark corpus
        if "hard_of" in own and not args.eval_only:
            train_file = mine_dense(
                workdir / own["hard_of"] / "last",
                train_file,
                corpus,
                order,
                workdir / f"{name}_hard.jsonl",
                device,
                keep=int(own.get("hard_keep", 10)),
            )
        values = dict(
            RECIPE,
            base_model=str(workdir / own["from"] / "last" if "from" in own else base),
            train_file=str(train_file),
            dev_file=str(dev_file),
            output_dir=str(workdir / name),
            device=device,
        )
        recipe_file = workdir / f"{name}.yaml"
        recipe_file.write_text(json.dumps(values))  # JSON is YAML
        config = TrainConfig.from_yaml(recipe_file, overrides)
        sized = {}
        if "budget_s" in own and not args.eval_only:
            budget_s, step_s = float(own["budget_s"]), probe_step_seconds(config, workdir / f"{name}_probe")
            config = dataclasses.replace(config, max_steps=steps_in_budget(budget_s, step_s))
            sized = dict(probe_step_s=round(step_s, 4), budget_s=budget_s)
        start = time.perf_counter()
        if args.eval_only:  # a run trained earlier in this --workdir (stopped while evaluating)
            if not (workdir / name / "last").is_dir():
                raise ValueError(f"--eval-only: run {name!r} has no trained model in {workdir / name} (train it first)")
            lines = (workdir / name / "log.jsonl").read_text().splitlines()
            history, seconds = [r for r in map(json.loads, lines) if "loss" in r], None
        else:
            history = Trainer(config).train(resume=False)
            seconds = round(time.perf_counter() - start, 1)
        # the log first: a run stopped during evaluation still leaves its training curve
        (args.out / f"{name}.log.jsonl").write_text((workdir / name / "log.jsonl").read_text())
        result, _, served = evaluate(workdir / name / "last", passages, questions, device, sample, order, contrast)
        result.update(
            train_s=seconds,
            steps=history[-1]["step"] if history else 0,
            first_loss=round(sum(h["loss"] for h in history[:10]) / max(1, len(history[:10])), 4),
            last_loss=round(sum(h["loss"] for h in history[-10:]) / max(1, len(history[-10:])), 4),
            data=own.get("data", "train"),
            **sized,
            **{k: own[k] for k in ("hard_of", "from") if k in own},
            settings={k: v for k, v in vars(config).items() if k not in ("train_file", "dev_file", "base_model")},
        )
        report["runs"][name] = result
        print(name, json.dumps(result), flush=True)
        (args.out / "gpu_train.json").write_text(json.dumps(report, indent=1))
        # squad_open.py's ranked:FILE. xz preset 1: ~9 MB for all of SQuAD dev in seconds; the default
        # preset took so long on the H100 machine that a fixed time slot ran out mid-file
        with lzma.open(args.out / f"{name}.ranked.json.xz", "wt", preset=1) as handle:
            json.dump({"run": name, **served}, handle)
        if name in args.export:  # parts go to --export-dir, not --out (which keeps the small reports)
            args.export_dir.mkdir(parents=True, exist_ok=True)
            export(workdir / name / "last", args.export_dir, name)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    p = commands.add_parser("pack")
    p.add_argument("--out", type=Path, default=Path(".gpu/train"))
    p = commands.add_parser("pack-model", help="a base model as fp16 safetensors, xz-compressed, for the GPU machine")
    p.add_argument("model", nargs="?", default="all-MiniLM-L6-v2")
    p.add_argument("--out", type=Path, default=Path(".gpu/minilm"))
    p = commands.add_parser("run")
    p.add_argument("--data", type=Path, default=Path(".gpu/train"))
    p.add_argument("--base", type=Path, default=Path(".gpu/minilm"))
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--run", action="append", required=True, help="NAME[:key=value,...] over the README recipe")
    p.add_argument("--export", action="append", default=[], help="runs whose towers come back (fp16, in parts)")
    p.add_argument("--export-dir", type=Path, default=Path("/tmp/dcsr_export"))
    p.add_argument("--workdir", type=Path, default=Path("/tmp/dcsr_gpu"), help="records, base copy and runs")
    p.add_argument("--smoke", action="store_true", help="evaluate on a slice only (checks the wiring)")
    p.add_argument("--eval-only", action="store_true", help="evaluate the runs trained earlier in --workdir")
    p = commands.add_parser("unpack")
    p.add_argument("parts", type=Path)
    p.add_argument("target", type=Path)
    args = parser.parse_args(argv)
    if args.command == "pack":
        pack(args.out)
    elif args.command == "pack-model":
        pack_model(args.model, args.out)
    elif args.command == "run":
        run(args)
    else:
        unpack(args.parts, args.target)


if __name__ == "__main__":
    main()
