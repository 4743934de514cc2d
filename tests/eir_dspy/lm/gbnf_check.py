"""A small GBNF reader for tests: does a grammar accept a string, and random strings a grammar
accepts. Enough of llama.cpp's grammar syntax for JSON-schema grammars (literals, character
classes, groups, `|`, `? * + {m} {m,} {m,n}`, rule references); no model is involved.

Two grammars accept the same language if every string sampled from either is accepted by both,
and small edits of those strings (a space, a newline, a character dropped or doubled) are accepted
by both or by neither: `same_language`.
"""

from __future__ import annotations

import random
import re
import sys

_TOKEN = re.compile(r'\s*(?:(?P<def>::=)|(?P<name>[a-zA-Z0-9-]+)|(?P<lit>"(?:\\.|[^"\\])*")|(?P<cls>\[(?:\\.|[^\]\\])*\])'
                    r"|(?P<rep>\{\d+(?:,\d*)?\})|(?P<op>[()|?*+]))")
_ESCAPES = {"n": "\n", "r": "\r", "t": "\t", "\\": "\\", '"': '"', "[": "[", "]": "]", "/": "/"}
ALPHABET = [chr(c) for c in range(32, 127)] + ["\n", "\t", "é", "ß", "\u4e2d"]


def _unescape(text: str) -> list[str]:
    out, i = [], 0
    while i < len(text):
        if text[i] == "\\":
            kind = text[i + 1]
            width = {"x": 2, "u": 4, "U": 8}.get(kind)
            if width:
                out.append(chr(int(text[i + 2:i + 2 + width], 16)))
                i += 2 + width
            else:
                out.append(_ESCAPES[kind])
                i += 2
        else:
            out.append(text[i])
            i += 1
    return out


class Grammar:
    def __init__(self, text: str) -> None:
        text = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))
        tokens = []
        pos = 0
        while pos < len(text.rstrip()):
            m = _TOKEN.match(text, pos)
            if not m:
                raise ValueError(f"cannot read GBNF at {text[pos:pos + 40]!r}")
            tokens.append((m.lastgroup, m.group(m.lastgroup)))
            pos = m.end()
        self.rules: dict[str, tuple] = {}
        self._compiled: dict = {}
        starts = [i for i in range(len(tokens) - 1) if tokens[i][0] == "name" and tokens[i + 1][0] == "def"]
        for a, b in zip(starts, [*starts[1:], len(tokens)]):
            node, rest = self._alt(tokens[a + 2:b])
            if rest:
                raise ValueError(f"unexpected {rest[0]} in rule {tokens[a][1]}")
            self.rules[tokens[a][1]] = node

    def _alt(self, tokens):
        options = []
        while True:
            node, tokens = self._seq(tokens)
            options.append(node)
            if tokens and tokens[0] == ("op", "|"):
                tokens = tokens[1:]
                continue
            return (("alt", tuple(options)) if len(options) > 1 else options[0]), tokens

    def _seq(self, tokens):
        items = []
        while tokens and tokens[0] not in (("op", "|"), ("op", ")")):
            kind, text = tokens[0]
            tokens = tokens[1:]
            if kind == "lit":
                node = ("lit", "".join(_unescape(text[1:-1])))
            elif kind == "cls":
                negated = text.startswith("[^")
                body = _unescape(text[2:-1] if negated else text[1:-1])
                ranges, i = [], 0
                while i < len(body):
                    if i + 2 < len(body) and body[i + 1] == "-":
                        ranges.append((body[i], body[i + 2]))
                        i += 3
                    else:
                        ranges.append((body[i], body[i]))
                        i += 1
                node = ("cls", negated, tuple(ranges))
            elif kind == "name":
                node = ("ref", text)
            elif (kind, text) == ("op", "("):
                node, tokens = self._alt(tokens)
                if not tokens or tokens[0] != ("op", ")"):
                    raise ValueError("unclosed (")
                tokens = tokens[1:]
            else:
                raise ValueError(f"unexpected {text!r}")
            while tokens and (tokens[0][0] == "rep" or tokens[0][1] in ("?", "*", "+")):
                _, op = tokens[0]
                tokens = tokens[1:]
                if op.startswith("{"):
                    low, _, high = op[1:-1].partition(",")
                    bounds = (int(low), int(low) if "," not in op else (int(high) if high else None))
                else:
                    bounds = {"?": (0, 1), "*": (0, None), "+": (1, None)}[op]
                node = ("rep", node, *bounds)
            items.append(node)
        return (("seq", tuple(items)) if len(items) != 1 else items[0]), tokens

    # ------------------------------------------------------------ matching

    def accepts(self, s: str, root: str = "root") -> bool:
        pattern = self._regex(root)
        if pattern is not None:
            return pattern.fullmatch(s) is not None
        return self._accepts(s, root)

    def _regex(self, root: str):
        """The grammar as a compiled regular expression, None if it is recursive (the generic
        `value` of a `{}` schema): a schema's grammar is otherwise regular, and `re` reads it fast."""
        if root not in self._compiled:
            # A string's maxLength of a few hundred nests that many optional groups, and both this builder
            # and `re`'s parser recurse once a group: near Python's default limit of 1,000 frames, so
            # whether it fit depended on how deep pytest's own stack was (pytest 9.2 pushed it over).
            limit = sys.getrecursionlimit()
            sys.setrecursionlimit(max(limit, 20_000))
            try:
                self._compiled[root] = re.compile(self._re(self.rules[root], ()), re.DOTALL)
            except _Recursive:
                self._compiled[root] = None
            finally:
                sys.setrecursionlimit(limit)
        return self._compiled[root]

    def _re(self, node, within: tuple) -> str:
        kind = node[0]
        if kind == "lit":
            return re.escape(node[1])
        if kind == "cls":
            ranges = "".join(re.escape(a) if a == b else f"{re.escape(a)}-{re.escape(b)}" for a, b in node[2])
            return f"[{'^' if node[1] else ''}{ranges}]"
        if kind == "ref":
            if node[1] in within:
                raise _Recursive
            return f"(?:{self._re(self.rules[node[1]], (*within, node[1]))})"
        if kind == "alt":
            return "(?:" + "|".join(self._re(o, within) for o in node[1]) + ")"
        if kind == "seq":
            return "".join(f"(?:{self._re(item, within)})" for item in node[1])
        _, item, low, high = node
        return f"(?:{self._re(item, within)}){{{low},{'' if high is None else high}}}"

    def _accepts(self, s: str, root: str) -> bool:
        memo: dict[tuple[int, int], frozenset] = {}

        def ends(node, i: int) -> frozenset:  # where a match of `node` from i can end
            key = (id(node), i)
            if key not in memo:
                memo[key] = _ends(node, i)
            return memo[key]

        def after(node, starts) -> frozenset:
            return frozenset().union(*(ends(node, j) for j in starts))

        def _ends(node, i: int) -> frozenset:
            kind = node[0]
            if kind == "lit":
                return frozenset([i + len(node[1])]) if s.startswith(node[1], i) else frozenset()
            if kind == "cls":
                inside = i < len(s) and any(a <= s[i] <= b for a, b in node[2])
                return frozenset([i + 1]) if i < len(s) and inside != node[1] else frozenset()
            if kind == "ref":
                return ends(self.rules[node[1]], i)
            if kind == "alt":
                return frozenset().union(*(ends(o, i) for o in node[1]))
            if kind == "seq":
                here = frozenset([i])
                for item in node[1]:
                    here = after(item, here)
                return here
            _, item, low, high = node
            most = high if high is not None else low + len(s) - i + 1
            here, out = frozenset([i]), set()
            for count in range(most + 1):
                if count >= low:
                    out |= here
                if count == most or not here:
                    break
                here = after(item, here)
            return frozenset(out)

        return len(s) in ends(self.rules[root], 0)

    # ------------------------------------------------------------ sampling

    def sample(self, rng: random.Random, root: str = "root", tries: int = 50) -> str:
        for _ in range(tries):
            try:
                return "".join(self._gen(self.rules[root], rng, 0))
            except _TooDeep:
                continue
        raise ValueError("could not sample a short string")

    def _gen(self, node, rng, depth):
        if depth > 60:
            raise _TooDeep
        kind = node[0]
        if kind == "lit":
            return [node[1]]
        if kind == "cls":
            choices = [c for c in ALPHABET if any(a <= c <= b for a, b in node[2]) != node[1]]
            return [rng.choice(choices or [node[2][0][0]])]
        if kind == "ref":
            return self._gen(self.rules[node[1]], rng, depth + 1)
        if kind == "alt":
            return self._gen(rng.choice(node[1]), rng, depth + 1)
        if kind == "seq":
            return [c for item in node[1] for c in self._gen(item, rng, depth + 1)]
        _, item, low, high = node
        count = rng.randint(low, min(high if high is not None else low + 3, low + 3))
        return [c for _ in range(count) for c in self._gen(item, rng, depth + 1)]


class _TooDeep(Exception):
    pass


class _Recursive(Exception):
    pass


def edits(s: str, rng: random.Random, n: int = 6) -> list[str]:
    """Small edits of `s`: a space after each token's end (where whitespace rules differ), and at
    random places a space or a newline inserted, a character dropped or doubled."""
    out = [s[:i] + " " + s[i:] for i in range(1, len(s) + 1) if s[i - 1] in '"]},:[{el0123456789']
    for _ in range(n):
        i = rng.randrange(len(s) + 1)
        out += [s[:i] + " " + s[i:], s[:i] + "\n" + s[i:]]
        if s:
            j = rng.randrange(len(s))
            out += [s[:j] + s[j + 1:], s[:j] + s[j] + s[j:]]
    return out


def same_language(a: str, b: str, seed: int = 0, samples: int = 40) -> list[str]:
    """Strings on which GBNF texts `a` and `b` disagree (empty: none found)."""
    rng = random.Random(seed)
    ga, gb = Grammar(a), Grammar(b)
    disagreements = []
    for g in (ga, gb):
        for _ in range(samples):
            s = g.sample(rng)
            if not g.accepts(s):
                raise AssertionError(f"a grammar rejects its own sample {s!r}: the reader is wrong")
            for t in [s, *edits(s, rng)]:
                if ga.accepts(t) != gb.accepts(t):
                    disagreements.append(t)
    return disagreements
