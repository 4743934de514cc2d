"""`python scripts/migrate_runs.py [--dry-run]`: rewrite the eval.run runs of earlier versions in place,
in the format the current code writes, so the readers need to know only that one.

In the MLflow store of $MLFLOW_TRACKING_URI (else eval.run's default), every eval.run run (all
experiments, or those of --experiment) gets:
- its `eir.config` tag as today's RunConfig.to_tag() writes it (scripts/run_migrations.py: one
  step per rule RunConfig.from_dict used to apply), and the `method` and `variant` tags eval.run
  derives from it;
- its results files (the folder of `eir.results_path`: results.jsonl and a variant's
  <label>.jsonl) and its logged .jsonl artifact (a local artifact store's) with each record's
  trajectories naming their method and, in a file where no record carries a run id, the run's id.
MLflow params are write-once and no reader reads them: they are left as logged.

--dry-run prints what would change, per run and file, with counts, and writes nothing. Otherwise
each file is copied, and each old tag value written to tags.json, into the backup folder (--backup,
default migration-backup-<time> beside a sqlite store) before anything is rewritten. A run whose
results another process holds (it is running) is skipped. Running it again changes nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import stat
import sys
import tempfile
import time
from collections import Counter
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlparse

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the project, when run as scripts/migrate_runs.py

import mlflow  # noqa: E402
from mlflow.entities import Run  # noqa: E402
from run_migrations import RULES, migrate_config, migrate_record  # noqa: E402

from eval.files.results_file import ResultsFile, RunBusy  # noqa: E402
from eval.runs import tracking  # noqa: E402
from eval.runs.config import RunConfig  # noqa: E402
from eval.runs.errors import RunError  # noqa: E402

SKIPPED_KINDS = (tracking.COMPARISON_KIND, tracking.ANALYSIS_KIND, tracking.COMPILE_KIND)


@dataclass
class FileChange:
    path: Path
    label: str  # how the report names it
    text: str  # the migrated text
    original: str  # the text it was planned from (a file that changed since is planned again)
    owner: str  # the run id its records carry
    records: int  # records in the file
    changed: Counter = field(default_factory=Counter)  # records changed, by what changed
    unread: list[int] = field(default_factory=list)  # lines left as they are: not a record (the readers name them)


@dataclass
class RunChange:
    run: Run
    tags: dict[str, tuple[str | None, str]] = field(default_factory=dict)  # tag: (old, new)
    rules: list[str] = field(default_factory=list)
    files: list[FileChange] = field(default_factory=list)
    lock: Path | None = None  # results file whose lock is held while its files are rewritten


def migrate_text(text: str, run_id: str) -> tuple[str, int, Counter, list[int]]:
    """A results file's text migrated record by record; lines that are not records, blank lines and
    an unterminated last line (a killed writer's) stay as they are. The run's id is added only where
    no record carries one (records carrying ids are stamped as written; an unstamped line among them
    is not this run's, and the reader names it)."""
    lines = text.splitlines(keepends=True)
    rows: dict[int, dict] = {}
    unread = []
    for number, line in enumerate(lines, 1):
        if not line.strip() or not line.endswith("\n"):
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            row = None
        if isinstance(row, dict) and isinstance(row.get("id"), str):
            rows[number] = row
        else:
            unread.append(number)
    stamp = run_id if not any(r.get("run_id") for r in rows.values()) else None
    changed: Counter = Counter()
    for number, row in rows.items():
        migrated, changes = migrate_record(row, stamp)
        if changes:
            lines[number - 1] = ResultsFile.encode_line(migrated).decode("utf-8")  # as eval.run writes lines
            changed.update(changes)
            changed["records"] += 1
    return "".join(lines), len(rows), changed, unread


def plan_file(path: Path, run_id: str, label: str) -> FileChange | None:
    text = path.read_text(encoding="utf-8", errors="surrogateescape")
    new, records, changed, unread = migrate_text(text, run_id)
    if new == text:
        return None
    return FileChange(path, label, new, text, run_id, records, changed, unread)


def plan_run(run: Run) -> RunChange:
    tags = run.data.tags
    change = RunChange(run)
    new, change.rules = migrate_config(json.loads(tags[tracking.CONFIG_TAG]))
    config = RunConfig.from_dict(new)  # the current format: no compatibility rule applies
    wanted = {tracking.CONFIG_TAG: json.dumps(new), "method": config.label, "variant": config.variant}
    change.tags = {k: (tags.get(k), v) for k, v in wanted.items() if tags.get(k) != v}
    owner = tags.get(tracking.VARIANT_OF_TAG) or run.info.run_id  # a variant's lines carry its parent's id
    if tracking.RESULTS_TAG in tags:
        results = Path(tags[tracking.RESULTS_TAG])
        change.lock = results
        for path in sorted(results.parent.glob("*.jsonl")) if results.parent.is_dir() else []:
            change.files.append(plan_file(path, owner, str(path)))
    artifacts = local_artifacts(run)
    for path in sorted(artifacts.glob("*.jsonl")) if artifacts else []:
        change.files.append(plan_file(path, owner, f"artifact {path.name} ({path})"))
    change.files = [f for f in change.files if f is not None]
    return change


def local_artifacts(run: Run) -> Path | None:
    uri = urlparse(run.info.artifact_uri)
    if uri.scheme in ("", "file"):
        path = Path(uri.path)
        return path if path.is_dir() else None
    return None


def eval_runs(experiments: list[str] | None) -> list[Run]:
    client = mlflow.MlflowClient()
    if experiments:
        found = [client.get_experiment_by_name(name) for name in experiments]
        missing = [n for n, e in zip(experiments, found, strict=True) if e is None]
        if missing:
            raise SystemExit(f"error: no experiment {', '.join(missing)} in {mlflow.get_tracking_uri()}")
    else:
        found = client.search_experiments()
    runs = mlflow.search_runs(experiment_ids=[e.experiment_id for e in found], output_format="list",
                              order_by=["attributes.start_time ASC"]) if found else []
    return [r for r in runs if tracking.CONFIG_TAG in r.data.tags and r.data.tags.get(tracking.KIND_TAG) not in SKIPPED_KINDS]


def describe(change: RunChange) -> list[str]:
    info = change.run.info
    out = [f"run {info.run_id} ({info.run_name})"]
    if change.rules:
        out.append(f"  {tracking.CONFIG_TAG}: " + ", ".join(change.rules))
    for tag, (old, new) in change.tags.items():
        if tag != tracking.CONFIG_TAG:
            out.append(f"  tag {tag}: {old!r} -> {new!r}")
    for f in change.files:
        what = ", ".join(f"{k} {v}" for k, v in sorted(f.changed.items()) if k != "records")
        out.append(f"  {f.label}: {f.changed['records']} of {f.records} records" + (f" ({what})" if what else ""))
        if f.unread:
            out.append(f"    lines left as they are (not records; the readers will name them): {f.unread[:10]}")
    return out


def backup(changes: list[RunChange], folder: Path) -> None:
    """Copy every file to be rewritten, and write every old tag value, into `folder`."""
    folder.mkdir(parents=True, exist_ok=False)
    tags = {c.run.info.run_id: {k: old for k, (old, _) in c.tags.items()} for c in changes if c.tags}
    copies = {}
    for c in changes:
        for f in c.files:
            copy = folder / "files" / str(f.path.resolve()).lstrip("/")
            copy.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(f.path, copy)
            copies[str(f.path)] = str(copy)
    (folder / "tags.json").write_text(json.dumps(tags, indent=1) + "\n")
    (folder / "files.json").write_text(json.dumps(copies, indent=1) + "\n")


def rewrite(path: Path, text: str) -> None:
    """Replace the file's text at once (a reader sees the old or the new file, never half); a failed
    write leaves the old file and no temporary one."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".migrate.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", errors="surrogateescape") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, stat.S_IMODE(os.stat(path).st_mode))
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def apply(change: RunChange) -> None:
    client = mlflow.MlflowClient()
    with ExitStack() as held:
        if change.lock is not None and change.files:
            held.enter_context(ResultsFile(change.lock).hold(change.run.info.run_id))
        for f in change.files:
            current = f.path.read_text(encoding="utf-8", errors="surrogateescape")
            if current != f.original:  # records appended since the plan (the run was still going): keep them
                f = plan_file(f.path, f.owner, f.label)
                if f is None:
                    continue
            rewrite(f.path, f.text)
        for tag, (_, new) in change.tags.items():
            client.set_tag(change.run.info.run_id, tag, new)


def default_backup(uri: str) -> Path:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    store = tracking.store_path(uri)
    return (store.parent if store and store.is_file() else Path.cwd()) / f"migration-backup-{stamp}"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python scripts/migrate_runs.py", description=__doc__.splitlines()[0])
    p.add_argument("--experiment", action="append", help="only this experiment's runs (repeatable; default all)")
    p.add_argument("--dry-run", action="store_true", help="print what would change; write nothing")
    p.add_argument("--backup", type=Path, help="where the old files and tag values are kept (must not exist)")
    args = p.parse_args(argv)
    uri = tracking.use_tracking_uri()
    changes, unplanned = [], []
    for run in eval_runs(args.experiment):
        try:
            change = plan_run(run)
        except (ValueError, KeyError, TypeError, RunError) as exc:  # a tag no rule turns into today's format
            unplanned.append(f"run {run.info.run_id} ({run.info.run_name}) left as it is: {type(exc).__name__}: {exc}")
            continue
        if change.tags or change.files:
            changes.append(change)
    for line in unplanned:
        print(line, file=sys.stderr)
    for c in changes:
        print("\n".join(describe(c)))
    rules = Counter(r for c in changes for r in c.rules)
    tags = sum(len(c.tags) for c in changes)
    files = [f for c in changes for f in c.files]
    records = sum(f.changed["records"] for f in files)
    summary = (f"{len(changes)} run(s) in {uri}: {tags} tag(s) and {len(files)} file(s) "
               f"({records} record(s)) to rewrite")
    if rules:
        summary += "\nconfig rules applied: " + "; ".join(f"{n}x {name} ({RULES[name]})" for name, n in rules.items())
    if args.dry_run or not changes:
        print(summary + ("; nothing written (--dry-run)" if args.dry_run and changes else ""))
        return 1 if unplanned else 0
    folder = args.backup or default_backup(uri)
    if folder.exists():
        raise SystemExit(f"error: the backup folder {folder} exists; name a new one (--backup)")
    backup(changes, folder)
    print(f"backup of the old files and tag values: {folder}")
    skipped = []
    for c in changes:
        try:
            apply(c)
        except RunBusy as exc:
            skipped.append(f"skipped run {c.run.info.run_id}: {exc}")
    print(summary.replace("to rewrite", "rewritten") + "".join(f"\n{s}" for s in skipped))
    return 1 if skipped or unplanned else 0


if __name__ == "__main__":
    sys.exit(main())
