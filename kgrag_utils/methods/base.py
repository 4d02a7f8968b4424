"""What every method shares: the config base, the progress bar, per-example isolation.

Every method's `<M>Config` derives from `MethodConfig`, a frozen pydantic model:

* one place for every default (the notebook's `parameters` cell must repeat them as literals; one
  test over the method registry checks that they agree);
* validation on construction, in one line: unknown keys are refused naming the closest valid key
  (``SimGRAGConfig has no parameter 'nod_topk': did you mean 'entity_topk'?``), wrong types and
  values outside a field's choices say which field and what it accepts, and each config's own
  cross-field rules (`_check`) raise `ConfigError`;
* `from_params(globals())` builds a config from a notebook's namespace, ignoring every name that is
  not a field; `replace(**changes)` returns a validated copy; `to_dict()` gives plain values
  (tuples as lists), which is what run records store.

Fields shared by every method (each config may change their defaults): `dataset`, `split`,
`limit` (questions evaluated, a seeded sample; **0 = all**, everywhere), `take` (the first N of that sample, in
file order; 0 = all of it: "the first 50 of the seeded 100" is limit=100, take=50), `seed`, `llm_preset`,
`llm_backend` ("" = the preset's default), `llm_structured` (the decoding mode: "" = the preset's default,
"off" = free text with the papers' prompts, "schema" = every LLM stage constrained to its JSON schema) and `embedder`.

Progress bars come from the shared `kgrag_utils.progress.progress_bar`. `isolated` runs a batch and, when it raises, each of its examples
alone, so that one example that raises becomes that example's failure record (its error and
traceback, counted by `summarize`) and the run goes on.
"""

from __future__ import annotations

import importlib
import importlib.util
from typing import Any, Callable, ClassVar, Iterable, Literal, Mapping, Sequence

from pydantic import BaseModel, ConfigDict, ValidationError, model_validator

from ..errors import ConfigError, KgragError, did_you_mean
from ..llm.presets import DEFAULT_CPU_PRESET
from ..metrics import CONTAINMENT, HITS1
from ..progress import progress_bar
from .isolation import error_record, is_error_record, isolated
from .scoring import Headline

__all__ = ["MethodConfig", "Method", "SystematicFailure", "figure_name", "isolated", "error_record", "is_error_record",
           "Headline", "REGISTERED"]

#: every Method subclass that names its own notebook, by method name, as its class statement ran (the registry
#: lists these; a subclass without a `notebook` of its own, such as a test's or a dataset kind's, is not listed)
REGISTERED: dict[str, type] = {}


def _did_you_mean(name: str, options: Iterable[str], renamed: Mapping[str, str] | None = None) -> str:
    tip = did_you_mean(name, options, renamed=dict(renamed or {}))
    return f" ({tip})" if tip else ""


class MethodConfig(BaseModel):
    """Base of every method's config: see the module docstring.

    Subclasses declare their fields with defaults (and may redeclare a shared field to change its
    default), and put cross-field rules in `_check(self)`, raising `ConfigError`.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, validate_default=True)

    #: renamed fields: old name -> new name (refused with the new name; see docs/MIGRATION.md)
    RENAMED: ClassVar[dict[str, str]] = {}

    dataset: str = "sample-movies-2hop"  # a registered dataset name (`kgrag data list`)
    split: str = "test"  # the evaluated split (a method that learns takes the dataset's training split: train, or dev for MetaQA)
    limit: int = 8  # questions (or stories) evaluated (a seeded sample); 0: all
    take: int = 0  # the first N of the seeded sample (file order); 0: all of it
    seed: int = 0  # seed of the evaluated sample and of the method's seeded choices
    llm_preset: str = DEFAULT_CPU_PRESET  # `kgrag presets`: the packaged CPU default; on a GPU e.g. qwen2.5-7b; "fake": a test double
    llm_backend: str = ""  # "": the preset's default; or "hf", "llamacpp", "openai"
    llm_structured: str = ""  # decoding: "": the preset's default; "off": free text (the papers' prompts); "schema": JSON-schema-constrained
    embedder: str = "minilm"  # sentence embeddings: the packaged all-MiniLM-L6-v2, "mpnet" (make setup-mpnet), or any sentence-transformers name
    topics: Literal["given", "linked"] = "given"  # KG questions' topic entities: "given" (the dataset's [X] marks or annotations); "linked": taken away and found by the shared entity linker, as for a question of one's own

    def __init__(self, **data: Any):
        cls = type(self)
        unknown = [k for k in data if k not in cls.model_fields]
        if unknown:
            raise ConfigError(cls._unknown_message(unknown[0]))
        try:
            super().__init__(**data)
        except ValidationError as exc:
            raise ConfigError(cls._validation_message(exc)) from None

    # ------------------------------------------------------------------ validation
    @model_validator(mode="before")
    @classmethod
    def _lists_to_tuples(cls, data: Any) -> Any:
        """Lists (notebook and YAML literals) are accepted where a field holds a tuple."""
        if not isinstance(data, dict):
            return data
        out = dict(data)
        for name, field in cls.model_fields.items():
            if isinstance(out.get(name), list) and isinstance(field.default, tuple):
                out[name] = tuple(out[name])
        return out

    def model_post_init(self, context: Any) -> None:
        if self.limit < 0:
            raise ConfigError(f"{type(self).__name__}.limit must be >= 0 (0 = all), got {self.limit}.")
        if self.take < 0:
            raise ConfigError(f"{type(self).__name__}.take must be >= 0 (0 = the whole sample), got {self.take}.")
        self._check()

    def _check(self) -> None:
        """Cross-field rules of one method (raise ConfigError)."""

    def _rewrite_questions(self, ds) -> None:
        """Rewrite the loaded questions in place before anything else reads them (methods/questions.py)."""

    @classmethod
    def _unknown_message(cls, name: str) -> str:
        fields = list(cls.model_fields)
        if name in cls.RENAMED:
            return (f"{cls.__name__} parameter {name!r} was renamed to {cls.RENAMED[name]!r} "
                    f"(see docs/MIGRATION.md).")
        hint = _did_you_mean(name, fields, cls.RENAMED)
        return f"{cls.__name__} has no parameter {name!r}{hint}; valid: {', '.join(fields)}."

    @classmethod
    def _validation_message(cls, exc: ValidationError) -> str:
        err = exc.errors()[0]
        original = (err.get("ctx") or {}).get("error")
        if isinstance(original, ConfigError):  # raised by model_post_init / _check
            msg = str(original)
            return msg if msg.startswith(cls.__name__) else f"{cls.__name__}: {msg}"
        name = ".".join(str(x) for x in err.get("loc") or ()) or "?"
        value = err.get("input")
        field = cls.model_fields.get(name)
        default = f" (default {field.default!r})" if field is not None else ""
        if err.get("type") == "literal_error":
            expected = (err.get("ctx") or {}).get("expected", "")
            hint = _did_you_mean(value, [s.strip(" '") for s in expected.replace(" or ", ", ").split(",")]) \
                if isinstance(value, str) else ""
            return f"{cls.__name__}.{name}={value!r} is not valid: use {expected}{hint}."
        return f"{cls.__name__}.{name}: {err.get('msg', 'invalid').lower()}{default}, got {type(value).__name__} {value!r}."

    # ------------------------------------------------------------------ construction and export
    @classmethod
    def field_names(cls) -> list[str]:
        return list(cls.model_fields)

    @classmethod
    def defaults(cls) -> dict:
        """Every field's default as plain values (tuples as lists): what the notebook must repeat."""
        return cls().to_dict()

    @classmethod
    def from_params(cls, params: Mapping[str, Any]):
        """A config from a mapping that may hold other names too (a notebook's `globals()`): those are ignored."""
        return cls(**{k: v for k, v in dict(params).items() if k in cls.model_fields})

    def replace(self, **changes: Any):
        """A validated copy with some fields changed (unknown names refused, naming the closest)."""
        unknown = [k for k in changes if k not in type(self).model_fields]
        if unknown:
            raise ConfigError(type(self)._unknown_message(unknown[0]))
        return type(self)(**{**{k: getattr(self, k) for k in type(self).model_fields}, **changes})

    def to_dict(self) -> dict:
        """Plain values (tuples as lists), in field order: what run records store."""
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in self.model_dump().items()}

    @property
    def needs_llm(self) -> bool:
        """Whether a run with this config calls an LLM (methods override)."""
        return True

    def load_llm(self, **overrides: Any):
        """The LLM this config names (`llm_preset` on `llm_backend`)."""
        from ..llm import load_llm

        overrides.setdefault("structured", self.llm_structured or None)
        return load_llm(self.llm_preset, backend=self.llm_backend or None, **overrides)

    def load_dataset(self, **options: Any):
        """The evaluated items: `load_dataset(dataset, split, limit, seed, take)` (limit 0 = all; take 0 = all of
        the sample)."""
        from ..datasets import load_dataset

        ds = load_dataset(self.dataset, split=self.split, limit=self.limit or None, seed=self.seed, take=self.take,
                          **options)
        self._rewrite_questions(ds)
        if self.topics == "linked":
            from ..linking import forget_topics

            if ds.kind != "kgqa" or ds.kg is None:
                raise ConfigError(f"topics='linked' links KG questions over one KG; {ds.name!r} is a {ds.kind} dataset"
                                  f"{'' if ds.kg is not None else ' without one KG'}: use topics='given'.")
            ds.info["n_topics_taken"] = forget_topics(ds.items)
        if (ds.source == "user" or self.topics == "linked") and ds.kg is not None:
            from ..linking import link_questions  # questions naming no topic entity: linked (kgrag_utils.linking)

            ds.info["n_linked"] = link_questions(ds.items, ds.kg, embedder=self.embedder)
        return ds


# ----------------------------------------------------------------------------- figure names
def figure_name(method: str, dataset: str, what: str, variant: str = "", run: str = "") -> str:
    """A figure's file stem, the one place figures are named: `<method>_<dataset>_<what>[_<variant>][__<run>]`.

    The dataset and variant keep runs over several datasets or variants apart; `run` (the run's name:
    `recorder.run_name`, or `get_method(m).run_name(globals())` before the recorder exists) keeps two runs on
    the same dataset apart, so no run overwrites another's figure. A double underscore separates the run
    (run names hold single ones); characters other than letters, digits and . _ - become -. `dataset` is
    "" only for a figure over every dataset (the report's)."""
    import re

    parts = [method] + ([dataset] if dataset else []) + [what] + ([variant] if variant else [])
    stem = "_".join(re.sub(r"[^A-Za-z0-9._-]+", "-", str(p)).strip("-") for p in parts)
    return f"{stem}__{re.sub(r'[^A-Za-z0-9._-]+', '-', str(run)).strip('-')}" if run else stem


# ----------------------------------------------------------------------------- the method base class
class SystematicFailure(KgragError):
    """Every example of a run's first batches raised: a setup problem (backend down, bad data), not one example's."""


class Method:
    """Base of the four method classes: one `run` for all of them.

    A method holds its config (`self.config`) and implements `_run_batch(items) -> list[record]`;
    `run(items, recorder=None, progress=True)` then

    * skips items whose id is already in `recorder.done_ids` (resume) and adds each new record to
      the recorder as its batch finishes (`config.batch_size` items per batch, 1 where the config
      has no batch size);
    * isolates examples (`isolated`): an example that raises becomes its failure record (its error
      and traceback; `summarize` counts it), the run goes on. When every one of the first
      `min(len(todo), max(3, batch_size))` examples raised, the run stops with `SystematicFailure`
      naming the error (the records written so far are kept);
    * returns the records of all `items`, in their order (those done earlier read back from the recorder).

    `llm`: the LLM given at construction, or (when None) the one `config` names, loaded on first use
    and only when the configuration calls an LLM (`config.needs_llm`); `loaded_llm` never loads.
    """

    # ------------------------------------------------------------------ the method's face (the registry reads it)
    #: the method name run records carry (RunRecorder's first argument)
    name: ClassVar[str] = ""
    #: the notebook under notebooks/ that runs this method and writes its run records
    notebook: ClassVar[str] = ""
    #: "method" for the four methods; "tour" for the quickstart (scored, no config); "report" (never scored)
    kind: ClassVar[str] = "method"
    #: the method's config class (a MethodConfig: every default once)
    config_class: ClassVar[type[MethodConfig] | None] = None
    #: the record type (a TypedDict documenting one example's record)
    record_type: ClassVar[type | None] = None
    #: the (strict, lenient) metrics the grid summary shows
    headline: ClassVar[Headline] = Headline(((HITS1, CONTAINMENT),))
    #: the method's colour in cross-method figures, and a human name for tables
    color: ClassVar[str] = "#333333"
    label: ClassVar[str] = ""
    #: the module beside the class that shows its records in the run explorer (`MethodSpec.view`)
    view_module: ClassVar[str] = "view"
    #: dataset kind -> the class that reads it: "" (this class) or "module:Class" beside it (e.g. vector rerank's
    #: "stages.kgqa:FactRerank"); `prepare` picks it with `reader_for(dataset)`; empty: every kind, this class
    kinds: ClassVar[Mapping[str, str]] = {}

    config: MethodConfig
    _llm: Any = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.__dict__.get("notebook"):
            if not cls.name:
                raise ConfigError(f"{cls.__name__} names a notebook but no method `name`: set both as class attributes.")
            known = REGISTERED.get(cls.name)
            if known is not None and (known.__module__, known.__qualname__) != (cls.__module__, cls.__qualname__):
                raise ConfigError(f"method name {cls.name!r} is taken by {known.__module__}.{known.__qualname__}: give "
                                  f"{cls.__qualname__} its own `name` (a subclass that is no new method sets no `notebook`).")
            REGISTERED[cls.name] = cls  # a class statement run again (a reloaded module) replaces the earlier class

    # ------------------------------------------------------------------ construction
    @classmethod
    def prepare(cls, config: MethodConfig, dataset, *, llm=None, embedder=None) -> "Method":
        """Build what the method needs once from a dataset (indexes, relation knowledge, passage graphs);
        the LLM is `config`'s preset, loaded on first use, unless one is given."""
        raise NotImplementedError(f"{cls.__name__} does not define prepare(config, dataset, *, llm=None, embedder=None).")

    @classmethod
    def reader_for(cls, dataset) -> "type[Method]":
        """The class that reads `dataset`, from `kinds` (the one dataset-kind switch of a method, made in `prepare`);
        a kind the method does not read is refused in one line naming the kinds it reads."""
        kind = getattr(dataset, "kind", None)
        if not cls.kinds:
            return cls
        if kind not in cls.kinds:
            raise ConfigError(f"{cls.label or cls.name} reads {' or '.join(cls.kinds)} datasets; "
                              f"{getattr(dataset, 'name', dataset)!r} is a {kind} dataset: pick one of those kinds "
                              "(`kgrag data list`).")
        where = cls.kinds[kind]
        if not where:
            return cls
        module, _, name = where.partition(":")
        return getattr(importlib.import_module(f"{cls.__module__.rpartition('.')[0]}.{module}"), name)

    # ------------------------------------------------------------------ summary hooks
    @classmethod
    def summary_hooks(cls):
        """The method's `SummaryHooks`: `HOOKS` of the `summary.py` beside its class (pure functions of its
        records; the stages never import them). A subclass defined elsewhere (a notebook's, a test's) has
        the hooks of the first class in its MRO that has them."""
        errors = []
        for klass in cls.__mro__:
            if not (isinstance(klass, type) and issubclass(klass, Method)) or klass is Method:
                continue
            package = klass.__module__.rpartition(".")[0]
            if not package:
                errors.append(f"{klass.__name__} is defined outside a package")
                continue
            try:
                return importlib.import_module(f"{package}.summary").HOOKS
            except (ImportError, AttributeError, TypeError, ValueError) as exc:
                errors.append(f"{klass.__name__}: {exc}")
        raise ConfigError(f"{cls.__name__} has no summary hooks ({'; '.join(errors) or 'no method class'}): put a "
                          f"summary.py with HOOKS (methods.summary.SummaryHooks) beside the class, or override "
                          f"summary_hooks().")

    @classmethod
    def summarize(cls, records: Sequence[Mapping]) -> dict:
        """The run summary: the protocol's shared keys and score rows, and this method's extras."""
        from .summary import summarize

        return summarize(records, cls.name, cls.summary_hooks())

    # ------------------------------------------------------------------ the run
    def run(self, items: Sequence, recorder=None, progress: bool = True) -> list[dict]:
        from ..linking import link_outcome
        from .summary import has_gold, mark_unscored, record_scores

        hooks = self.summary_hooks()
        items = list(items)
        done = set(recorder.done_ids) if recorder is not None else set()
        todo = self.run_order([it for it in items if self.item_id(it) not in done])
        size = max(1, int(getattr(self.config, "batch_size", 1) or 1))
        bar = progress_bar(total=len(items), desc=self.progress_label(), unit="q", initial=len(items) - len(todo),
                           enabled=progress)
        guard = min(len(todo), max(3, size))
        llm = getattr(self, "llm", None)
        inner = bool(progress) and size > 1 and hasattr(llm, "call_bar")  # a batch's LLM calls, inside the bar

        def end_call_bar():
            if inner and llm.call_bar is not None:
                llm.call_bar.close()
                llm.call_bar = None
        n_seen = n_errors = 0
        checked = False
        last_error = ""
        fresh: dict = {}
        try:
            for start in range(0, len(todo), size):
                batch = todo[start:start + size]
                by_id = {self.item_id(it): it for it in batch}
                unscored = {self.item_id(it) for it in batch if not has_gold(it)}
                if inner:
                    llm.call_bar = progress_bar(desc=f"{llm.label} (this batch)", unit="prompt", leave=False)
                for rec in isolated(batch, self._run_batch, self.item_id, **self.error_fields()):
                    if rec.get("id") in unscored:  # no gold: "not scored", never counted wrong nor blamed
                        mark_unscored(rec)
                    rec["scores"] = record_scores(rec, hooks)  # the record carries its per-variant metric values
                    link = link_outcome(by_id.get(rec.get("id")))
                    if link is not None:  # topics="linked": how the linker did on this question
                        rec["topic_link"] = link
                    if recorder is not None:
                        recorder.add(rec)
                    fresh[rec.get("id")] = rec
                    n_seen += 1
                    if is_error_record(rec):
                        n_errors += 1
                        last_error = rec["error"]
                end_call_bar()
                bar.update(len(batch))
                if not checked and n_seen >= guard:
                    checked = True
                    if n_errors == n_seen:
                        raise SystematicFailure(f"{type(self).__name__}: all of the first {n_seen} examples raised "
                                                f"({last_error}); fix that first (their error records are kept).")
        finally:
            bar.close()
            end_call_bar()  # a batch that raised
        known = {r.get("id"): r for r in (recorder.examples if recorder is not None else [])}
        known.update(fresh)
        return [known[i] for i in (self.item_id(it) for it in items) if i in known]

    def run_order(self, items: list) -> list:
        """The order in which `run` processes the questions still to do (their records keep their ids; `run` returns
        them in the sample's order). The protocol keeps the sample's order; a method whose LLM prompts share long
        prefixes between some questions orders those questions next to each other, so that a backend which reuses
        the KV cache of the previous prompt (llama.cpp) prefills only what differs. Results do not depend on it."""
        return items

    def _run_batch(self, items: Sequence) -> list[dict]:
        raise NotImplementedError

    # ------------------------------------------------------------------ ask your own question
    def ask(self, question: str, topic: str | Sequence[str] | None = None, answers: Sequence[str] | None = None):
        """Run one typed question through every stage and return an `asked.Asked` that shows them (HTML in
        JupyterLab, text under papermill). `topic`: the topic entity (KG methods); None: the question's `[X]`
        marks, else linked (`kgrag_utils.linking`). `answers`: gold answers, to score it (optional).
        Nothing is recorded; the method's own `ask.py` supplies the stages (`ask_view`)."""
        from .asked import Asked, question_item
        from ..linking import link_outcome
        from .summary import has_gold, mark_unscored, record_scores

        view = self.ask_view()
        item = question_item(question, topic, answers, view.item_kind(self), kg=getattr(self, "kg", None),
                             embedder=getattr(self.config, "embedder", None))
        [rec] = isolated([item], self._run_batch, self.item_id, **self.error_fields())  # an error is shown, not raised
        if not has_gold(item):
            mark_unscored(rec)
        rec["scores"] = record_scores(rec, self.summary_hooks())
        return Asked(self.name, self.label or self.name, question, list(getattr(item, "topic_entities", []) or []),
                     item.meta.get("topic_source", "-"), rec, view.stages(rec), view.gist(rec))

    @classmethod
    def ask_view(cls):
        """The module `ask.py` beside the method's class (`item_kind(method)`, `stages(record)`, `gist(record)`)."""
        for klass in cls.__mro__:
            if isinstance(klass, type) and issubclass(klass, Method) and klass is not Method:
                module = f"{klass.__module__.rpartition('.')[0]}.ask"
                if klass.__module__.rpartition(".")[0] and importlib.util.find_spec(module) is not None:
                    return importlib.import_module(module)
        raise ConfigError(f"{cls.__name__} cannot ask a question: put an ask.py (item_kind, stages, gist) beside it.")

    # ------------------------------------------------------------------ hooks
    def item_id(self, item) -> Any:
        """The id a record carries (`qid` of a question, `sid` of a story)."""
        return getattr(item, "qid", None) or getattr(item, "sid", None)

    def error_fields(self) -> dict[str, Callable[[Any], Any]]:
        """Fields every error record carries besides its id (so summaries can still place it)."""
        return {"question": lambda it: getattr(it, "question", None)}

    def progress_label(self) -> str:
        return self.name or type(self).__name__

    # ------------------------------------------------------------------ models
    @property
    def llm(self):
        if self._llm is None and self.config.needs_llm:
            self._llm = self._load_llm()
        return self._llm

    @llm.setter
    def llm(self, value) -> None:
        self._llm = value

    @property
    def loaded_llm(self):
        """The LLM if one is loaded or was given (never loads one)."""
        return self._llm

    def _load_llm(self):
        return self.config.load_llm()
