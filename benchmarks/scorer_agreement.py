"""Per-question scores of eval.scoring.metrics against the benchmarks' official scorers, on real dev questions.

    python benchmarks/scorer_agreement.py --official DIR [--data ../shared/data/raw] [--per-question 20]

DIR holds the official scorer files, unmodified (the project does not ship them):
    DIR/hotpot_evaluate_v1.py                  HotpotQA
    DIR/2wikimultihop_evaluate_v1.1.py         2WikiMultiHopQA
    DIR/musique/metrics/answer.py, support.py  MuSiQue (or DIR/metrics/...)
A missing one skips its dataset. The files' imports of `ujson` (stdlib json stands in when it is
not installed) and of MuSiQue's `metrics.metric` base class (a stub when metric.py is absent) are
provided through sys.modules, so the files run as published.

For every question of the non-holdout files it builds a fixed-seed set of adversarial
predictions (the gold answer and its case/punctuation/article variants, an alias, yes/no,
empty answers, partial answers, another question's answer; gold support, subsets,
supersets, title case changes and case duplicates, no support, sentence indices past the
paragraph end, titles outside the pool) and scores each with the project
(`eval.data.loaders.load_file` + `eval.scoring.metrics.score_question`) and with the official functions, then
prints per dataset x metric how many agree exactly (|difference| < 1e-12) and the first
disagreements. A few synthetic questions cover what real data never has (a gold answer that
normalizes to nothing, no gold support). Exits 1 if anything disagrees.

Official calls per question: HotpotQA through its `eval(prediction_file, gold_file)` on a
one-question pair of files (its per-question means are unrounded, and joint EM/F1 exist only
there); 2Wiki through `update_answer` / `update_sp` (its `eval` rounds to 0.01 and needs
evidence triples); MuSiQue through one fresh `AnswerMetric` / `SupportMetric` per prediction.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import importlib
import importlib.util
import io
import json
import random
import sys
import tempfile
import types
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script from anywhere

from eval.data.loaders import HOLDOUT_FILES, load_file  # noqa: E402
from eval.data.schema import Question  # noqa: E402
from eval.scoring.metrics import score_question  # noqa: E402

FILES = [
    ("hotpotqa", "hotpotqa/hotpot_dev_distractor.rpt_sample500_seed1.jsonl"),
    ("hotpotqa", "hotpotqa/hotpot_dev_distractor.rpt_sample300_seed2.jsonl"),
    ("hotpotqa", "hotpotqa/hotpot_dev_distractor.reflexion_sample100.jsonl"),
    ("2wiki", "2wikimultihopqa/2wikimultihopqa_dev_first200.flashrag.jsonl"),
    ("musique", "musique/musique_ans_v1.0_dev_sample100.kag.json"),
]
# project record key -> official key
METRICS = {
    "hotpotqa": {"answer_f1": "f1", "em": "em", "support_f1": "sp_f1", "sp_em": "sp_em",
                 "joint_em": "joint_em", "joint_f1": "joint_f1"},
    "2wiki": {"answer_f1": "f1", "em": "em", "support_f1": "sp_f1", "sp_em": "sp_em"},
    "musique": {"answer_f1": "f1", "em": "em", "support_f1": "sp_f1", "sp_em": "sp_em"},
}
TOLERANCE = 1e-12


# ---------------------------------------------------------------- gold, as the official scripts see it


@dataclass
class Gold:
    """One question in the official scripts' terms, read from the raw record."""

    id: str
    answer: str
    aliases: list[str]
    facts: list[list]  # [title, sentence] pairs (HotpotQA, 2Wiki)
    support_idxs: list[int]  # supporting paragraph idx (MuSiQue)
    context: list[tuple[str, int]] = field(default_factory=list)  # (title, sentence count) or (title, idx)


def read_raw(path: Path) -> list[dict]:
    text = path.read_text(encoding="utf-8")
    if text.lstrip().startswith("["):
        return json.loads(text)
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def raw_gold(record: dict, dataset: str) -> Gold:
    if dataset == "musique":
        paragraphs = record["paragraphs"]
        return Gold(record["id"], record["answer"], list(record.get("answer_aliases") or []), [],
                    [p["idx"] for p in paragraphs if p["is_supporting"]],
                    [(p["title"], p["idx"]) for p in paragraphs])
    if "golden_answers" in record:  # 2Wiki FlashRAG layout
        meta = record["metadata"]
        facts, ctx = meta["supporting_facts"], meta["context"]
        return Gold(record["id"], record["golden_answers"][0], list(record["golden_answers"][1:]),
                    [[t, i] for t, i in zip(facts["title"], facts["sent_id"])], [],
                    [(t, len(s)) for t, s in zip(ctx["title"], ctx["content"])])
    facts, ctx = record["supporting_facts"], record["context"]  # HotpotQA Hugging Face layout
    return Gold(record["id"], record["answer"], [], [[t, i] for t, i in zip(facts["title"], facts["sent_id"])], [],
                [(t, len(s)) for t, s in zip(ctx["title"], ctx["sentences"])])


# ---------------------------------------------------------------- adversarial predictions


@dataclass
class Prediction:
    answer: str
    cited: list[tuple[str, int]]  # what the project gets
    official_support: list  # what the official scorer gets: [title, sent] pairs or paragraph idxs


def answer_variants(gold: Gold, others: list[str], rng: random.Random) -> list[str]:
    a = gold.answer
    tokens = a.split()
    variants = [
        a, a.upper(), a.lower(), f"The {a}!", f"  {a}.  ", f"a {a}", " ".join(t for t in tokens if t.lower() != "the"),
        a.replace(" ", "-"), f"{a} {tokens[0]}" if tokens else a, f"{a}, {rng.choice(['Ohio', 'the city', 'Jr.'])}",
        " ".join(rng.sample(tokens, max(1, len(tokens) // 2))) if tokens else a,
        "yes", "No.", "noanswer", f"{a} yes", "", "   ", "the", "An", rng.choice(others),
    ]
    if gold.aliases:
        variants += [rng.choice(gold.aliases), rng.choice(gold.aliases).upper()]
    if a.lower() in ("yes", "no"):
        variants += [f"{a} indeed", "not " + a]
    return variants


def support_variants(gold: Gold, question: Question, dataset: str, rng: random.Random) -> list[Prediction]:
    """Support predictions, answers left empty (filled in by `predictions`)."""
    if dataset == "musique":
        return _musique_support_variants(gold, question, rng)
    facts = [(t, i) for t, i in gold.facts]
    pool = [(t, rng.randrange(n)) for t, n in gold.context]
    sizes = dict(gold.context)
    variants = [
        facts,
        rng.sample(facts, len(facts) - 1) if facts else [],
        facts + rng.sample(pool, 2),
        [(t.lower(), i) for t, i in facts],
        [(t.upper(), i) for t, i in facts],
        facts + [(t.lower(), i) for t, i in facts],  # case duplicates
        facts + [(t.swapcase(), i) for t, i in facts[:1]],
        facts + facts[:1],  # an exact repeat
        [],
        [(t, sizes[t] + rng.randrange(3)) for t, _ in facts],  # past the paragraph's end
        facts[:1] + [("No Such Paragraph", 0)],
        [(t, i + 1) for t, i in facts],
        rng.sample(pool, min(3, len(pool))),
    ]
    return [Prediction("", list(v), [list(f) for f in v]) for v in variants]


def _musique_support_variants(gold: Gold, question: Question, rng: random.Random) -> list[Prediction]:
    title_of = {p.source_index: p.title for p in question.paragraphs}  # the pool the agent is shown
    index_of = {title: idx for idx, title in title_of.items()}
    all_idxs, golds = sorted(title_of), list(gold.support_idxs)
    distractors = [i for i in all_idxs if i not in golds]
    title_sets = [
        [title_of[i] for i in golds],
        [title_of[i] for i in rng.sample(golds, len(golds) - 1)],
        [title_of[i] for i in golds + rng.sample(distractors, 2)],
        [title_of[i] for i in golds + golds[:1]],
        [title_of[i].lower() for i in golds],
        [title_of[i].upper() for i in golds[:1]] + [title_of[i] for i in golds[1:]],
        [],
        [title_of[i] for i in golds[:1]] + ["No Such Paragraph"],
        [title_of[i] for i in golds[:1]] + ["No Such Paragraph", "Another Missing One"],
        [title_of[i] for i in rng.sample(all_idxs, 3)],
    ]
    variants = []
    for titles in title_sets:
        # A title outside the pool is a wrong paragraph: give each one its own idx past the pool.
        unknown = {t: 1000 + k for k, t in enumerate(sorted(set(titles) - set(index_of)))}
        idxs = [index_of.get(t, unknown.get(t)) for t in titles]
        variants.append(Prediction("", [(t, 0) for t in titles], idxs))
    return variants


def predictions(gold: Gold, question: Question, dataset: str, others: list[str], n: int, seed: int) -> list[Prediction]:
    """At least every answer variant and every support variant once, paired at random."""
    rng = random.Random(f"{seed}:{dataset}:{gold.id}")
    answers = answer_variants(gold, others, rng)
    supports = support_variants(gold, question, dataset, rng)
    count = max(n, len(answers), len(supports))
    answers = (answers * count)[:count]
    supports = (supports * count)[:count]
    rng.shuffle(supports)
    return [Prediction(a, s.cited, s.official_support) for a, s in zip(answers, supports)]


# ---------------------------------------------------------------- the official scorers


def load_official(directory: Path) -> dict[str, Callable[[Gold, Prediction], dict[str, float]]]:
    """dataset -> scorer(gold, prediction) -> {official key: value}, for the files present."""
    if importlib.util.find_spec("ujson") is None:
        sys.modules["ujson"] = json  # the scripts only call load/dump(s)
    scorers = {}
    hotpot = directory / "hotpot_evaluate_v1.py"
    if hotpot.is_file():
        scorers["hotpotqa"] = _hotpot_scorer(_module("official_hotpot", hotpot))
    two_wiki = directory / "2wikimultihop_evaluate_v1.1.py"
    if two_wiki.is_file():
        scorers["2wiki"] = _2wiki_scorer(_module("official_2wiki", two_wiki))
    for metrics_dir in (directory / "musique" / "metrics", directory / "metrics"):
        if (metrics_dir / "answer.py").is_file() and (metrics_dir / "support.py").is_file():
            scorers["musique"] = _musique_scorer(metrics_dir)
            break
    return scorers


def _module(name: str, path: Path) -> types.ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _hotpot_scorer(official: types.ModuleType):
    workdir = Path(tempfile.mkdtemp(prefix="hotpot_official_"))
    pred_file, gold_file = workdir / "pred.json", workdir / "gold.json"

    def score(gold: Gold, p: Prediction) -> dict[str, float]:
        pred_file.write_text(json.dumps({"answer": {gold.id: p.answer}, "sp": {gold.id: p.official_support}}))
        gold_file.write_text(json.dumps([{"_id": gold.id, "answer": gold.answer, "supporting_facts": gold.facts}]))
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            official.eval(str(pred_file), str(gold_file))
        return ast.literal_eval(out.getvalue().strip().splitlines()[-1])  # means over one question

    return score


def _2wiki_scorer(official: types.ModuleType):
    def score(gold: Gold, p: Prediction) -> dict[str, float]:
        metrics: dict[str, float] = defaultdict(float)
        # eval() builds the gold answers as {answer} plus the alias file's aliases.
        official.update_answer(metrics, p.answer, {gold.answer, *gold.aliases})
        official.update_sp(metrics, p.official_support, gold.facts)
        return dict(metrics)

    return score


def _musique_scorer(metrics_dir: Path):
    # Import metrics/answer.py and support.py as the package `metrics` without running its
    # __init__ (which may import modules not copied); stub metrics.metric when absent.
    package = types.ModuleType("metrics")
    package.__path__ = [str(metrics_dir)]
    sys.modules["metrics"] = package
    if not (metrics_dir / "metric.py").is_file():
        base = types.ModuleType("metrics.metric")
        base.Metric = type("Metric", (), {})
        sys.modules["metrics.metric"] = base
    answer = importlib.import_module("metrics.answer")
    support = importlib.import_module("metrics.support")

    def score(gold: Gold, p: Prediction) -> dict[str, float]:
        answer_metric, support_metric = answer.AnswerMetric(), support.SupportMetric()
        answer_metric(p.answer, [gold.answer] + gold.aliases)
        support_metric(p.official_support, gold.support_idxs)
        em, f1 = answer_metric.get_metric()  # means over one question
        sp_em, sp_f1 = support_metric.get_metric()
        return {"em": em, "f1": f1, "sp_em": sp_em, "sp_f1": sp_f1}

    return score


# ---------------------------------------------------------------- synthetic edge cases


def edge_cases(dataset: str) -> list[tuple[Question, Gold, list[Prediction]]]:
    """What the real files never hold: a gold answer that normalizes to nothing, no gold support."""
    from eir_dspy.paragraphs import Paragraph

    pool = (Paragraph("Alpha", ("a0", " a1"), 0), Paragraph("Beta", ("b0",), 1))
    cases = []
    for n, (answer, facts) in enumerate([("The", [["Alpha", 0]]), ("Varn", []), ("The", [])]):
        musique = dataset == "musique"
        question = Question(
            id=f"edge-{n}", question="Q?", answer=answer, aliases=(), type="edge", paragraphs=pool,
            supporting_facts=() if musique else tuple((t, i) for t, i in facts), dataset=dataset,
            supporting_paragraphs=(0,) if musique and facts else (),
        )
        gold = Gold(question.id, answer, [], facts, [0] if facts else [], [("Alpha", 2), ("Beta", 1)])
        idx = {"Alpha": 0, "Beta": 1}
        preds = [
            Prediction(text, cited, [idx[t] for t, _ in cited] if musique else [list(c) for c in cited])
            for text in ("", "a", "Varn", "no") for cited in ([], [("Alpha", 0)], [("Beta", 0)])
        ]
        cases.append((question, gold, preds))
    return cases


# ---------------------------------------------------------------- comparison


@dataclass
class Tally:
    agree: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    total: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    disagreements: list[str] = field(default_factory=list)
    questions: int = 0


def compare(tally: Tally, dataset: str, question: Question, gold: Gold, p: Prediction,
            official: Callable[[Gold, Prediction], dict[str, float]]) -> None:
    ours = score_question(question, p.answer, p.cited)
    theirs = official(gold, p)
    for key, official_key in METRICS[dataset].items():
        tally.total[key] += 1
        if ours[key] is not None and abs(ours[key] - float(theirs[official_key])) < TOLERANCE:
            tally.agree[key] += 1
        else:
            tally.disagreements.append(
                f"{question.id} {key}: project {ours[key]!r} official {theirs[official_key]!r} "
                f"answer {p.answer!r} vs gold {[gold.answer, *gold.aliases]!r}; "
                f"support {p.cited!r} vs {gold.facts or gold.support_idxs!r}"
            )


def report(label: str, dataset: str, tally: Tally, show: int) -> None:
    n = next(iter(tally.total.values()), 0)
    print(f"\n{label}: {tally.questions} questions, {n} predictions")
    for key in METRICS[dataset]:
        print(f"  {key:<11} {tally.agree[key]:>6} / {tally.total[key]:<6} agree")
    for line in tally.disagreements[:show]:
        print("  DISAGREE " + line)
    if len(tally.disagreements) > show:
        print(f"  ... {len(tally.disagreements) - show} more disagreements")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--official", required=True, type=Path, help="directory holding the official scorer files")
    p.add_argument("--data", default="../shared/data/raw", type=Path)
    p.add_argument("--per-question", type=int, default=20, help="at least this many predictions per question")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--show", type=int, default=5, help="disagreements printed per dataset")
    args = p.parse_args(argv)

    scorers = load_official(args.official)
    if not scorers:
        print(f"no official scorer files found in {args.official}", file=sys.stderr)
        return 2
    for dataset in METRICS:
        if dataset not in scorers:
            print(f"{dataset}: official scorer not found in {args.official}; skipped")

    tallies: dict[str, Tally] = {}
    for dataset, rel in FILES:
        if dataset not in scorers:
            continue
        path = args.data / rel
        assert path.name not in HOLDOUT_FILES
        records = read_raw(path)
        questions = load_file(path, dataset)
        golds = [raw_gold(r, dataset) for r in records]
        others = [g.answer for g in golds]
        tally = tallies.setdefault(dataset, Tally())
        for question, gold in zip(questions, golds, strict=True):
            assert question.id == gold.id, (question.id, gold.id)
            tally.questions += 1
            for prediction in predictions(gold, question, dataset, others, args.per_question, args.seed):
                compare(tally, dataset, question, gold, prediction, scorers[dataset])

    failed = False
    for dataset, tally in tallies.items():
        report(dataset, dataset, tally, args.show)
        edge = Tally()
        for question, gold, preds in edge_cases(dataset):
            edge.questions += 1
            for prediction in preds:
                compare(edge, dataset, question, gold, prediction, scorers[dataset])
        report(f"{dataset} (synthetic edge cases)", dataset, edge, args.show)
        failed |= bool(tally.disagreements or edge.disagreements)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
