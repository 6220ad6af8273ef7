"""Draw docs/img/hasans.svg: how HasAns ranks passages for one real query.

Five passages (the test corpus), all-MiniLM-L6-v2 zero-shot, an in-memory store. Each bar is one
retrieved sentence's probability p_i (its score softmaxed over the top sentences); each passage's
HasAns = 1 - prod(1 - p_i) is printed beside its bars.

    python examples/hasans_figure.py [--query "When was the Eiffel Tower completed?"] [--out docs/img/hasans.svg]
"""

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--query", default="Which famous landmark is in the capital?")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "img" / "hasans.svg")
    args = parser.parse_args(argv)

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from haystack.document_stores import InMemoryDocumentStore
    from haystack.schema import Document

    sys.path.insert(0, str(ROOT / "tests" / "support"))
    from corpus import CORPUS

    from haystack_dcsr import DCSRRetriever, SentencePreprocessor

    store = InMemoryDocumentStore(embedding_dim=384, similarity="dot_product")
    store.write_documents(
        SentencePreprocessor(progress_bar=False).process([Document(content=t, id=title) for title, t in CORPUS])[
            "documents"
        ]
    )
    retriever = DCSRRetriever(document_store=store, progress_bar=False, top_k=3)
    store.update_embeddings(retriever)
    passages = retriever.retrieve(args.query)

    fig, ax = plt.subplots(figsize=(8, 3.4))
    labels, values, colors, y = [], [], [], 0
    palette = ["#1f77b4", "#ff7f0e", "#2ca02c"]
    ticks = []
    for rank, passage in enumerate(passages):
        support = sorted(passage.meta["dcsr_sentences"], key=lambda s: s["sentence_index"])
        for sentence in support:
            text = sentence["text"] if len(sentence["text"]) <= 48 else sentence["text"][:45] + "..."
            labels.append(f"{passage.id} #{sentence['sentence_index']}: {text}")
            values.append(sentence["probability"])
            colors.append(palette[rank % len(palette)])
            ticks.append(y)
            y += 1
        ax.text(
            1.02,
            ticks[-1] - (len(support) - 1) / 2,
            f"HasAns {passage.score:.3f}",
            va="center",
            transform=ax.get_yaxis_transform(),
            color=palette[rank % len(palette)],
            fontsize=9,
        )
        y += 0.6
    ax.barh(ticks, values, color=colors)
    ax.set_yticks(ticks, labels, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("p_i: the sentence's score softmaxed over the top sentences")
    ax.set_title(f"Query: {args.query!r}\npassages ranked by HasAns = 1 - prod(1 - p_i)", fontsize=9)
    fig.tight_layout()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(args.out, metadata={"Date": None} if args.out.suffix == ".svg" else None)
    print(f"{args.out}: " + ", ".join(f"{p.id} {p.score:.3f}" for p in passages))


if __name__ == "__main__":
    main()
