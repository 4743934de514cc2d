"""benchmarks/server_log_costs.py reads llama-server's own timing lines, and only those."""

import importlib.util
from pathlib import Path

SPEC = importlib.util.spec_from_file_location(
    "server_log_costs", Path(__file__).resolve().parents[2] / "benchmarks" / "server_log_costs.py")
server_log_costs = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(server_log_costs)

LOG = """\
4.31.620.000 I slot update_slots: id  0 | task 4270 | n_past = 2211, cache_tokens.size() = 2685
4.31.620.691 I slot print_timing: id  0 | task 4270 | prompt eval time =    7196.73 ms /   474 tokens (   15.18 ms per token,    65.86 tokens per second)
4.31.620.742 I slot print_timing: id  0 | task 4270 |        eval time =    3295.83 ms /    70 tokens (   47.77 ms per token,    20.94 tokens per second)
4.31.620.800 I slot print_timing: id  0 | task 4270 |       total time =   10492.56 ms /   544 tokens
4.53.591.741 I slot print_timing: id  0 | task 4341 | prompt eval time =    2052.60 ms /   180 tokens (   11.40 ms per token,    87.69 tokens per second)
4.53.591.789 I slot print_timing: id  0 | task 4341 |        eval time =   19867.58 ms /   415 tokens (   47.99 ms per token,    20.84 tokens per second)
"""


def test_costs_sum_the_prompt_and_generation_timings(tmp_path):
    log = tmp_path / "port1-x.log"
    log.write_text(LOG)
    c = server_log_costs.costs(log)
    assert c["calls"] == 2 and c["prompt_evaluated"] == 654 and c["generated"] == 485
    assert abs(c["prompt_s"] - 9.24933) < 1e-6 and abs(c["generation_s"] - 23.16341) < 1e-6


def test_the_logs_of_a_resumed_run_are_summed_and_divided_by_its_questions(tmp_path, capsys):
    first, second = tmp_path / "port1-a.log", tmp_path / "port2-b.log"
    first.write_text(LOG)
    second.write_text(LOG)
    server_log_costs.main([str(first), str(second), "--questions", "2"])
    out = capsys.readouterr().out
    assert "2 logs: 4 calls" in out
    assert "prompt evaluated per question (n = 2): 654 tokens" in out and "generated per question (n = 2): 485 tokens" in out


def test_a_log_without_timing_lines_is_an_error_naming_it(tmp_path):
    empty = tmp_path / "port3-c.log"
    empty.write_text("server listening\n")
    try:
        server_log_costs.main([str(empty)])
    except SystemExit as exc:
        assert "port3-c.log holds no llama-server timing lines" in str(exc)
    else:
        raise AssertionError("expected an error")
