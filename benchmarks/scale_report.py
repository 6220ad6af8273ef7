"""Tables and plots of the scale benchmarks (``ann_study.py``, ``cost_growth.py``) for the README.

    .venv/bin/python benchmarks/scale_report.py     # -> benchmarks/results/{ann_study,cost_growth}.{md,svg}

Needs the ``plots`` extra (matplotlib).
"""
import json
from pathlib import Path
from typing import Dict, List

RESULTS = Path(__file__).resolve().parent / "results"
REFERENCE = "EmbeddingRetriever Flat"


def ann_table(report: Dict) -> str:
    rows = report["rows"]
    reference = next(r for r in rows if r["setting"] == REFERENCE)
    flat = {r["model"]: r for r in rows if r["setting"] == "Flat (top_n=3000)"}
    lines = [f"Speed ratios only for rows measured in the reference's run ({reference['run']}); † latency from "
             "before the Flat scan moved to torch.", "",
             "| model | index (search params, top_n) | top-1 | top-20 | top-100 | Δ top-20 vs DCSR Flat | retrieve p50 / p95 ms "
             "| x EmbeddingRetriever p50 / p95 | retrieve_batch ms/q | bytes / passage | build s | run |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in sorted(rows, key=lambda r: (r is not reference, r["model"] != "MiniLM zero-shot", r["run"] != reference["run"])):
        delta = "" if r["model"] not in flat or r is reference else f"{r['top20'] - flat[r['model']]['top20']:+.1f}"
        ratio = "-"
        if r["run"] == reference["run"]:
            ratio = f"{r['retrieve_ms_p50'] / reference['retrieve_ms_p50']:.2f} / {r['retrieve_ms_p95'] / reference['retrieve_ms_p95']:.2f}"
        mark = " †" if "note" in r else ""
        lines.append(f"| {r['model']} | {r['setting']} | {r['top1']} | {r['top20']} | {r['top100']} | {delta} | "
                     f"{r['retrieve_ms_p50']} / {r['retrieve_ms_p95']}{mark} | {ratio} | {r['retrieve_batch_ms_per_query']} | "
                     f"{r['bytes_per_passage']:,} | {r.get('build_s', '')} | {r['run']} |")
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
            ax.annotate(r["setting"].replace(" (", "\n("), (r[x_key], r["top20"]), fontsize=5, alpha=0.7,
                        xytext=(3, 2), textcoords="offset points")
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
    lines = [f"Index `{report['factory']}`, search params {report['search_params']}, top_n {report['top_n_sentences']}.",
             "",
             "| passages | sentence vectors | train s | real rows: Haystack write s | distractors: write s (of it FAISS add) "
             "| map s | build peak RAM GiB | disk GB | load -> first answer s (without map) | retrieve p50 / p95 ms "
             "| retrieve_batch ms/q | query peak RAM GiB | top-1 / 20 / 100 |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for row in report["rows"]:
        b, q, cold = row["build"], row["query"], row["first_query_without_map"]
        disk = sum(b["disk_bytes"].values()) / 1e9
        lines.append(f"| {row['size']:,} | {b['sentences']:,} | {b['train_s']} | {b['real_write_s']} | "
                     f"{b['distractor_write_s']} ({b['distractor_index_add_s']}) | {b['save_and_map_s']} | "
                     f"{b['build_peak_rss_gib']} | {disk:.2f} | {q['load_to_first_answer_s']} ({cold['load_to_first_answer_s']}) | "
                     f"{q['retrieve_ms_p50']} / {q['retrieve_ms_p95']} | {q['retrieve_batch_ms_per_query']} | "
                     f"{q['peak_rss_gib']} | {q['top1']} / {q['top20']} / {q['top100']} |")
    return "\n".join(lines) + "\n"


def growth_svg(report: Dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sizes = [r["size"] for r in report["rows"]]
    series: Dict[str, List[float]] = {
        "FAISS index add (s)": [r["build"]["distractor_index_add_s"] for r in report["rows"]],
        "retrieve p50 (ms)": [r["query"]["retrieve_ms_p50"] for r in report["rows"]],
        "retrieve p95 (ms)": [r["query"]["retrieve_ms_p95"] for r in report["rows"]],
        "load -> first answer (s)": [r["query"]["load_to_first_answer_s"] for r in report["rows"]],
        "load -> first answer, no saved map (s)": [r["first_query_without_map"]["load_to_first_answer_s"]
                                                   for r in report["rows"]],
        "query peak RAM (GiB)": [r["query"]["peak_rss_gib"] for r in report["rows"]],
    }
    fig, ax = plt.subplots(figsize=(8, 5))
    for name, values in series.items():
        ax.plot(sizes, values, marker="o", label=name)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("passages in the store (log)")
    ax.set_ylabel("cost (log)")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, format="svg")
    plt.close(fig)


def main() -> None:
    ann = RESULTS / "ann_study.json"
    if ann.is_file():
        report = json.loads(ann.read_text())
        (RESULTS / "ann_study.md").write_text(ann_table(report))
        pareto_svg(report, "retrieve_ms_p50", "retrieve p50 (ms), one query at a time", RESULTS / "ann_latency.svg")
        pareto_svg(report, "bytes_per_passage", "index bytes per passage (log)", RESULTS / "ann_bytes.svg", log_x=True)
    growth = RESULTS / "cost_growth.json"
    if growth.is_file():
        report = json.loads(growth.read_text())
        (RESULTS / "cost_growth.md").write_text(growth_table(report))
        growth_svg(report, RESULTS / "cost_growth.svg")


if __name__ == "__main__":
    main()
