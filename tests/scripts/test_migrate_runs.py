"""scripts/migrate_runs.py on an MLflow store holding a run as an earlier eval.run logged it: the readers
refuse it, --dry-run names what would change and writes nothing, the migration backs up and rewrites
tags, results files and artifacts, the run then reads as the old rules read it, and a second pass
finds nothing to do."""

import json

import mlflow
import pytest

import eval.summary as summary
from eval.files.results_file import ResultsFile
from eval.runs import tracking
from eval.runs.config import RunConfig
from eval.runs.logged_runs import SelectionError, select_runs
from tests.fixtures.question_records import record_of, without_method
from tests.fixtures.scripts import load_script

migrate = load_script("migrate_runs")

OLD_TAG = {"method": "eir", "dataset": "hotpotqa", "data_file": "/d/dev.jsonl", "n": 2, "seed": 0,
           "lm_model": "openai/fake", "lm_path": None, "api_base": "http://127.0.0.1:1/v1", "price_in": None,
           "price_out": None, "temperature": 0.0, "max_tokens": 2048, "decoding": "free", "request_timeout": 600.0,
           "budget": 6, "threads": 1, "engine": "server", "server_args": "", "options": {"ablation": "none"},
           "setting": "pool", "index": None, "lm": "openai/fake", "default_decoding": "free", "label": "eir"}
RECORDS = [{"id": "q1", "prediction": "a", "em": 1.0, "trajectory": {"turns": [], "requirements": [], "final_parsed": True}},
           {"id": "q2", "prediction": "b", "em": 0.0, "trajectory": {"turns": [], "conclusions": [], "final_parsed": False}}]


def lines(rows) -> str:
    return "".join(json.dumps(r) + "\n" for r in rows)


def old_run(workdir):
    """A finished run as eval.run logged it before run ids, trajectory methods and the invalid-updates option."""
    mlflow.set_experiment("old")
    with mlflow.start_run(run_name="eir / hotpotqa / openai/fake") as run:
        results = workdir / "runs" / run.info.run_id / "results.jsonl"
        results.parent.mkdir(parents=True)
        results.write_text(lines(RECORDS))
        mlflow.set_tags({tracking.CONFIG_TAG: json.dumps(OLD_TAG), "method": "eir", "variant": "eir",
                         "dataset": "hotpotqa", "lm": "openai/fake", tracking.RESULTS_TAG: str(results)})
        mlflow.log_artifact(str(results))
    return run.info.run_id, results


def test_an_old_run_is_refused_then_migrated_with_a_backup_and_reads_as_before(workdir, capsys):
    run_id, results = old_run(workdir)
    artifact = migrate.local_artifacts(mlflow.get_run(run_id)) / "results.jsonl"
    with pytest.raises(SelectionError, match=rf"run {run_id} \(eir / hotpotqa / openai/fake\): eir.config tag: missing "
                                             r"key 'futile_searches' \(.*migrate it first\)"):
        select_runs("old")

    assert migrate.main(["--dry-run"]) == 0
    out = capsys.readouterr().out
    assert f"run {run_id} (eir / hotpotqa / openai/fake)" in out
    assert f"  {tracking.CONFIG_TAG}: futile_searches, invalid_updates, api_base" in out
    assert "  tag variant: 'eir' -> 'eir invalid_updates=reject'" in out
    assert f"  {results}: 2 of 2 records (run id 2, trajectory method 2)" in out
    assert f"  artifact results.jsonl ({artifact}): 2 of 2 records (run id 2, trajectory method 2)" in out
    assert "1 run(s) in " in out and ": 2 tag(s) and 2 file(s) (4 record(s)) to rewrite" in out
    assert "nothing written (--dry-run)" in out
    assert results.read_text() == artifact.read_text() == lines(RECORDS)  # nothing written
    assert json.loads(mlflow.get_run(run_id).data.tags[tracking.CONFIG_TAG]) == OLD_TAG

    backup = workdir / "backup"
    assert migrate.main(["--backup", str(backup)]) == 0
    assert json.loads((backup / "tags.json").read_text()) == {
        run_id: {tracking.CONFIG_TAG: json.dumps(OLD_TAG), "variant": "eir"}}
    assert (backup / "files" / str(results.resolve()).lstrip("/")).read_text() == lines(RECORDS)
    assert (backup / "files" / str(artifact.resolve()).lstrip("/")).read_text() == lines(RECORDS)
    tags = mlflow.get_run(run_id).data.tags
    new_tag = RunConfig.from_tag(tags[tracking.CONFIG_TAG])  # today's reader takes it
    assert new_tag.to_tag() == tags[tracking.CONFIG_TAG] and tags["variant"] == new_tag.variant == "eir invalid_updates=reject"
    migrated = [json.loads(line) for line in results.read_text().splitlines()]
    assert [r["run_id"] for r in migrated] == [run_id] * 2
    assert [r["trajectory"]["method"] for r in migrated] == ["eir"] * 2
    assert artifact.read_text() == results.read_text()

    (logged,), _ = select_runs("old")
    assert logged.variant == "eir invalid_updates=reject" and [r.em for r in logged.question_records] == [1.0, 0.0]
    capsys.readouterr()
    assert migrate.main(["--dry-run"]) == 0
    assert ": 0 tag(s) and 0 file(s) (0 record(s)) to rewrite" in capsys.readouterr().out


def test_a_file_whose_records_carry_run_ids_gets_none_added_and_bad_lines_stay():
    text = lines([{**RECORDS[0], "run_id": "r1"}, RECORDS[1]]) + "not json\n" + '{"id": "q3"'  # a torn last line
    new, records, changed, unread = migrate.migrate_text(text, "r1")
    rows = new.splitlines()
    assert json.loads(rows[0])["run_id"] == "r1" and "run_id" not in json.loads(rows[1])  # not this run's: left
    assert rows[2:] == ["not json", '{"id": "q3"'] and unread == [3] and records == 2
    assert changed == {"trajectory method": 2, "records": 2}


@pytest.mark.parametrize("method", ["eir", "reflexion"])
def test_a_real_record_of_before_trajectories_named_their_method_migrates_to_the_record_written_now(method):
    row = json.loads(json.dumps(record_of(method), default=str))
    old = json.loads(json.dumps(without_method(row)))
    assert migrate.migrate_record(old, None)[0] == row


def test_an_older_results_file_tables_after_migration_as_the_same_file_written_now(tmp_path, capsys):
    rows = [json.loads(json.dumps({**record_of("eir"), "run_id": "r1"}, default=str))]
    now, before = tmp_path / "now.jsonl", tmp_path / "old.jsonl"  # names of one length: one column width
    now.write_text(lines(rows))
    before.write_text(lines({k: v for k, v in without_method(r).items() if k != "run_id"} for r in rows))
    with pytest.raises(SystemExit, match="trajectory.method: Field required"):
        summary.main([str(before)])
    before.write_text(migrate.migrate_text(before.read_text(), "r1")[0])
    summary.main([str(now), str(before), "--behaviour"])
    tables = capsys.readouterr().out.split("\n\n")
    assert tables[0].replace(str(now), "F") == tables[1].replace(str(before), "F")


def test_a_record_holding_a_lone_surrogate_migrates_to_a_file_that_still_reads(tmp_path):
    # eval.run writes a lone surrogate (a model's torn emoji) as its JSON escape; a migrated line must too
    path = tmp_path / "results.jsonl"
    path.write_bytes(ResultsFile.encode_line({**RECORDS[0], "prediction": "x\ud83d"})
                     + ResultsFile.encode_line({**RECORDS[1], "prediction": "y\udc80"}))
    change = migrate.plan_file(path, "r1", "results")
    migrate.rewrite(path, change.text)
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert [r["prediction"] for r in rows] == ["x\ud83d", "y\udc80"] and [r["run_id"] for r in rows] == ["r1", "r1"]
    assert list(tmp_path.iterdir()) == [path]  # no temporary file left


def test_records_appended_after_the_plan_are_migrated_not_lost(workdir, capsys):
    run_id, results = old_run(workdir)
    (change,) = [migrate.plan_run(run) for run in migrate.eval_runs(["old"])]
    with results.open("a") as f:  # the run was still going: one more record lands before the rewrite
        f.write(lines([{**RECORDS[0], "id": "q3"}]))
    migrate.apply(change)
    assert [json.loads(line)["id"] for line in results.read_text().splitlines()] == ["q1", "q2", "q3"]
    assert all(json.loads(line)["trajectory"]["method"] == "eir" for line in results.read_text().splitlines())


def test_a_tag_no_rule_can_migrate_is_named_and_left_and_the_rest_migrate(workdir, capsys):
    run_id, _ = old_run(workdir)
    with mlflow.start_run(run_name="a method gone") as bad:
        mlflow.set_tags({tracking.CONFIG_TAG: json.dumps({**OLD_TAG, "method": "gone"})})
    assert migrate.main(["--backup", str(workdir / "backup")]) == 1
    err = capsys.readouterr().err
    assert f"run {bad.info.run_id} (a method gone) left as it is:" in err
    assert json.loads(mlflow.get_run(bad.info.run_id).data.tags[tracking.CONFIG_TAG])["method"] == "gone"
    assert mlflow.get_run(run_id).data.tags["variant"] == "eir invalid_updates=reject"  # the others migrated


def test_an_existing_backup_folder_is_refused_before_anything_is_written(workdir):
    run_id, results = old_run(workdir)
    (workdir / "backup").mkdir()
    with pytest.raises(SystemExit, match="backup folder .* exists"):
        migrate.main(["--backup", str(workdir / "backup")])
    assert results.read_text() == lines(RECORDS)
