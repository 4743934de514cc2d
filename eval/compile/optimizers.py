"""DSPy's own optimizers on a project program, and where its demonstrations come from (--optimizer,
--demos: docs/experiments.md, "Compiling a program").

The optimizer runs one question at a time (num_threads=1), in this thread: the ledger
(eir_dspy.accounting) is a context variable and each call's entries are read off the LM's history,
so a single thread keeps every call counted once, by role.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import dspy
import orjson
from dspy.teleprompt.bootstrap_trace import FailedPrediction

from eir_dspy.accounting import Ledger
from eir_dspy.state import MalformedUpdates
from eval.compile.feedback import FeedbackMetric
from eval.compile.metric import Metric
from eval.compile.reflection import reflection_lm
from programs.registry import method_of

OPTIMIZERS = ("labeled", "bootstrap", "gepa", "none")
DEMOS = ("bootstrap", "gold", "both")
GEPA_AUTO = ("light", "medium", "heavy")


@dataclass(frozen=True)
class Settings:
    """Every optimizer setting; the ones the chosen optimizer reads are logged as params."""

    metric: str = "f1"
    max_bootstrapped_demos: int = 4  # BootstrapFewShot's default
    max_labeled_demos: int = 16  # DSPy's default; LabeledFewShot's k
    metric_threshold: float = 1.0  # a bootstrapped trace is kept only when its question scores this
    k: int = 2  # demonstration questions: training questions whose gold episode gives demos (all its calls)
    gepa_auto: str = "light"
    gepa_max_metric_calls: int | None = None  # replaces gepa_auto's budget when given
    seed: int = 0  # GEPA's

    def params(self, optimizer: str, demos: str, method: str = "eir") -> dict:
        keep = {"labeled": ("max_labeled_demos",),
                "bootstrap": ("max_bootstrapped_demos", "max_labeled_demos", "metric_threshold"),
                "gepa": ("gepa_auto", "gepa_max_metric_calls", "seed"), "none": ()}[optimizer]
        # GEPA's seed is logged as gepa_seed: under "seed" it overwrote the question sample's --seed.
        out = {("gepa_seed" if k == "seed" else k): v for k, v in asdict(self).items() if k in keep}
        if demos != "bootstrap":
            from eval.compile.gold_scripts import GOLD_DEMO_PARAMS

            out.update(k=self.k, **GOLD_DEMO_PARAMS[method])
        return out


def check_choice(optimizer: str, demos: str) -> None:
    """Combinations that would name one condition twice, or throw work away."""
    if optimizer == "none" and demos != "gold":
        raise ValueError("--optimizer none makes no demos of its own: use it with --demos gold")
    if optimizer in ("labeled", "bootstrap") and demos == "gold":
        raise ValueError(f"--demos gold would discard every demo --optimizer {optimizer} makes: use --demos both, "
                         "or --optimizer none for gold demos alone")
    if optimizer == "gepa" and demos == "both":
        raise ValueError("GEPA makes no demos, so --demos both is --demos gold")


def default_name(optimizer: str, demos: str) -> str:
    return "-".join(p for p in (None if optimizer == "none" else optimizer, None if demos == "bootstrap" else "gold") if p)


def compile_program(student: dspy.Module, optimizer: str, demos: str, trainset: list, valset: list,
                    settings: Settings, budget: int, ledger: Ledger, info: dict | None = None) -> dspy.Module:
    """The compiled program: demos per predictor, trimmed to its signature's fields, in the form a
    saved file loads back (so the prompts before saving and after loading are the same). `info`
    receives what the run should log (the demonstration questions, GEPA's metric-call budget)."""
    check_choice(optimizer, demos)
    info = {} if info is None else info
    gold = _gold(method_of(student).name, trainset, budget, settings.k, info) if demos != "bootstrap" else {}
    metric = _OneQuestionHistory(Metric(settings.metric))
    if optimizer == "gepa":
        student = _with_demos(student.deepcopy(), gold, [])
        feedback = _OneQuestionHistory(FeedbackMetric(settings.metric))
        budget_kw = ({"max_metric_calls": settings.gepa_max_metric_calls} if settings.gepa_max_metric_calls
                     else {"auto": settings.gepa_auto})
        gepa = dspy.GEPA(metric=feedback, reflection_lm=reflection_lm(dspy.settings.lm, ledger),
                         num_threads=1, component_selector=UsedRoundRobin(student), seed=settings.seed,
                         **budget_kw)
        compiled = gepa.compile(student, trainset=trainset, valset=valset)
        info["gepa_max_metric_calls"] = gepa.max_metric_calls
    elif optimizer == "labeled":
        compiled = dspy.LabeledFewShot(k=settings.max_labeled_demos).compile(student, trainset=trainset)
    elif optimizer == "bootstrap":
        compiled = dspy.BootstrapFewShot(
            metric=_ParsedStepsOnly(metric), metric_threshold=settings.metric_threshold,
            max_bootstrapped_demos=settings.max_bootstrapped_demos, max_labeled_demos=settings.max_labeled_demos,
        ).compile(student, trainset=trainset)
    else:
        compiled = student.reset_copy()
    if optimizer != "gepa":
        compiled = _with_demos(compiled, gold, None)
    return as_loaded(trim_demos(compiled))


def _with_demos(program: dspy.Module, gold: dict, own: list | None) -> dspy.Module:
    """Gold demos first, then the predictor's own (`own=None`) or none (`own=[]`)."""
    for name, predictor in program.named_predictors():
        predictor.demos = list(gold.get(name, [])) + list(predictor.demos if own is None else own)
    return program


def _gold(method: str, trainset: list, budget: int, k: int, info: dict) -> dict[str, list]:
    """`method`'s gold demos of the k demonstration questions (`demo_questions`: the same for every method)."""
    from eval.compile.gold_demos import gold_demos  # written beside this file; imported only when asked for

    chosen, skipped = demo_questions(trainset, budget, k)
    info.update(demo_questions=[str(q.id) for q in chosen], demo_questions_skipped=skipped)
    return dict(gold_demos(chosen, budget=budget, method=method))


def demo_questions(trainset: list, budget: int, k: int) -> tuple[list, int]:
    """The first k training questions that give a gold episode for EVERY method (so an equal
    demonstration budget means the same questions whichever method is compiled), and how many
    questions before the k-th were passed over."""
    from eval.compile.gold_demos import gold_demos
    from eval.compile.gold_scripts import RECIPES

    chosen, skipped = [], 0
    for example in trainset:
        if len(chosen) == k:
            break
        if all(gold_demos([example], budget=budget, method=m).questions for m in RECIPES):
            chosen.append(example)
        else:
            skipped += 1
    if len(chosen) < k:
        raise ValueError(f"only {len(chosen)} of the {len(trainset)} training questions give a gold episode for every "
                         f"method; --k {k} needs more (--n-train)")
    return chosen, skipped


def trim_demos(program: dspy.Module) -> dspy.Module:
    """Each demo keeps only its predictor's fields (and DSPy's `augmented` mark); a demo with no input
    or no output field is dropped, as the adapter would drop it. A labeled example's paragraphs and
    gold labels never reach a prompt, so they stay out of the file too."""
    for _, predictor in program.named_predictors():
        fields, inputs, outputs = (predictor.signature.fields, predictor.signature.input_fields,
                                   predictor.signature.output_fields)
        kept = []
        for demo in predictor.demos:
            keys = set(demo.keys())
            if keys & set(inputs) and keys & set(outputs):
                kept.append(dspy.Example({k: demo[k] for k in demo.keys() if k in fields or k == "augmented"}))
        predictor.demos = kept
    return program


def as_loaded(program: dspy.Module) -> dspy.Module:
    """The program as `program.save` + `program.load` give it back (demos as JSON values)."""
    program.load_state(orjson.loads(orjson.dumps(program.dump_state())))
    return program


class _OneQuestionHistory:
    """The metric, then a cleared LM history. Every program call is read off the LM's history
    (eir_dspy.accounting.lm_call finds its new entries from the end, so a full one still counts);
    cleared, a long compile's history holds one question's entries, not 10,000 (DSPy's cap). The
    metric runs once a question is done, when no call is in flight (one thread)."""

    def __init__(self, metric) -> None:
        self.metric = metric

    def __call__(self, *args, **kwargs):
        try:
            return self.metric(*args, **kwargs)
        finally:
            if dspy.settings.lm is not None:
                dspy.settings.lm.history.clear()


class _ParsedStepsOnly:
    """The metric, seeing a trace without its failed steps. An output that could not be used is kept
    in the trace as DSPy's FailedPrediction (eir_dspy.accounting.lm_call), for GEPA; BootstrapFewShot
    makes a demo of every step of a trace that passes (`dspy.Example(**inputs, **outputs)`), and a
    failed step is no demo. The metric gets that very list before the demos are made."""

    def __init__(self, metric) -> None:
        self.metric = metric

    def __call__(self, example, prediction, trace=None):
        if trace is not None:
            trace[:] = [step for step in trace if not _failed(step[2])]
        return self.metric(example, prediction, trace)


def _failed(output) -> bool:
    """A step that must not become a demo: an unusable output, or an EIR turn whose list updates did
    not read (they are kept as MalformedUpdates so the action runs; as a demo they would teach a
    format no signature asks for)."""
    if isinstance(output, FailedPrediction):
        return True
    values = output.values() if hasattr(output, "values") else ()
    return any(isinstance(v, MalformedUpdates) for v in values)


class UsedRoundRobin:
    """GEPA's round-robin over predictors, skipping those the program never called (in the pool,
    EIR's search_turn): a predictor with no trace has no reflective examples, so its turn would
    be a wasted iteration."""

    def __init__(self, student: dspy.Module) -> None:
        # A predictor is known by its fields: GEPA's candidates change instructions (and class names), never fields.
        self.signatures = {name: tuple(p.signature.fields) for name, p in student.named_predictors()}
        self.next: dict[int, int] = {}

    def __call__(self, state, trajectories, subsample_scores, candidate_idx, candidate) -> list[str]:
        called = {tuple(step[0].signature.fields) for t in trajectories or [] for step in t.get("trace", [])}
        names = [n for n in candidate if self.signatures.get(n) in called] or list(candidate)
        i = self.next.get(candidate_idx, 0)
        self.next[candidate_idx] = i + 1
        return [names[i % len(names)]]
