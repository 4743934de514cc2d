"""The one-line GBNF grammar `--decoding strict` decodes under, built by the project from a JSON schema.

`schema` decoding sends its schema and llama-server converts it (eir_dspy/lm/server_engine.py);
strict cannot: llama-server's converter lets JSON break lines (a space, or one or two newlines
and indentation), has no setting for one line, and the 1.5B laid out over lines writes lists it
never wrote under strict (docs/lm.md, Decoding). So strict keeps its own grammar, accepting
exactly what it accepted when llama-cpp-python 0.3.36's converter built it (until issue 33):

- one optional space at each place JSON allows whitespace, no newline between tokens (a string
  may hold one: its characters are anything but `"` and `\\`, or an escape);
- properties in the schema's order, the required ones first, then any of the optional ones in order;
- a `const` or `enum` value is its JSON text (non-ASCII as the character itself) with no space
  after it;
- integers' `minimum`/`maximum` are read as no bound (schemas give enums where a bound matters);
  numbers have at most 16 integral and 16 decimal digits;
- `{}` is any object; a list of types is the union of the schema under each.

A schema keyword outside this subset (any other, `format` too) raises `UnsupportedSchema` rather than
decode under less.
"""

from __future__ import annotations

import functools
import json

SPACE = '" "?'  # the one whitespace rule: at most one space, never a newline
PRIMITIVES = {  # rule name -> (body, the primitives it uses)
    "char": (r'[^"\\] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{4})', ()),
    "string": (r'"\"" char* "\"" space', ("char",)),
    "integral-part": ("[0-9] | [1-9] [0-9]{0,15}", ()),
    "decimal-part": ("[0-9]{1,16}", ()),
    "integer": ('"-"? integral-part space', ("integral-part",)),
    "number": ('"-"? integral-part ("." decimal-part)? ([eE] [-+]? integral-part)? space',
               ("integral-part", "decimal-part")),
    "boolean": ('("true" | "false") space', ()),
    "null": ('"null" space', ()),
    "value": ("object | array | string | number | boolean | null", ("object", "array", "string", "number", "boolean",
                                                                    "null")),
    "object": ('"{" space (string ":" space value ("," space string ":" space value)*)? "}" space', ("string", "value")),
    "array": ('"[" space (value ("," space value)*)? "]" space', ("value",)),
}
# The keywords read; any other raises. Annotations change no value; `minimum`/`maximum` only on an integer.
KEYWORDS = {"type", "properties", "required", "additionalProperties", "items", "minItems", "maxItems", "minLength",
            "maxLength", "enum", "const", "anyOf", "oneOf", "$ref", "$defs", "definitions", "minimum", "maximum"}
ANNOTATIONS = {"title", "description", "default", "examples", "$schema", "$id", "$comment"}


class UnsupportedSchema(ValueError):
    """A JSON schema keyword the one-line grammar does not decode."""


@functools.lru_cache(maxsize=64)
def one_line_gbnf(schema_json: str) -> str:
    """GBNF for the JSON schema `schema_json` (cached: schema decoding sends one schema every turn)."""
    return _Grammar(json.loads(schema_json)).text()


class _Grammar:
    def __init__(self, root: dict) -> None:
        self.root = root
        self.rules: dict[str, str] = {"space": SPACE}

    def text(self) -> str:
        root = self.value(self.root, "root")
        return "\n".join(f"{name} ::= {body}" for name, body in [("root", root), *self.rules.items()]) + "\n"

    def primitive(self, name: str) -> str:
        body, uses = PRIMITIVES[name]
        if name not in self.rules:
            self.rules[name] = body
            for used in uses:
                self.primitive(used)
        return name

    def value(self, s: dict, name: str) -> str:
        """A GBNF expression for values of schema `s`; `name`: its place, for the rules it adds."""
        if not isinstance(s, dict):
            raise UnsupportedSchema(f"a schema must be an object; got {s!r}")
        kind = s.get("type")
        unsupported = s.keys() - KEYWORDS - ANNOTATIONS
        if kind != "integer" and not isinstance(kind, list):
            unsupported |= {"minimum", "maximum"} & s.keys()
        if unsupported:
            raise UnsupportedSchema(f"{', '.join(sorted(unsupported))} in {s}")
        if "$ref" in s:
            return self.ref(s["$ref"])
        if "anyOf" in s or "oneOf" in s:
            return self.union(s["oneOf"] if "oneOf" in s else s["anyOf"], name)
        if isinstance(kind, list):
            return self.union([{**s, "type": t} for t in kind], name)
        if "const" in s:
            return literal(s["const"])
        if "enum" in s:
            return self.union_of([literal(v) for v in s["enum"]])
        if kind in (None, "object") and ("properties" in s or "required" in s
                                         or s.get("additionalProperties", True) is not True):
            return self.object(s, name)
        if kind in (None, "array") and "items" in s:
            return self.array(s, name)
        if "minItems" in s or "maxItems" in s:
            raise UnsupportedSchema(f"minItems/maxItems with no items schema in {s}")
        if kind == "string" and ("minLength" in s or "maxLength" in s):
            return rf'"\"" {self.primitive("char")}{repeat(s.get("minLength", 0), s.get("maxLength"))} "\"" space'
        if kind == "object" or not s:  # `{}`: any object, as the converter read it
            return self.primitive("object")
        if kind in ("string", "integer", "number", "boolean", "null", "array"):
            return self.primitive(kind)
        raise UnsupportedSchema(f"no type in {s}")

    def union(self, options: list, name: str) -> str:
        return self.union_of([self.value(o, f"{name}-{i}") for i, o in enumerate(options)])

    @staticmethod
    def union_of(expressions: list[str]) -> str:
        if not expressions:  # `()` would match the empty string, not nothing
            raise UnsupportedSchema("an empty enum, anyOf or oneOf")
        return "(" + " | ".join(expressions) + ")"

    def rule(self, name: str, body: str) -> str:
        """A rule holding `body` (an item written twice in an array's expression is written once)."""
        if body in self.rules:  # already a rule's name
            return body
        name = "".join(c if c.isalnum() else "-" for c in name)
        unique, n = name, 1
        while self.rules.get(unique, body) != body:
            unique, n = f"{name}{n}", n + 1
        self.rules[unique] = body
        return unique

    def ref(self, ref: str) -> str:
        prefix = next((p for p in ("#/$defs/", "#/definitions/") if ref.startswith(p)), None)
        if prefix is None:
            raise UnsupportedSchema(f"$ref {ref!r}: only this schema's own $defs")
        name = "ref-" + "".join(c if c.isalnum() else "-" for c in ref[len(prefix):])
        if ref[len(prefix):] not in self.root.get(prefix[2:-1], {}):
            raise UnsupportedSchema(f"$ref {ref!r}: no such definition")
        if name not in self.rules:
            self.rules[name] = "..."  # reserved first: a definition may refer to itself
            self.rules[name] = self.value(self.root.get(prefix[2:-1], {})[ref[len(prefix):]], name)
        return name

    def object(self, s: dict, name: str) -> str:
        extra = s.get("additionalProperties", False)
        if extra is not False and extra is not None:
            raise UnsupportedSchema(f"additionalProperties {extra!r}")
        properties = s.get("properties", {})
        if set(s.get("required", ())) - properties.keys():
            raise UnsupportedSchema(f"required properties with no schema in {s}")
        required = [k for k in properties if k in s.get("required", ())]
        optional = [k for k in properties if k not in required]
        pairs = {k: f'{literal(k)} space ":" space {self.value(properties[k], f"{name}-{k}")}' for k in properties}
        parts = ['"{" space', ' "," space '.join(pairs[k] for k in required)]
        if optional:  # any of the optional properties, in order, after the required ones
            part = self.union_of([" ".join([pairs[first], *(f'("," space {pairs[k]})?' for k in optional[i + 1:])])
                                  for i, first in enumerate(optional)])
            parts.append(f'("," space {part})?' if required else f"{part}?")
        return " ".join([p for p in parts if p] + ['"}" space'])

    def array(self, s: dict, name: str) -> str:
        item = self.rule(f"{name}-item", self.value(s["items"], f"{name}-item"))
        low, high = s.get("minItems", 0), s.get("maxItems")
        if high == 0:
            return '"[" space "]" space'
        more = f'("," space {item}){repeat(max(low - 1, 0), None if high is None else high - 1)}'
        items = f"{item} {more}" if low > 0 else f"({item} {more})?"
        return f'"[" space {items} "]" space'


def repeat(low: int, high: int | None) -> str:
    """GBNF's repetition suffix for low..high times (high None: no limit)."""
    if high is None:
        return "*" if low == 0 else "+" if low == 1 else f"{{{low},}}"
    return "?" if (low, high) == (0, 1) else f"{{{low},{high}}}"


def literal(value) -> str:
    """A GBNF literal for the JSON text of `value`, strings written raw (non-ASCII as itself). JSON text
    holds no control character (json.dumps escapes them), so only `\\` and `"` need GBNF's escape."""
    text = json.dumps(value, ensure_ascii=False)
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
