"""Run-level behaviour metrics (eval.scoring.run_metrics.behaviour) on hand-built records."""

import pytest

from eval.scoring.run_metrics import BEHAVIOUR_KEYS, behaviour, format_table


def record(turns, causes, early, reqs, concls, discarded):
    return {"turns": turns, "rejections_by_cause": causes, "submitted_before_budget": early,
            "trajectory": {"method": "eir", "requirements": [{}] * reqs, "conclusions": [{}] * concls,
                           "list_updates": {"applied": 1, "discarded": discarded}}}


def test_rejections_by_cause_submits_and_list_use_by_hand():
    records = [record(8, {"not_json": 2, "invalid_action": 1}, False, 2, 1, 0),
               record(4, {"not_json": 1}, True, 3, 0, 2)]
    out = behaviour(records)
    assert out["rejected_not_json_rate"] == pytest.approx(3 / 12)
    assert out["rejected_invalid_action_rate"] == pytest.approx(1 / 12)
    assert "rejected_missing_field_rate" not in out  # no record has that cause
    assert out["submitted_before_budget"] == 50.0
    assert out["list_entries_per_question"] == 3.0  # (2 + 1 + 3 + 0) / 2
    assert out["requirements_per_question"] == 2.5 and out["conclusions_per_question"] == 0.5
    assert out["lists_used"] == 50.0  # only the first has a requirement and a conclusion
    assert out["list_updates_discarded_per_question"] == 1.0


def test_methods_without_lists_and_older_records_leave_keys_out():
    out = behaviour([{"turns": 3, "trajectory": {"method": "direct", "turns": []}, "submitted_before_budget": None}])
    assert out == {}
    table = format_table(out, "direct", BEHAVIOUR_KEYS)
    assert table.splitlines()[2].split(" | ")[1].strip() == "-"
