"""Tables and plots of the scale benchmarks (``ann_study.py``, ``cost_growth.py``) for the README.

    .venv/bin/python benchmarks/scale.py report     # -> benchmarks/results/{ann_study,cost_growth}.{md,svg}

Needs the ``plots`` extra (matplotlib).
"""

import argparse
import json
from pathlib import Path
from typing import Dict, List

RESULTS = Path(__file__).resolve().parents[1] / "results"
REFERENCE = "EmbeddingRetriever Flat"


def ann_table(report: Dict) -> str:
    rows = report["rows"]
    reference = next(r for r in rows if r["setting"] == REFERENCE)
    flat = {}  # each model's exact row with the most sentence hits, the reference of its Δ column
    for r in rows:
        most = flat.get(r["model"], {}).get("top_n_sentences", 0)
        if r["setting"].startswith("Flat (") and r["top_n_sentences"] > most:
            flat[r["model"]] = r
    lines = [
        "Latency columns come from several runs (the `run` column): compare speed within a run only; the "
        "side-by-side speed comparison is ann_latency.json. † see the row's note in ann_study.json (latency from "
        "before the Flat scan moved to torch, or from cost_growth.py).",
        "",
        "| model | index (search params, top_n) | top-1 | top-20 | top-100 | "
        "Δ top-20 vs DCSR Flat | retrieve p50 / p95 ms "
        "| retrieve_batch ms/q | bytes / passage | build s | run |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in sorted(
        rows, key=lambda r: (r is not reference, r["model"] != "MiniLM zero-shot", r["run"] != reference["run"])
    ):
        delta = "" if r["model"] not in flat or r is reference else f"{r['top20'] - flat[r['model']]['top20']:+.1f}"
        mark = " †" if "note" in r else ""
        lines.append(
            f"| {r['model']} | {r['setting']} | {r['top1']} | {r['top20']} | {r['top100']} | {delta} | "
            f"{r['retrieve_ms_p50']} / {r['retrieve_ms_p95']}{mark} | {r['retrieve_batch_ms_per_query']} | "
            f"{r['bytes_per_passage']:,} | {r.get('build_s', '')} | {r['run']} |"
        )
    return "\n".join(lines) + "\n"


def pareto_svg(report: Dict, x_key: str, x_label: str, path: Path, log_x: bool = False) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 5))
    for model in dict.fromkeys(r["model"] for r in report["rows"]):
        rows = [r for r in report["rows"] if r["model"] == model]
        ax.scatter([r[x_key] for r in rows], [r["top20"] for r in rows], label=model, alpha=0.8)
        for r in rows:
            ax.annotate(
                r["setting"].replace(" (", "\n("),
                (r[x_key], r["top20"]),
                fontsize=5,
                alpha=0.7,
                xytext=(3, 2),
                textcoords="offset points",
            )
    if log_x:
        ax.set_xscale("log")
    ax.set_xlabel(x_label)
    ax.set_ylabel("top-20 accuracy (%), 1,000 SQuAD dev questions")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, format="svg")
    plt.close(fig)


def growth_table(report: Dict) -> str:
    lines = [
        f"Index `{report['factory']}`, search params {report['search_params']}, top_n {report['top_n_sentences']}.",
        "",
        "| passages | sentence vectors | train s | real rows: Haystack write s | "
        "distractors: write s (of it FAISS add) "
        "| map s | build peak RAM GiB | disk GB | load -> first answer s (without map) | retrieve p50 / p95 ms "
        "| retrieve_batch ms/q | query peak RAM GiB | top-1 / 20 / 100 |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in [r for r in report["rows"] if "query" in r]:
        b, q, cold = row["build"], row["query"], row["first_query_without_map"]
        disk = sum(b["disk_bytes"].values()) / 1e9
        lines.append(
            f"| {row['size']:,} | {b['sentences']:,} | {b['train_s']} | {b['real_write_s']} | "
            f"{b['distractor_write_s']} ({b['distractor_index_add_s']}) | {b['save_and_map_s']} | "
            f"{b['build_peak_rss_gib']} | {disk:.2f} | {q['load_to_first_answer_s']} "
            f"({cold['load_to_first_answer_s']}) | "
            f"{q['retrieve_ms_p50']} / {q['retrieve_ms_p95']} | {q['retrieve_batch_ms_per_query']} | "
            f"{q['peak_rss_gib']} | {q['top1']} / {q['top20']} / {q['top100']} |"
        )
    return "\n".join(lines) + "\n"


def growth_series(report: Dict) -> Dict[str, List[float]]:
    return {
        "FAISS index add (s)": [r["build"]["distractor_index_add_s"] for r in report["rows"]],
        "retrieve p50 (ms)": [r["query"]["retrieve_ms_p50"] for r in report["rows"]],
        "retrieve p95 (ms)": [r["query"]["retrieve_ms_p95"] for r in report["rows"]],
        "load -> first answer (s)": [r["query"]["load_to_first_answer_s"] for r in report["rows"]],
        "load -> first answer, no saved map (s)": [
            r["first_query_without_map"]["load_to_first_answer_s"] for r in report["rows"]
        ],
        "query peak RAM (GiB)": [r["query"]["peak_rss_gib"] for r in report["rows"]],
    }


def growth_svg(report: Dict, path: Path) -> None:
    """Each cost against the number of passages, log-log."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 5))
    rows = [r for r in report["rows"] if "query" in r]
    sizes = [r["size"] for r in rows]
    for name, values in growth_series({**report, "rows": rows}).items():
        ax.plot(sizes, [v if v else float("nan") for v in values], marker="o", label=name)
    ax.set_title(f"{report['factory']} {report['search_params'] or ''}")
    _log_axes(ax)
    fig.tight_layout()
    fig.savefig(path, format="svg")
    plt.close(fig)


def _log_axes(ax) -> None:
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("passages in the store (log)")
    ax.set_ylabel("cost (log)")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8)


def main() -> None:
    argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter).parse_args()
    ann = RESULTS / "ann_study.json"
    if ann.is_file():
        report = json.loads(ann.read_text())
        (RESULTS / "ann_study.md").write_text(ann_table(report))
        latency = RESULTS / "ann_latency.json"
        if latency.is_file():  # speed only from the one run that measured the systems side by side
            same_run = json.loads(latency.read_text())
            accuracy = {r["setting"]: r for r in report["rows"] if r["model"] == "MiniLM zero-shot"}
            rows = [
                {**accuracy[r["setting"]], **r, "model": f"MiniLM zero-shot, one run ({same_run['run']})"}
                for r in same_run["rows"]
            ]
            pareto_svg(
                {"rows": rows}, "retrieve_ms_p50", "retrieve p50 (ms), one query at a time", RESULTS / "ann_latency.svg"
            )
        pareto_svg(report, "bytes_per_passage", "index bytes per passage (log)", RESULTS / "ann_bytes.svg", log_x=True)
    growth_json = RESULTS / "cost_growth.json"  # the report cost_growth.py writes; side studies sit beside it
    if growth_json.is_file():
        growth = json.loads(growth_json.read_text())
        (RESULTS / "cost_growth.md").write_text(growth_table(growth))
        growth_svg(growth, RESULTS / "cost_growth.svg")


if __name__ == "__main__":
    main()
