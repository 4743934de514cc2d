"""Reading by title in the pool: case, whitespace and quotes around words do not matter."""

from __future__ import annotations

import pytest

from eir_dspy.environment import PoolEnvironment, match_title
from eir_dspy.paragraphs import Paragraph

SONG = '"Heroes" (David Bowie song)'
ALBUM = '"Heroes" (David Bowie album)'
SERIES = "Heroes (American TV series)"
ALLO = "'Allo 'Allo!"
GUNS = "Guns N' Roses"
SCHINDLER = "Schindler\u2019s List"  # a curly apostrophe, as some Wikipedia titles have
TITLES = (SONG, ALBUM, SERIES, ALLO, GUNS, SCHINDLER, "Low (David Bowie album)")


@pytest.mark.parametrize(
    "requested, expected",
    [
        (ALBUM, ALBUM),
        ("Heroes (David Bowie album)", ALBUM),  # quotes dropped
        ("heroes (david bowie ALBUM)", ALBUM),
        ('\u201cHeroes\u201d (David Bowie album)', ALBUM),  # curly quotes
        ("'Heroes' (David Bowie album)", ALBUM),
        ('  "Heroes"   (David Bowie album) ', ALBUM),
        ('"Heroes (David Bowie album)"', ALBUM),  # the whole title quoted
        ("Heroes (David Bowie song)", SONG),
        ("Allo Allo!", ALLO),
        ("'ALLO 'ALLO!", ALLO),
        ('"\'Allo \'Allo!"', ALLO),
        ("Guns N Roses", GUNS),
        ("Schindler's List", SCHINDLER),
        ('"Low (David Bowie album)"', "Low (David Bowie album)"),
    ],
)
def test_quotes_case_and_spacing_are_ignored(requested, expected):
    assert match_title(requested, TITLES) == expected


@pytest.mark.parametrize(
    "requested",
    [
        "Heroes",  # names none of the three Heroes paragraphs exactly
        "Heroes (David Bowie)",
        "Heroes David Bowie album",  # brackets still count
        "Schindlers List",  # an apostrophe inside a word is part of the title
        "Allo",
        "",
    ],
)
def test_a_different_title_does_not_match(requested):
    assert match_title(requested, TITLES) is None


def test_exact_match_wins_over_an_earlier_loose_one():
    titles = ('"Heroes"', "Heroes")
    assert match_title("Heroes", titles) == "Heroes"
    assert match_title('"Heroes"', titles) == '"Heroes"'
    assert match_title("heroes", titles) == '"Heroes"'  # no exact match: first loose one in pool order


def test_reading_without_quotes_reads_that_paragraph_not_another():
    pool = tuple(Paragraph(t, (f"{t} text.",), i) for i, t in enumerate(TITLES))
    env = PoolEnvironment(pool)
    # The song comes first in the pool, so a fallback would read it instead.
    result = env.read("Heroes (David Bowie album)")
    assert (result.paragraph.title, result.fell_back) == (ALBUM, False)
    assert env.find_unread("heroes (david bowie album)") is None  # read already
    result = env.read("Allo Allo!")
    assert (result.paragraph.title, result.fell_back) == (ALLO, False)
    assert env.unread_titles == (SONG, SERIES, GUNS, SCHINDLER, "Low (David Bowie album)")
    # An unknown title still falls back to the first unread paragraph, flagged as such.
    result = env.read("Heroes")
    assert (result.paragraph.title, result.fell_back) == (SONG, True)
