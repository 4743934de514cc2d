"""A method option flag reaches only the methods that take it: given to any other method it is refused
(it was quietly ignored before: `--method eir --votes 3` ran EIR), and left out it takes the method's
default, resolved for the setting."""

import pytest

import eval.run as run_module
from eval.runs.errors import RunError
from eval.runs.flags import run_config
from programs.reflexion import DEFAULT_TRIALS
from programs.ssr import DEFAULT_VOTES


def config(*flags: str):
    return run_config(run_module.parse_args(list(flags)))


@pytest.mark.parametrize(("flags", "message"), [
    (["--method", "eir", "--votes", "3"],
     "'votes' is not an option of method eir (its options: ablation, invalid_updates)"),
    (["--method", "direct", "--trials", "2"], "'trials' is not an option of method direct (it takes none)"),
    (["--method", "full_pool", "--verifier-temperature", "0.5"], "'verifier_temperature' is not an option of method full_pool"),
    (["--method", "ssr", "--trials", "2"],
     "'trials' is not an option of method ssr (its options: verifier_temperature, votes)"),
    (["--method", "reflexion", "--votes", "5"], "'votes' is not an option of method reflexion (its options: trials)"),
    (["--method", "direct", "--invalid-updates", "reject"], "'invalid_updates' is not an option of method direct"),
])
def test_an_option_of_another_method_is_refused_naming_it(flags, message):
    with pytest.raises(RunError) as raised:
        config(*flags)
    assert str(raised.value).startswith(message)


def test_left_out_an_option_takes_the_methods_default_for_the_setting():
    assert config("--method", "ssr").options == {"verifier_temperature": 0.7, "votes": DEFAULT_VOTES}
    assert config("--method", "ssr", "--setting", "corpus").options == {"verifier_temperature": 0.0,
                                                                          "votes": DEFAULT_VOTES}
    assert config("--method", "reflexion").options == {"trials": DEFAULT_TRIALS}
    assert config("--method", "ssr", "--votes", "5").options["votes"] == 5
    assert config("--method", "eir").options == {"ablation": "none", "invalid_updates": "discard"}


def test_the_command_line_refuses_it_as_an_error_not_a_traceback(capsys):
    with pytest.raises(SystemExit) as exited:
        run_module.main(["--method", "eir", "--votes", "3", "--limit", "1"])
    assert "'votes' is not an option of method eir" in str(exited.value) + capsys.readouterr().err
