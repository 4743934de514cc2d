"""How an LM's output is constrained while it is decoded: the one place that decides what
response_format each request carries.

- `strict`: a grammar built per call from the live state (signatures/schemas.py): titles are
  enums of the titles really there, citations name sentences that exist, only a submit can be
  decoded once no read is left, lists and strings are capped. Help the paper's models never had.
- `schema`: the signature's own JSON schema (field names, types, required fields), what OpenAI
  structured outputs give GPT-4.1 Mini. Nothing about the state, no caps beyond max_tokens.
- `free`: no response_format at all; JSON by the prompt alone, as the paper's Haiku runs.

The mode is an adapter setting because DSPy's adapters already own the signature-to-request
step (JSONAdapter chooses a response_format per call). A program is given the mode in its run
context (programs/run_context.py), builds its own adapter from it once, and decides from the same
context whether to build its per-call schema. The adapter also applies the method's acceptance
rule (eir_dspy/acceptance.py), given to it when it is made, before JSONAdapter reads the fields.
"""

from __future__ import annotations

import copy
import functools
import json
import logging
from typing import Optional

import dspy
import pydantic
from dspy.adapters.json_adapter import _get_structured_outputs_response_format
from dspy.utils.exceptions import AdapterParseError

from eir_dspy.acceptance import ACCEPTANCES, EXTRACT, JSON_ONLY, REPAIR_LIMIT, NotAnObject, json_only_problem, read_object
from eir_dspy.state import LIST_UPDATE_TYPES, read_updates

DECODINGS = ("strict", "schema", "free")
# The embedded model's default, chosen by measurement (docs/lm.md, "Decoding"): the most faithful
# mode that still gives usable behaviour.
LOCAL_DEFAULT = "schema"

logger = logging.getLogger(__name__)
PER_SIGNATURE_LIMIT = 256  # signatures whose system message and response model an adapter keeps


class DecodingAdapter(dspy.JSONAdapter):
    """JSONAdapter whose response_format follows one decoding mode for every LM, and which accepts
    an output by one acceptance rule (eir_dspy/acceptance.py: `extract` unless given)."""

    def __init__(self, decoding: str, acceptance: str = EXTRACT, **kwargs) -> None:
        if decoding not in DECODINGS:
            raise ValueError(f"decoding must be one of {', '.join(DECODINGS)}; got {decoding!r}")
        if acceptance not in ACCEPTANCES:
            raise ValueError(f"acceptance must be one of {', '.join(ACCEPTANCES)}; got {acceptance!r}")
        super().__init__(**kwargs)
        self.decoding = decoding
        self.acceptance = acceptance
        # What JSONAdapter derives from a signature alone, anew on every call (pydantic JSON schemas of every
        # field for the system message, a response model and its schema for the response_format): ~9 ms of
        # CPU a call on this 2-core machine. Kept here per signature; the text and schema sent are the same.
        self._per_signature: dict[tuple, object] = {}

    def user_message_output_requirements(self, signature) -> str:
        # JSONAdapter repeats each field's type here, after the inputs, where no prefix cache can
        # reach it (~35 tokens a turn); the system message already gives every field's schema.
        return "Respond with a JSON object in the following order of fields: " + \
            ", then ".join(f"`{name}`" for name in signature.output_fields) + "."

    def format_system_message(self, signature) -> str:
        return self._kept(("system", signature, signature.instructions),
                          lambda: super(DecodingAdapter, self).format_system_message(signature))

    def _kept(self, key: tuple, make):
        """`make()` for `key`, made once (a signature class is never changed in place: DSPy makes a new one)."""
        try:
            return self._per_signature[key]
        except KeyError:
            pass
        value = make()
        if len(self._per_signature) >= PER_SIGNATURE_LIMIT:  # an optimizer making a signature per candidate
            self._per_signature.clear()
        self._per_signature[key] = value
        return value

    def parse(self, signature, completion):
        if self.acceptance == JSON_ONLY and (problem := json_only_problem(completion)):
            raise RefusedOutput(type(self).__name__, signature, completion, *problem)
        lists = {name: f.annotation for name, f in signature.output_fields.items() if f.annotation in LIST_UPDATE_TYPES}
        # EIR's list updates are read as given here, then validated by eir_dspy.state, so that a malformed
        # list is an invalid update (the policy's rule decides the turn), never an unusable output.
        read_as = _unvalidated(signature, tuple(lists)) if lists else signature
        fields = self._fields(read_as, completion)
        return {**fields, **{name: read_updates(fields[name], annotation) for name, annotation in lists.items()}}

    def _fields(self, signature, completion: str) -> dict:
        """JSONAdapter's reading of the signature's fields, from the object `read_object` finds in linear
        time (JSONAdapter's own search for it is quadratic in nested braces). The object is handed
        to JSONAdapter as plain JSON, which it reads without repair; errors show the model's output."""
        try:
            found = read_object(completion)
        except NotAnObject as exc:
            raise AdapterParseError(type(self).__name__, signature, completion,
                                    message=f"LM response cannot be serialized to a JSON object: {exc}") from None
        for name, value in found.items():
            # A string where a structured value is due is decoded by DSPy with json_repair: bounded here.
            field = signature.output_fields.get(name)
            if field is not None and field.annotation is not str and isinstance(value, str) and len(value) > REPAIR_LIMIT:
                try:
                    found[name] = json.loads(value)
                except (ValueError, RecursionError):
                    raise AdapterParseError(type(self).__name__, signature, completion, parsed_result=found,
                                            message=f"Failed to parse field {name}: a {len(value):,}-character "
                                                    f"string that is not valid JSON (longer than {REPAIR_LIMIT:,} "
                                                    "characters, the most that is mended)") from None
        try:
            return super().parse(signature, json.dumps(found))
        except AdapterParseError as exc:
            exc.lm_response = completion  # what the model wrote, not the re-encoded object
            raise

    # JSONAdapter's __call__/acall choose a response_format from the LM's capabilities, then run
    # ChatAdapter's; here the decoding mode chooses it instead (DSPy's own choice is skipped).
    def __call__(self, lm, lm_kwargs, signature, demos, inputs):
        self.choose_response_format(lm_kwargs, signature)
        return dspy.ChatAdapter.__call__(self, lm, lm_kwargs, signature, demos, inputs)

    async def acall(self, lm, lm_kwargs, signature, demos, inputs):
        self.choose_response_format(lm_kwargs, signature)
        return await dspy.ChatAdapter.acall(self, lm, lm_kwargs, signature, demos, inputs)

    def choose_response_format(self, lm_kwargs: dict, signature) -> None:
        """Set (or drop) this call's response_format in `lm_kwargs` for the decoding mode."""
        if self.decoding == "free":
            lm_kwargs.pop("response_format", None)
            return
        if self.decoding == "strict" and "response_format" in lm_kwargs:
            return  # the program's per-call grammar
        model = self._kept(("response_format", signature), lambda: _response_model(signature))
        if model is None:
            logger.warning("no JSON schema for %s; decoding it in JSON mode", signature.__name__)
            model = {"type": "json_object"}
        lm_kwargs["response_format"] = model


def _response_model(signature) -> type[pydantic.BaseModel] | None:
    """JSONAdapter's response model of `signature` for structured outputs; None when it has no JSON schema."""
    try:
        return _schema_copied_on_use(_get_structured_outputs_response_format(signature))
    except (ValueError, pydantic.PydanticInvalidForJsonSchema, pydantic.PydanticSchemaGenerationError):
        return None


def _schema_copied_on_use(model: type[pydantic.BaseModel]) -> type[pydantic.BaseModel]:
    """DSPy's response model hands out one schema dict on every `model_json_schema()`, and LiteLLM's
    `type_to_response_format_param` edits it in place (it drops `"default": null`) between DSPy's
    cache lookup and its store: the two cache keys differed, so no call under `--decoding schema`
    was ever answered from the cache (a rerun paid again; a resume re-made a killed question's calls).
    A copy per use leaves the schema sent unchanged and both keys equal. The copy is decoded from the
    schema's JSON text (a JSON schema holds nothing else), four times faster than a deep copy (it is
    made several times a call: DSPy's cache lookup and store, the request)."""
    schema = model.model_json_schema()
    text = json.dumps(schema)
    if json.loads(text) == schema:
        model.model_json_schema = lambda *args, **kwargs: json.loads(text)
    else:  # not plain JSON after all (a tuple, say)
        model.model_json_schema = lambda *args, **kwargs: copy.deepcopy(schema)
    return model


@functools.lru_cache(maxsize=64)
def _unvalidated(signature, names: tuple[str, ...]):
    """`signature` with the fields `names` taken as whatever JSON value the output holds, None when
    it holds none (a field that may be None is filled in by DSPy when missing)."""
    for name in names:
        signature = signature.with_updated_fields(name, type_=Optional[object])  # noqa: UP045 (DSPy shows the type's name to the model)
    return signature


class RefusedOutput(AdapterParseError):
    """An output the adapter's acceptance rule (the method's) refuses; `cause` and `detail` go to the ledger."""

    def __init__(self, adapter_name: str, signature, completion: str, cause: str, detail: str) -> None:
        super().__init__(adapter_name, signature, completion, message=f"{cause}: {detail}")
        self.cause, self.detail = cause, detail


# Providers whose "response schema" LiteLLM emulates with a forced tool call rather than the
# provider decoding under the schema. The paper ran Claude Haiku on JSON by prompt alone, so an
# Anthropic model defaults to `free` and its runs pair with other LMs' default runs as `eir`.
EMULATED_SCHEMA_PROVIDERS = ("anthropic/",)


def default_decoding(lm: dspy.LM, is_local: bool) -> str:
    """The embedded model: LOCAL_DEFAULT. An API model: its schema where the provider decodes
    under one (GPT-4.1 Mini's structured outputs), else JSON by prompt only (Claude Haiku)."""
    if is_local:
        return LOCAL_DEFAULT
    if lm.model.startswith(EMULATED_SCHEMA_PROVIDERS):
        return "free"
    try:
        return "schema" if lm.supports_response_schema else "free"
    except Exception:  # a provider DSPy has no capability data for
        return "free"
