"""Loaders: every layout, title dedup, the MuSiQue splitter, file resolution, errors."""

from __future__ import annotations

import json
import shutil
import warnings
from pathlib import Path

import pytest

from eir_dspy.paragraphs import Paragraph
from eval.data import loaders as data_mod
from eval.data.loaders import DATASETS, DataError, DataWarning, find_file, load_file, load_questions, split_sentences

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
BAD = FIXTURES / "bad"


@pytest.fixture(autouse=True)
def _no_env_dir(monkeypatch):
    # A developer's EIR_DATA_DIR must not leak into the tests.
    monkeypatch.delenv("EIR_DATA_DIR", raising=False)


def _ids(questions):
    return [q.id for q in questions]


# ---------------------------------------------------------------- layouts


def test_datasets_constant():
    assert DATASETS == ("hotpotqa", "2wiki", "musique")


def test_hotpot_original_layout():
    q1, q2 = load_file(FIXTURES / "hotpot_original.json", "hotpotqa")
    assert q1.id == "hp-orig-1"
    assert q1.question == "Which city is the capital of the country where Lake Ogo lies?"
    assert (q1.answer, q1.aliases, q1.type, q1.dataset) == ("Varn", (), "bridge", "hotpotqa")
    assert q1.paragraphs == (
        Paragraph("Lake Ogo", ("Lake Ogo is a lake in Mordia.", " It is deep."), 0),
        Paragraph("Mordia", ("Mordia is a small country.", " Its capital is Varn."), 1),
        Paragraph("Tessel River", ("The Tessel River is long.", ""), 2),  # an empty sentence is kept
    )
    assert q1.supporting_facts == (("Lake Ogo", 0), ("Mordia", 1))
    assert q1.supporting_paragraphs == ()
    assert (q2.id, q2.answer, q2.type) == ("hp-orig-2", "yes", "comparison")


def test_hotpot_hf_layout_keeps_leading_spaces():
    q1, q2 = load_file(FIXTURES / "hotpot_hf.jsonl", "hotpotqa")  # has a blank line
    assert (q1.id, q1.answer, q1.type) == ("hp-hf-1", "Lena Osk", "bridge")
    assert q1.paragraphs[1] == Paragraph(
        "The Osk Trio", ("The Osk Trio is a jazz band.", " It was founded by Lena Osk."), 1
    )
    assert q1.paragraphs[1].text == "The Osk Trio is a jazz band. It was founded by Lena Osk."
    assert q1.supporting_facts == (("Blue Moth", 0), ("The Osk Trio", 1))
    assert q1.paragraphs[2].sentences == ("Red Moth is a film.", " ")  # real HotpotQA ends some with " "
    assert q2.supporting_facts == (("Fort Ban", 0), ("Fort Cal", 0))
    assert [p.title for p in q2.paragraphs] == ["Fort Ban", "Fort Cal"]


def test_2wiki_original_layout_with_duplicate_title():
    q1, q2 = load_file(FIXTURES / "2wiki_dev.json", "2wiki")
    assert (q1.id, q1.answer, q1.aliases, q1.type, q1.dataset) == (
        "2w-orig-1", "Pol Dane", (), "compositional", "2wiki",
    )
    assert [p.title for p in q1.paragraphs] == ["Grey Sky", "Ivo Dane", "Grey Sky (2)"]
    assert [p.source_index for p in q1.paragraphs] == [0, 1, 2]
    # The supporting fact on the repeated title follows its first occurrence.
    assert q1.supporting_facts == (("Grey Sky", 1), ("Ivo Dane", 1))
    assert q1.gold_titles == frozenset({"Grey Sky", "Ivo Dane"})
    assert (q2.id, q2.type) == ("2w-orig-2", "comparison")


def test_2wiki_flashrag_layout_aliases():
    q1, q2 = load_file(FIXTURES / "2wiki_flashrag.jsonl", "2wiki")
    assert (q1.id, q1.answer, q1.aliases, q1.type) == ("dev_0", "Rome", ("Roma", "Rome, Italy"), "compositional")
    assert q1.answers == ("Rome", "Roma", "Rome, Italy")
    assert q1.paragraphs[1] == Paragraph("Gio Verde", ("Gio Verde was a composer.", "He was born in Rome."), 1)
    assert q1.supporting_facts == (("Night Song", 0), ("Gio Verde", 1))
    assert (q2.answer, q2.aliases, q2.type) == ("no", (), "comparison")


def test_musique_jsonl_layout():
    q1, q2 = load_file(FIXTURES / "musique.jsonl", "musique")
    assert (q1.id, q1.answer, q1.aliases, q1.type, q1.dataset) == (
        "2hop__11_22", "1850", ("in 1850",), "2hop", "musique",
    )
    assert q1.paragraphs == (
        Paragraph("Vela", ("Vela is a town.", " It was founded by Dr. Amo Rink in 1820."), 0),
        Paragraph("Amo Rink", ("Amo Rink was a doctor.", " He died in 1850!"), 1),
        Paragraph("Vela (2)", ("Vela is also a star.",), 2, source_title="Vela"),
    )
    assert q1.supporting_facts == ()
    assert q1.supporting_paragraphs == (0, 1)
    assert q1.paragraphs[0].text == "Vela is a town. It was founded by Dr. Amo Rink in 1820."
    # The supporting paragraph is the *second* "Nore": gold titles follow source_index.
    assert q2.type == "3hop1"
    assert [p.title for p in q2.paragraphs] == ["Nore", "Nore (2)", "Ohio"]
    assert q2.supporting_paragraphs == (1, 2)
    assert q2.gold_titles == frozenset({"Nore (2)", "Ohio"})
    assert q2.paragraphs[1].sentences == ("Nore is a village in the U.S. Midwest.", " It has a mill.")


def test_musique_json_list_layout():
    q1, q2 = load_file(FIXTURES / "musique_list.json", "musique")
    assert (q1.id, q1.answer, q1.aliases) == ("2hop__77_88", "J. Lor", ("Lor",))
    assert q1.paragraphs[0].sentences == ("Kel is a lake.", ' "It is cold," said J. Lor.', " Swimming is banned.")
    assert q1.supporting_paragraphs == (0,)
    assert (q2.id, q2.supporting_paragraphs, len(q2.paragraphs)) == ("2hop__99_100", (0,), 1)


def test_layout_is_detected_from_content_not_name(tmp_path):
    # A MuSiQue record in a file named like a HotpotQA one still loads as MuSiQue.
    odd = tmp_path / "hotpot_dev_distractor_v1.json"
    shutil.copy(FIXTURES / "musique_list.json", odd)
    assert load_file(odd, "musique")[0].supporting_paragraphs == (0,)


def test_musique_source_index_is_idx(tmp_path):
    path = tmp_path / "m.jsonl"
    path.write_text(
        '{"id": "2hop__1_2", "question": "Q?", "answer": "A", "answer_aliases": [], "paragraphs": ['
        '{"idx": 7, "title": "X", "paragraph_text": "X is A.", "is_supporting": false},'
        '{"idx": 3, "title": "Y", "paragraph_text": "Y is B.", "is_supporting": true}]}\n'
    )
    (q,) = load_file(path, "musique")
    assert [(p.title, p.source_index) for p in q.paragraphs] == [("X", 7), ("Y", 3)]
    assert q.supporting_paragraphs == (3,)
    assert q.gold_titles == frozenset({"Y"})


def test_title_dedup_counts_up_and_avoids_real_titles(tmp_path):
    path = tmp_path / "h.json"
    path.write_text(
        '[{"_id": "d", "question": "Q?", "answer": "A", "type": "bridge",'
        ' "supporting_facts": [["T", 1]],'
        ' "context": [["T", ["a", " b"]], ["T (2)", ["c"]], ["T", ["d"]], ["T", ["e"]]]}]'
    )
    (q,) = load_file(path, "hotpotqa")
    assert [p.title for p in q.paragraphs] == ["T", "T (2)", "T (3)", "T (4)"]
    assert q.supporting_facts == (("T", 1),)


# ---------------------------------------------------------------- splitter


@pytest.mark.parametrize(
    "text, expected",
    [
        ("One. Two! Three? Four", ("One.", "Two!", "Three?", "Four")),
        ("He met Mr. Smith and Dr. Jones. They talked.", ("He met Mr. Smith and Dr. Jones.", "They talked.")),
        ("She lives on St. Mark Street in the U.S. Army base. It is big.",
         ("She lives on St. Mark Street in the U.S. Army base.", "It is big.")),
        ("The author J. R. Tolk wrote it. He was born in 1890.",
         ("The author J. R. Tolk wrote it.", "He was born in 1890.")),
        ("It ended in 1990. 1991 was calm.", ("It ended in 1990.", "1991 was calm.")),
        ('He said "Go." Then he left.', ('He said "Go."', "Then he left.")),
        ("It was big (very big.) Next one.", ("It was big (very big.)", "Next one.")),
        ('It ended. "Why?" she asked.', ("It ended.", '"Why?" she asked.')),
        # MuSiQue's PTB-style closing quote stays with the sentence it closes.
        ("He called it ``the end. ''The next book came later.",
         ("He called it ``the end. ''", "The next book came later.")),
        ("no split before lowercase. like this", ("no split before lowercase. like this",)),
        ("Pi is 3.14 and e is 2.71. Fine.", ("Pi is 3.14 and e is 2.71.", "Fine.")),
        ("  Padded.   Text.  ", ("Padded.", "Text.")),
        ("", ()),
        ("   ", ()),
    ],
)
def test_split_sentences(text, expected):
    assert split_sentences(text) == expected


# ---------------------------------------------------------------- resolution


def _make_dir(tmp_path, files: dict[str, str]) -> Path:
    """files: relative path -> fixture name to copy there."""
    for rel, fixture in files.items():
        target = tmp_path / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(FIXTURES / fixture, target)
    return tmp_path


def test_directory_prefers_original_file(tmp_path):
    root = _make_dir(tmp_path, {
        "hotpotqa/hotpot_dev_distractor.rpt_sample500_seed1.jsonl": "hotpot_hf.jsonl",
        "hotpotqa/hotpot_dev_distractor_v1.json": "hotpot_original.json",
    })
    assert find_file("hotpotqa", root) == root / "hotpotqa" / "hotpot_dev_distractor_v1.json"
    assert _ids(load_questions("hotpotqa", str(root), seed=None)) == ["hp-orig-1", "hp-orig-2"]


def test_directory_falls_back_to_sample_and_searches_itself(tmp_path):
    _make_dir(tmp_path, {"hotpot_dev_distractor.rpt_sample500_seed1.jsonl": "hotpot_hf.jsonl"})
    assert _ids(load_questions("hotpotqa", tmp_path, seed=None)) == ["hp-hf-1", "hp-hf-2"]


@pytest.mark.parametrize(
    "dataset, rel, fixture, first_id",
    [
        ("2wiki", "dev.json", "2wiki_dev.json", "2w-orig-1"),
        ("2wiki", "2wikimultihopqa/2wikimultihopqa_dev_first200.flashrag.jsonl", "2wiki_flashrag.jsonl", "dev_0"),
        ("musique", "musique/musique_ans_v1.0_dev.jsonl", "musique.jsonl", "2hop__11_22"),
        ("musique", "musique/musique_ans_v1.0_dev_sample100.kag.json", "musique_list.json", "2hop__77_88"),
    ],
)
def test_directory_finds_each_dataset(tmp_path, dataset, rel, fixture, first_id):
    _make_dir(tmp_path, {rel: fixture})
    assert load_questions(dataset, tmp_path, seed=None)[0].id == first_id


def test_directory_prefers_2wiki_dev_over_flashrag(tmp_path):
    _make_dir(tmp_path, {
        "2wikimultihopqa/2wikimultihopqa_dev_first200.flashrag.jsonl": "2wiki_flashrag.jsonl",
        "2wikimultihopqa/dev.json": "2wiki_dev.json",
    })
    assert load_questions("2wiki", tmp_path, seed=None)[0].id == "2w-orig-1"


def test_holdout_is_never_picked_from_a_directory(tmp_path):
    holdout = "hotpot_dev_distractor.rpt_sample300_seed0.jsonl"
    _make_dir(tmp_path, {holdout: "hotpot_hf.jsonl", f"hotpotqa/{holdout}": "hotpot_hf.jsonl"})
    with pytest.raises(DataError) as err:
        load_questions("hotpotqa", tmp_path)
    message = str(err.value)
    assert "hotpot_dev_distractor_v1.json" in message
    assert "hotpot_dev_distractor.rpt_sample500_seed1.jsonl" in message
    assert holdout not in message
    # Named explicitly, it loads.
    assert _ids(load_questions("hotpotqa", tmp_path / holdout, seed=None)) == ["hp-hf-1", "hp-hf-2"]


def test_holdout_not_in_preference_lists():
    for names in data_mod.PREFERRED_FILES.values():
        assert not set(names) & data_mod.HOLDOUT_FILES


def test_empty_directory_lists_what_was_looked_for(tmp_path):
    with pytest.raises(DataError) as err:
        load_questions("musique", tmp_path)
    message = str(err.value)
    assert str(tmp_path / "musique_ans_v1.0_dev.jsonl") in message
    assert str(tmp_path / "musique" / "musique_ans_v1.0_dev_sample100.kag.json") in message


def test_missing_path_is_an_error(tmp_path):
    with pytest.raises(DataError, match="neither a file nor a directory"):
        load_questions("hotpotqa", tmp_path / "nope.json")


def test_unknown_dataset():
    with pytest.raises(DataError, match="unknown dataset"):
        load_questions("squad", FIXTURES / "hotpot_hf.jsonl")


def test_env_dir_is_used(tmp_path, monkeypatch):
    _make_dir(tmp_path, {"musique/musique_ans_v1.0_dev.jsonl": "musique.jsonl"})
    monkeypatch.setenv("EIR_DATA_DIR", str(tmp_path))
    assert _ids(load_questions("musique", seed=None)) == ["2hop__11_22", "3hop1__33_44_55"]


def test_data_argument_beats_env_dir(tmp_path, monkeypatch):
    _make_dir(tmp_path, {"musique/musique_ans_v1.0_dev.jsonl": "musique.jsonl"})
    monkeypatch.setenv("EIR_DATA_DIR", str(tmp_path))
    assert load_questions("musique", FIXTURES / "musique_list.json", seed=None)[0].id == "2hop__77_88"


def test_env_dir_must_be_a_directory(monkeypatch):
    monkeypatch.setenv("EIR_DATA_DIR", str(FIXTURES / "hotpot_hf.jsonl"))
    with pytest.raises(DataError, match="EIR_DATA_DIR"):
        load_questions("hotpotqa")


# ---------------------------------------------------------------- hub


def test_offline_hub_failure_message(monkeypatch):
    import datasets

    calls = []

    def offline(*args, **kwargs):
        calls.append((args, kwargs))
        raise ConnectionError("Couldn't reach 'hotpot_qa' on the Hub (LocalEntryNotFoundError)")

    monkeypatch.setattr(datasets, "load_dataset", offline)
    with pytest.raises(DataError) as err:
        load_questions("hotpotqa")
    message = str(err.value)
    assert "--data" in message and "EIR_DATA_DIR" in message
    assert "hotpot_dev_distractor_v1.json" in message
    assert "ConnectionError" in message
    assert calls == [(("hotpot_qa", "distractor"), {"split": "validation"})]


def test_hub_rows_use_hf_layout(monkeypatch):
    import datasets

    row = {
        "id": "hub-1", "question": "Q?", "answer": "A", "type": "bridge", "level": "hard",
        "supporting_facts": {"title": ["T"], "sent_id": [0]},
        "context": {"title": ["T", "U"], "sentences": [["T is A."], ["U."]]},
    }
    monkeypatch.setattr(datasets, "load_dataset", lambda *a, **k: [row])
    (q,) = load_questions("hotpotqa")
    assert (q.id, q.supporting_facts, [p.title for p in q.paragraphs]) == ("hub-1", (("T", 0),), ["T", "U"])


def test_hub_rows_with_a_repeated_id_are_an_error(monkeypatch):
    import datasets

    row = {
        "id": "hub-1", "question": "Q?", "answer": "A", "type": "bridge", "level": "hard",
        "supporting_facts": {"title": ["T"], "sent_id": [0]}, "context": {"title": ["T"], "sentences": [["T is A."]]},
    }
    monkeypatch.setattr(datasets, "load_dataset", lambda *a, **k: [row, {**row, "id": "hub-2"}, row])
    with pytest.raises(DataError) as err:
        load_questions("hotpotqa")
    assert str(err.value) == "hotpot_qa (Hugging Face hub): records 0 and 2 share the id 'hub-1'"


@pytest.mark.parametrize("dataset", ["2wiki", "musique"])
def test_no_hub_for_2wiki_and_musique(dataset):
    with pytest.raises(DataError) as err:
        load_questions(dataset)
    message = str(err.value)
    assert "--data" in message and "EIR_DATA_DIR" in message
    assert data_mod.PREFERRED_FILES[dataset][1] in message


# ---------------------------------------------------------------- order


def test_seed_none_keeps_file_order_and_limit():
    qs = load_questions("hotpotqa", FIXTURES / "hotpot_original.json", seed=None)
    assert _ids(qs) == ["hp-orig-1", "hp-orig-2"]
    assert _ids(load_questions("hotpotqa", FIXTURES / "hotpot_original.json", limit=1, seed=None)) == ["hp-orig-1"]


def test_seed_shuffles_stably(tmp_path):
    lines = (FIXTURES / "hotpot_hf.jsonl").read_text().split("\n")
    record = next(line for line in lines if line.strip())
    path = tmp_path / "many.jsonl"
    path.write_text("\n".join(record.replace("hp-hf-1", f"q{i}") for i in range(20)) + "\n")
    file_order = [f"q{i}" for i in range(20)]

    import random

    expected = list(file_order)
    random.Random(3).shuffle(expected)
    assert _ids(load_questions("hotpotqa", path, limit=5, seed=3)) == expected[:5]
    assert _ids(load_questions("hotpotqa", path, limit=5, seed=3)) == expected[:5]  # stable
    assert _ids(load_questions("hotpotqa", path, seed=0)) != file_order
    assert sorted(_ids(load_questions("hotpotqa", path, seed=0))) == sorted(file_order)
    # The default seed is 0.
    assert _ids(load_questions("hotpotqa", path)) == _ids(load_questions("hotpotqa", path, seed=0))


# ---------------------------------------------------------------- errors


@pytest.mark.parametrize(
    "name, expected",
    [
        ("bad_json_line.jsonl", "record 1: invalid JSON on line 2: Expecting property name enclosed in double quotes"),
        ("missing_field.json", "record 1: missing field 'context'"),
        ("sent_id_negative.jsonl", "record 1: supporting fact sent_id -1 for 'T' is not a sentence index"),
        ("duplicate_id.jsonl", "records 0 and 2 share the id 'dup'"),
        ("title_not_in_context.json", "record 0: supporting fact title 'Nowhere' not in context"),
        ("unknown_layout.jsonl", "record 0: unrecognised record layout; keys seen: ['label', 'qid', 'query']"),
    ],
)
def test_malformed_files_name_file_and_record(name, expected):
    path = BAD / name
    with pytest.raises(DataError) as err:
        load_file(path, "hotpotqa")
    assert str(err.value) == f"{path}: {expected}"
    assert isinstance(err.value, ValueError)


def _hf(question="Q?", answer="A", titles=("T",), sentences=(["T is A."],), facts=(("T", 0),)) -> str:
    return json.dumps({
        "id": "x", "question": question, "answer": answer, "type": "bridge",
        "supporting_facts": {"title": [t for t, _ in facts], "sent_id": [i for _, i in facts]},
        "context": {"title": list(titles), "sentences": list(sentences)},
    })


def _musique(question="Q?", answer="A", paragraphs=(("T", "T is A."),)) -> str:
    return json.dumps({
        "id": "2hop__1_2", "question": question, "answer": answer, "answer_aliases": [],
        "paragraphs": [{"idx": i, "title": t, "paragraph_text": text, "is_supporting": i == 0}
                       for i, (t, text) in enumerate(paragraphs)],
    })


# Records that cannot be a question, each with its reason.
_CANNOT_BE_A_QUESTION = [
    (_hf(titles=(), sentences=(), facts=()), "the context has no paragraphs"),
    ('[{"_id": "o", "question": "Q?", "answer": "A", "type": "b", "supporting_facts": [], "context": []}]',
     "the context has no paragraphs"),
    (_musique(paragraphs=()), "the context has no paragraphs"),
    (_hf(titles=("T", "U"), sentences=(["T is A."], [])), "paragraph 'U' has no sentences"),
    ('[{"_id": "o", "question": "Q?", "answer": "A", "type": "b", "supporting_facts": [["T", 0]],'
     ' "context": [["T", ["T is A."]], ["U", []]]}]', "paragraph 'U' has no sentences"),
    (_musique(paragraphs=(("T", "T is A."), ("U", ""))), "paragraph 'U' has an empty paragraph_text"),
    (_musique(paragraphs=(("T", "T is A."), ("U", "  \n"))), "paragraph 'U' has an empty paragraph_text"),
    (_hf(answer=""), "the gold answer is empty"),
    (_hf(answer=" \t"), "the gold answer is empty"),
    (_musique(answer=""), "the gold answer is empty"),
    ('{"id": "f", "question": "Q?", "golden_answers": [" "], "metadata": {"type": "b",'
     ' "supporting_facts": {"title": [], "sent_id": []}, "context": {"title": ["T"], "content": [["T."]]}}}',
     "the gold answer is empty"),
    (_hf(question=""), "the question is blank"),
    (_musique(question="   "), "the question is blank"),
    (_hf(facts=(("T", "0"),)), "supporting fact sent_id '0' for 'T' is not a sentence index"),
    (_hf(facts=(("T", True),)), "supporting fact sent_id True for 'T' is not a sentence index"),
]


@pytest.mark.parametrize(
    "text, expected",
    [
        ("[1, 2", "invalid JSON on line 1"),
        ("[]", "no records"),
        ("[1]", "record 0: expected a JSON object (one question), got a number (1)"),
        ('{"id": "x", "question": "Q?", "answer": 3, "type": "b", "supporting_facts": [], "context": []}',
         "record 0: field 'answer' must be str, got int"),
        ('{"id": "x", "question": "Q?", "answer": "A", "type": "b", "supporting_facts": {"title": ["T"], "sent_id": []},'
         ' "context": {"title": ["T"], "sentences": [["s"]]}}',
         "record 0: supporting_facts: 'title' has 1 entries but 'sent_id' has 0"),
        ('{"id": "m", "question": "Q?", "answer": "A", "paragraphs": [{"idx": 0, "title": "T", "is_supporting": true}]}',
         "record 0: missing field 'paragraph_text'"),
        ('{"id": "f", "question": "Q?", "golden_answers": [], "metadata": {}}',
         "record 0: field 'golden_answers' is empty"),
    ] + [(text, "record 0: " + reason) for text, reason in _CANNOT_BE_A_QUESTION],
)
def test_malformed_records(tmp_path, text, expected):
    path = tmp_path / "bad.json"
    path.write_text(text)
    with pytest.raises(DataError) as err:
        load_file(path, "hotpotqa")
    assert str(err.value).startswith(f"{path}: ")
    assert expected in str(err.value)


EXPECTED = "expected a JSON list of records or JSONL (one JSON object per line)"


@pytest.mark.parametrize(
    "text, expected",
    [
        # One question pretty-printed: one object over lines, not "invalid JSON on line 1".
        ('{\n  "id": "x",\n  "question": "Q?",\n  "answer": "A"\n}\n',
         f"the file is one JSON object spread over 5 lines (keys: 'id', 'question', 'answer'), not records; "
         f"{EXPECTED}; one question is a list of one record ([...]) or one line of JSONL"),
        # The records wrapped in an object: say which key holds them.
        ('{\n  "version": 1,\n  "data": [{"id": "a"}, {"id": "b"}]\n}',
         f"the file is one JSON object spread over 4 lines (keys: 'version', 'data'), not records; "
         f"{EXPECTED}; its key 'data' holds a list of 2 objects: save that list as the file"),
        ('{\n "id": "a"\n}\n{\n "id": "b"\n}\n',
         f"the file is 2 JSON objects written over 6 lines; {EXPECTED}: write each object on one line, "
         "or put them in a JSON list"),
        ('{\n "id": "a",\n',  # cut short: the line where it breaks, not line 1
         "invalid JSON on line 3: Expecting property name enclosed in double quotes (read as JSON written over "
         f"several lines, as its first line is not a whole value); {EXPECTED}"),
        ("", f"the file is empty: no records; {EXPECTED}"),
        ("  \n\n", f"the file is empty: no records; {EXPECTED}"),
        ("[]", "an empty JSON list: no records"),
        ('["a", "b"]', 'record 0: expected a JSON object (one question), got a string ("a")'),
        ("[[1, 2]]", "record 0: expected a JSON object (one question), got a list ([1, 2])"),
        ("42\n", f"the file is a single JSON value, a number (42), not records; {EXPECTED}"),
        ('"hotpot"', f'the file is a single JSON value, a string ("hotpot"), not records; {EXPECTED}'),
        ("null", f"the file is a single JSON value, null, not records; {EXPECTED}"),
        ('{"id": "a"}\n7\n', "record 1: expected a JSON object (one question), got a number (7)"),
    ],
)
def test_a_file_that_is_not_records_says_what_it_holds(tmp_path, text, expected):
    path = tmp_path / "file.json"
    path.write_text(text)
    with pytest.raises(DataError) as err:
        load_file(path, "hotpotqa")
    assert str(err.value) == f"{path}: {expected}"


def test_one_question_on_one_line_is_still_jsonl(tmp_path):
    path = tmp_path / "one.jsonl"
    path.write_text(_hf() + "\n")
    assert _ids(load_file(path, "hotpotqa")) == ["x"]


def test_duplicate_ids_name_both_records(tmp_path):
    path = tmp_path / "m.jsonl"
    path.write_text("\n".join([_musique(), _musique().replace("2hop__1_2", "2hop__3_4"), _musique()]) + "\n")
    with pytest.raises(DataError) as err:
        load_file(path, "musique")
    assert str(err.value) == f"{path}: records 0 and 2 share the id '2hop__1_2'"


def test_sentence_index_past_the_end_is_kept_with_one_warning_per_file():
    path = FIXTURES / "sent_id_past_end.jsonl"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")  # count every warning, not just the first per location
        questions = load_file(path, "hotpotqa")
    assert [str(w.message) for w in caught] == [
        f"{path}: 2 supporting fact(s) point past the end of their paragraph; "
        "kept as given (the official scorers compare (title, sentence) pairs)"
    ]
    assert caught[0].category is DataWarning
    # Every record loads, each fact exactly as the file gives it.
    assert _ids(questions) == ["ok-1", "past-2", "past-3"]
    assert [q.supporting_facts for q in questions] == [(("T", 0),), (("T", 0), ("U", 5)), (("T", 2),)]


def _no_support_warnings(path, dataset):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        questions = load_file(path, dataset)
    return questions, [str(w.message) for w in caught if w.category is DataWarning]


@pytest.mark.parametrize("layout", ["hotpot_original", "hotpot_hf", "2wiki_flashrag", "musique"])
def test_a_record_with_no_supporting_facts_loads_with_a_warning_naming_file_and_record(tmp_path, layout):
    # Issue 44: such a record loaded without a word, though its Support F1 means nothing.
    ok, empty = {
        "hotpot_original": (
            '{"_id": "q0", "question": "Q?", "answer": "A", "type": "b", "supporting_facts": [["T", 0]],'
            ' "context": [["T", ["T is A."]]]}',
            '{"_id": "q1", "question": "Q?", "answer": "A", "type": "b", "supporting_facts": [],'
            ' "context": [["T", ["T is A."]]]}'),
        "hotpot_hf": (_hf().replace('"x"', '"q0"'), _hf(facts=()).replace('"x"', '"q1"')),
        "2wiki_flashrag": tuple(
            json.dumps({"id": qid, "question": "Q?", "golden_answers": ["A"], "metadata": {
                "type": "b", "supporting_facts": {"title": titles, "sent_id": ids},
                "context": {"title": ["T"], "content": [["T."]]}}})
            for qid, titles, ids in (("q0", ["T"], [0]), ("q1", [], []))),
        "musique": (_musique().replace("2hop__1_2", "q0"),
                    _musique().replace("2hop__1_2", "q1").replace('"is_supporting": true', '"is_supporting": false')),
    }[layout]
    path = tmp_path / f"{layout}.jsonl"
    path.write_text("\n".join([ok, empty, ok.replace('"q0"', '"q2"')]) + "\n")
    questions, messages = _no_support_warnings(path, "musique" if layout == "musique" else "hotpotqa")
    assert _ids(questions) == ["q0", "q1", "q2"]  # every record loads, as given
    [message] = messages
    assert message.startswith(f"{path}: 1 record(s) have no supporting facts")
    assert "record 1 (id 'q1')" in message and "q0" not in message and "q2" not in message
    assert "support scores" in message


def test_many_records_with_no_supporting_facts_get_one_warning_naming_the_first_five(tmp_path):
    path = tmp_path / "no_support.jsonl"
    path.write_text("\n".join(_hf(facts=()).replace('"x"', f'"e{i}"') for i in range(8)) + "\n")
    _, messages = _no_support_warnings(path, "hotpotqa")
    assert messages == [
        f"{path}: 8 record(s) have no supporting facts (MuSiQue: no paragraph is_supporting): "
        "record 0 (id 'e0'), record 1 (id 'e1'), record 2 (id 'e2'), record 3 (id 'e3'), record 4 (id 'e4') "
        "and 3 more; loaded as given, but their support scores (support_f1, sp_em, joint) mean nothing"
    ]


def test_clean_files_load_without_warnings():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for name, dataset in [("hotpot_hf.jsonl", "hotpotqa"), ("hotpot_original.json", "hotpotqa"),
                              ("2wiki_dev.json", "2wiki"), ("2wiki_flashrag.jsonl", "2wiki"),
                              ("musique.jsonl", "musique"), ("musique_list.json", "musique")]:
            load_file(FIXTURES / name, dataset)
