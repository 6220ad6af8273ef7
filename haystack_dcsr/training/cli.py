"""``dcsr-train`` (= ``python -m haystack_dcsr.training``): convert data, mine hard negatives, train.

dcsr-train convert-squad $SQUAD/train-v1.1.json.gz data/squad_train.jsonl --corpus data/corpus.jsonl
dcsr-train mine-bm25 data/squad_train.jsonl data/corpus.jsonl data/squad_train_bm25.jsonl
dcsr-train train --config squad_dcsr.yaml --set lr=1e-5 --set epochs=2   # a shipped recipe, or a file
torchrun --nproc_per_node 8 -m haystack_dcsr.training train --config trainer/configs/squad_dcsr.yaml
dcsr-train mine-dense runs/dcsr/best data/squad_train.jsonl data/corpus.jsonl data/squad_train_dcsr_hard.jsonl
dcsr-train train-cross-encoder --set max_steps=400 --set output_dir=runs/cross_encoder
dcsr-train publish runs/dcsr/best my-org/dcsr-squad
"""

import argparse
import json
import logging
import sys
import time
import typing
from pathlib import Path
from typing import List, Optional

from haystack_dcsr.training.data import (  # noqa: F401  (read_corpus, write_corpus: imported from here too)
    DataError,
    load_records,
    read_corpus,
    squad_to_records,
    write_corpus,
    write_records,
)

MEQ_THRESHOLD = 0.79  # all-MiniLM-L6-v2: keeps 90% of AmbigQA dev MEQ-like pairs (calibrate-meq: 0.788)


def convert_squad(args) -> None:
    records, passages = squad_to_records(args.squad, id_prefix=args.id_prefix)
    write_records(records, args.out)
    if args.corpus:
        write_corpus(passages, args.corpus)
    print(
        f"{len(records)} records -> {args.out}; {len(passages)} passages"
        + (f" -> {args.corpus}" if args.corpus else "")
    )


def mine_bm25(args) -> None:
    from haystack_dcsr.training.mining import bm25_search, mine_hard_negatives, retriever_search

    records = load_records(args.records).records
    start = time.perf_counter()
    if args.elasticsearch_url:  # the Haystack 1.x adapter: needs farm-haystack and a server
        from haystack_dcsr.haystack1.mining import bm25_retriever  # the one import of Haystack 1.x here

        search = retriever_search(bm25_retriever(read_corpus(args.corpus), elasticsearch_url=args.elasticsearch_url))
    else:
        search = bm25_search(read_corpus(args.corpus))
    indexed = time.perf_counter()
    mined = mine_hard_negatives(records, search, args.out, top_k=args.top_k, keep=args.keep, batch_size=args.batch_size)
    done = time.perf_counter()
    print(f"indexed in {indexed - start:.1f}s; mined {mined} questions in {done - indexed:.1f}s -> {args.out}")


def mine_dense(args) -> None:
    from haystack_dcsr.training.mining import dense_search, mine_hard_negatives

    search = dense_search(args.model, read_corpus(args.corpus), device=args.device)
    mined = mine_hard_negatives(load_records(args.records).records, search, args.out, top_k=args.top_k, keep=args.keep)
    print(f"mined {mined} questions -> {args.out}")


def meq_filter(args):
    from haystack_dcsr.core.text.meq import MEQFilter

    return MEQFilter.with_model(
        args.model, threshold=args.threshold, max_edits=args.max_edits, answer_rule=args.answer_rule
    )


def calibrate_meq(args) -> None:
    from haystack_dcsr.core.text.meq import calibrate_threshold
    from haystack_dcsr.training.meq_data import ambigqa_pairs

    pairs = ambigqa_pairs(args.ambigqa)
    threshold = calibrate_threshold(pairs, meq_filter(args).embed, keep=args.keep)
    print(
        json.dumps(
            {"reference_pairs": len(pairs), "keep": args.keep, "model": args.model, "threshold": round(threshold, 4)}
        )
    )


def build_contrast_set(args) -> None:
    from haystack_dcsr.training.meq_data import build_contrast_set as build

    summary = build(
        load_records(args.records).records,
        read_corpus(args.corpus),
        meq_filter(args),
        args.out_dir,
        seed=args.seed,
        keep_repeats=args.keep_repeats,
    )
    print(json.dumps(summary))


def build_meq_augmentation(args) -> None:
    from haystack_dcsr.training.meq_data import build_augmentation

    print(
        json.dumps(
            build_augmentation(load_records(args.records).records, meq_filter(args), args.out, max_meqs=args.max_meqs)
        )
    )


def train(args) -> None:
    from haystack_dcsr.training.config import TrainConfig
    from haystack_dcsr.training.engine import Trainer

    config = TrainConfig.from_yaml(args.config, args.set)
    history = Trainer(config).train(resume=not args.no_resume)
    if history:
        print(
            f"trained {history[-1]['step']} steps; last loss {history[-1]['loss']:.4f}; encoders in {config.output_dir}"
        )


def train_cross_encoder(args) -> None:
    from haystack_dcsr.training.config import CrossEncoderConfig
    from haystack_dcsr.training.cross_encoder import train_cross_encoder as run

    print(f"cross-encoder -> {run(CrossEncoderConfig.from_yaml(args.config, args.set), args.device)}")


def average(args) -> None:
    from haystack_dcsr.training.averaging import average_checkpoints

    print(f"averaged {len(args.directories)} checkpoints -> {average_checkpoints(args.directories, args.out)}")


def build_model(args) -> None:
    from haystack_dcsr.training.build_model import build_model as build
    from haystack_dcsr.training.config import parse_overrides

    overrides = parse_overrides(args.set)
    out = build(args.data, args.out, args.corpus, args.dev, args.budget, args.recipe, overrides, args.dry_run)
    if not args.dry_run:
        print(f"model directory: {out} (load it with DCSRRetriever(model={str(out)!r}))")


def publish(args) -> None:
    from haystack_dcsr.core.model.hub import publish as upload

    result = upload(args.directory, args.repo_id, private=args.private, token=args.token, dry_run=args.dry_run)
    if args.dry_run:
        print(f"would upload {len(result)} files from {args.directory} to {args.repo_id}:")
        print("\n".join(f"  {name}" for name in result))
    else:
        print(result)


def print_settings(args) -> None:
    from haystack_dcsr.training.recipes import set_arguments, settings

    try:
        value = settings(args.file, args.key)
    except (FileNotFoundError, KeyError) as error:
        raise DataError(str(error).strip('"')) from None
    if args.sets:
        if not isinstance(value, dict):
            raise DataError(f"{args.file}: {args.key!r} is a value, not a mapping of settings (drop --sets)")
        print("\n".join(set_arguments(value)))
    else:
        print(value if not isinstance(value, (dict, list)) else json.dumps(value))


def build_parser() -> argparse.ArgumentParser:
    """Every subcommand and argument of ``dcsr-train``, each with its help text."""
    parser = argparse.ArgumentParser(prog="python -m haystack_dcsr.training", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)

    p = commands.add_parser("convert-squad", help="SQuAD v1.1 JSON(.gz) -> DPR-format JSONL (+ corpus JSONL)")
    p.add_argument("squad", help="a SQuAD v1.1 file (train-v1.1.json or .json.gz)")
    p.add_argument("out", help="the training records to write (JSONL, one question a line)")
    p.add_argument("--corpus", help="also write every paragraph as a corpus JSONL")
    p.add_argument("--id-prefix", default="", help="prefix for passage ids (e.g. train-)")
    p.set_defaults(func=convert_squad)

    p = commands.add_parser("mine-bm25", help="add BM25 hard negatives (embedded sparse BM25, or Elasticsearch)")
    p.add_argument("records", help="training records (JSONL: question, answers, positive_ctxs; e.g. convert-squad's)")
    p.add_argument("corpus", help="passages to mine from (JSONL, one {passage_id, title, text} a line)")
    p.add_argument("out", help="the records with hard_negative_ctxs added (JSONL)")
    p.add_argument(
        "--elasticsearch-url",
        help="mine through Haystack 1.x's ElasticsearchDocumentStore at this URL instead of the embedded BM25",
    )
    p.add_argument("--top-k", type=int, default=30, help="BM25 passages read per question (default 30)")
    p.add_argument("--keep", type=int, default=30, help="hard negatives kept per question: answerless, not gold")
    p.add_argument("--batch-size", type=int, default=1024, help="questions scored together (memory vs speed)")
    p.set_defaults(func=mine_bm25)

    p = commands.add_parser("mine-dense", help="model-based hard negatives from a trained DCSR (DCSR-hard)")
    p.add_argument("model", help="a directory with query_encoder/ and passage_encoder/ (e.g. runs/dcsr/best)")
    p.add_argument("records", help="training records (JSONL), e.g. mine-bm25's output")
    p.add_argument("corpus", help="passages to mine from (JSONL, one {passage_id, title, text} a line)")
    p.add_argument("out", help="the records with the model's hard negatives in place of BM25's (JSONL)")
    p.add_argument("--top-k", type=int, default=30, help="passages the model ranks per question (default 30)")
    p.add_argument("--keep", type=int, default=30, help="hard negatives kept per question: answerless, not gold")
    p.add_argument("--device", help="where the model runs and the index lives (default: a GPU if there is one)")
    p.set_defaults(func=mine_dense)

    def meq_options(p, threshold=True, answers=True):
        from haystack_dcsr.core.text.meq import AnswerRule

        p.add_argument("--model", default="all-MiniLM-L6-v2", help="encoder for the cosine rule")
        if threshold:
            p.add_argument(
                "--threshold",
                type=float,
                default=MEQ_THRESHOLD,
                help="minimum cosine (default: calibrated for all-MiniLM-L6-v2; docs/guides/meq.md)",
            )
        p.add_argument("--max-edits", type=int, default=3, help="most words an MEQ may change (the paper: 1-3)")
        if answers:
            p.add_argument(
                "--answer-rule",
                choices=typing.get_args(AnswerRule),
                default="shorter_form",
                help="what counts as the same answer: 'exact' rebuilds the sets the benchmark tables used "
                "(it let 'Einstein' / 'Albert Einstein' through as different answers)",
            )

    p = commands.add_parser("calibrate-meq", help="the cosine threshold that keeps --keep of AmbigQA's MEQ-like pairs")
    p.add_argument("ambigqa", help="AmbigQA dev_light.json(.gz)")
    p.add_argument("--keep", type=float, default=0.9, help="share of AmbigQA's MEQ-like pairs to keep (default 0.9)")
    meq_options(p, threshold=False, answers=False)
    p.set_defaults(func=calibrate_meq, threshold=0.0, answer_rule="shorter_form")

    p = commands.add_parser("build-contrast-set", help="mine MEQ pairs; write pairs.jsonl and ranking.jsonl")
    p.add_argument("records", help="DPR-format records with gold passages (e.g. data/squad_dev.jsonl)")
    p.add_argument("corpus", help="passages (JSONL) the contrast set's candidates are drawn from")
    p.add_argument("out_dir", help="folder for pairs.jsonl and ranking.jsonl")
    p.add_argument("--seed", type=int, default=0, help="seed of the random candidates")
    p.add_argument(
        "--keep-repeats",
        action="store_true",
        help="keep pairs of repeated question texts (the 352-pair set of the benchmark tables)",
    )
    meq_options(p)
    p.set_defaults(func=build_contrast_set)

    p = commands.add_parser(
        "build-meq-augmentation", help="add mined MEQs (q-) and paraphrases (q+) to training records"
    )
    p.add_argument("records", help="training records (JSONL), e.g. mine-bm25's output")
    p.add_argument("out", help="the records with negative_questions (q-) and positive_questions (q+) added")
    p.add_argument("--max-meqs", type=int, default=5, help="MEQs kept per question")
    meq_options(p)
    p.set_defaults(func=build_meq_augmentation)

    from haystack_dcsr.training.config import describe_fields

    p = commands.add_parser(
        "train",
        help="fine-tune the towers (also under torchrun)",
        epilog=describe_fields(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--config", help="YAML file of TrainConfig fields")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="override a config field")
    p.add_argument("--no-resume", action="store_true", help="ignore an existing checkpoint in output_dir")
    p.set_defaults(func=train)

    from haystack_dcsr.training.config import CrossEncoderConfig

    p = commands.add_parser(
        "train-cross-encoder",
        help="fine-tune a cross-encoder reranker (MEQ golds as contrast negatives)",
        epilog=describe_fields(CrossEncoderConfig),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--config", help="YAML file of CrossEncoderConfig fields")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="override a config field")
    p.add_argument("--device", help="cpu, cuda or cuda:N (default: a GPU when there is one)")
    p.set_defaults(func=train_cross_encoder)

    p = commands.add_parser(
        "average-checkpoints", help="uniform weight average of checkpoints of one model (e.g. training stages' ends)"
    )
    p.add_argument("directories", nargs="+", type=Path, help="two or more model directories of one architecture")
    p.add_argument("--out", type=Path, required=True, help="the new directory (must not exist)")
    p.set_defaults(func=average)

    from haystack_dcsr.training.build_model import DEFAULT_RECIPE

    p = commands.add_parser(
        "build-model",
        help="the recommended model in one resumable command: data, BM25 negatives, a first model, "
        "its own negatives, DCSR-hard, the model card",
    )
    p.add_argument("--data", type=Path, required=True, help="SQuAD v1.1 JSON(.gz) training file, or records JSONL")
    p.add_argument("--corpus", type=Path, help="the passages (JSONL) the records come from; needed with records")
    p.add_argument("--dev", type=Path, help="dev data (SQuAD JSON or records JSONL): validation and best/ selection")
    p.add_argument("--out", type=Path, required=True, help="the model directory to write (work files in out/work)")
    p.add_argument("--budget", choices=("cpu", "gpu"), default="cpu", help="the recipe's step counts (default cpu)")
    p.add_argument("--recipe", default=DEFAULT_RECIPE, help=f"the recipe file (default: the shipped {DEFAULT_RECIPE})")
    p.add_argument(
        "--set", action="append", default=[], metavar="KEY=VALUE", help="override a setting of both training stages"
    )
    p.add_argument("--dry-run", action="store_true", help="list the stages with estimated times; run nothing")
    p.set_defaults(func=build_model)

    p = commands.add_parser("settings", help="print settings of a recipe (a file or a shipped recipe's name)")
    p.add_argument("file", help="a YAML recipe, e.g. build_model.yaml (shipped) or trainer/configs/build_model.yaml")
    p.add_argument("key", nargs="?", default="", help="a dotted key, e.g. budgets.gpu.first (default: the whole file)")
    p.add_argument("--sets", action="store_true", help="print a mapping as --set KEY=VALUE lines for dcsr-train train")
    p.set_defaults(func=print_settings)

    p = commands.add_parser("publish", help="upload a trained model directory (towers + model card) to the hub")
    p.add_argument("directory", help="e.g. runs/squad_dcsr/best (query_encoder/, passage_encoder/, README.md)")
    p.add_argument("repo_id", help="org/name on the Hugging Face hub")
    p.add_argument("--private", action="store_true", help="create the hub repository as private")
    p.add_argument("--token", help="default: the token of huggingface-cli login / HF_TOKEN")
    p.add_argument("--dry-run", action="store_true", help="list the files that would be uploaded; send nothing")
    p.set_defaults(func=publish)
    return parser


def main(argv: Optional[List[str]] = None) -> None:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    from haystack_dcsr.core.model.hub import PublishError
    from haystack_dcsr.training.averaging import CheckpointMismatch
    from haystack_dcsr.training.build_model import BuildError
    from haystack_dcsr.training.checkpoints import CheckpointError
    from haystack_dcsr.training.config import ConfigError

    try:
        args.func(args)
    except (
        DataError,
        ConfigError,
        CheckpointError,
        CheckpointMismatch,
        FileExistsError,
        PublishError,
        BuildError,
    ) as error:
        print(f"error: {error}", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
