"""Keyword/phrase scoring of cleaned text into one of ``bot.models.TAGS``.

Text is lower-cased and split into alphanumeric tokens ("weight-decay" → "weight decay",
"max_seq_len" → "max seq len"). A term is a token ("sweep"), a token prefix ("ablat*") or a phrase
of tokens ("learning rate"); tokens are counted once with a ``Counter`` and phrases with
``str.count`` on the space-joined tokens, so scoring costs a few C-level passes whatever the
table size. Word boundaries come for free: "rope" never matches inside "europe".

Every term has a weight; a title hit counts ``TITLE_WEIGHT`` times, and repeated body hits of one
term count at most ``MAX_HITS`` times (a pasted list of 40 checkpoint paths is not 40 votes).
Scoring keeps its ``Evidence``: besides each tag's score, the distinct terms that gave it and
whether one of them is strong. Ties go to the more specific tag (``PRIORITY``); a tag is given
only when the rules are sure of it (``confident_tag``): it clearly wins, its score is high enough
and its evidence is broad (two distinct terms, or one strong term, shape or thread marker), since
the timeline shows no tag rather than a doubtful one. A chat line has room for one topic word, so
one strong, unopposed term is enough there. Two rivals compete like tags but are never shown: no
topic at all (CI, tooling, someone's side workload, the team's logistics) and a fault or its
aftermath (an incident follow-up the detector missed reads like infra). The "incident" tag is
not scored here: ``bot.enrich.rules`` gives it when the incident detector fires.

``choose_tag`` reads an event in its thread (``bot.enrich.context``): a label or title prefix that
names a tag ("[evals]", "infra") declares the thread's topic, other markers and the title are
scored like text, and a comment's own words are weighed against that topic.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Final

from bot.enrich.context import ThreadContext, split_prefix
from bot.enrich.markdown import HEADING, ITEM, PARA, Document
from bot.models import TAGS

TITLE_WEIGHT: Final = 3.0
MAX_HITS: Final = 3
MIN_SCORE: Final = 1.0
#: A tag is shown only when the evidence is strong: the best score reaches ``CONFIDENT_SCORE``
#: and is at least ``CONFIDENT_MARGIN`` times the runner-up's. Below that the timeline shows no
#: tag: a wrong tag is worse than none (issue 40).
CONFIDENT_SCORE: Final = 4.0
CONFIDENT_MARGIN: Final = 2.0
#: A term at least this heavy is evidence by itself ("checkpoint", "MMLU", "slurm"); lighter ones
#: ("loss", "score", "restart") say something only with another term of the same tag.
STRONG_WEIGHT: Final = 2.0
#: Distinct terms of one tag that make its evidence broad without a strong one.
BROAD_TERMS: Final = 2
#: A post of at most ``SHORT_WORDS`` words (a chat line, a short reply) has room for one topic
#: word: one strong term in its first paragraph (``SHORT_SCORE``) is enough when unopposed.
SHORT_WORDS: Final = 30
SHORT_SCORE: Final = 3.0
TAG_LIMIT: Final = 8_000  # characters of body prose scored

#: Ties go to the earlier, more specific tag: an ablation of weight decay is an ablation.
PRIORITY: Final[tuple[str, ...]] = (
    "ablation",
    "long-context",
    "checkpointing",
    "evals",
    "optimizer",
    "training-dynamics",
    "data",
    "infra",
    "spec",
)
SCORED_TAGS: Final = frozenset(TAGS) - {"incident", "other"}
#: Evidence that a post is about none of the run's topics (CI, unit tests, the repository's
#: tooling, side workloads, logistics): it competes with the tags like a tag of its own, and when
#: it wins or comes close no tag is shown.
NO_TOPIC: Final = "none"
#: Evidence of a fault or its aftermath (crashed, excluded, requeued): a rival of every tag, so
#: that an incident's follow-up the incident detector missed shows no tag, not "infra".
FAULT: Final = "fault"
RIVALS: Final = frozenset({NO_TOPIC, FAULT})

#: (tag, weight, terms separated by commas). "x*" is a prefix; "x y" a phrase of tokens.
TERMS: Final[tuple[tuple[str, float, str], ...]] = (
    # Saying "ablation" is the strongest signal there is: whatever was ablated (an optimizer
    # setting, a cache, the attention gate), the post reports an ablation.
    ("ablation", 5.0, "ablat*"),
    ("ablation", 2.5, "knockout, knock out, knocked out, zeroing out, zeroed out, layer skip"),
    ("ablation", 2.0, "sweep, sweeps, swept, we compared, compared against, compared with"),
    ("ablation", 2.0, "baseline vs, vs baseline, vs the baseline, a b test, head to head"),
    ("ablation", 1.0, "baseline, baselines, control run, side by side, seed, seeds, vs, versus"),
    # arms and variants of one comparison, however it is named
    ("ablation", 2.5, "arm, arms, variant, variants, a b, ab test, against the baseline"),
    ("ablation", 1.5, "compared to, comparison, compare, comparing, control, controls"),
    ("ablation", 1.5, "wins, winner, won, beats, everything else fixed, all else equal"),
    ("ablation", 2.0, "identical otherwise, otherwise identical, two runs, both runs, each run"),
    ("ablation", 3.0, "ladder, ladders, rung, rungs, scaling law, scaling laws, isoflop*"),
    # the optimizer's own knobs: whatever else a post names (the router, the gate), changing
    # these is an optimizer change
    ("optimizer", 3.0, "learning rate, learning rates, lr schedule, weight decay"),
    ("optimizer", 2.0, "lr, warmup"),
    ("optimizer", 2.0, "adam*, muon, lion, sophia, shampoo, soap, optimizer, optimizers, optim"),
    ("optimizer", 2.0, "grad clip, grad clipping, gradient clipping, clip norm, clipping"),
    ("optimizer", 1.5, "momentum, beta1, beta2, epsilon, cosine decay, wsd, anneal*"),
    ("optimizer", 1.5, "eps, peak lr, peak learning rate, lr peak, cosine, decay to"),
    ("optimizer", 1.0, "decay, schedule free, ema, warm up"),
    ("training-dynamics", 2.5, "loss spike, loss spikes, spike, spikes, spiked, spiking"),
    ("training-dynamics", 2.5, "grad norm, grad norms, gradient norm, gradient norms"),
    ("training-dynamics", 2.0, "attention gate, gate norm, router, routers, logit, logits"),
    ("training-dynamics", 2.0, "z loss, norm growth, diverg*, instabilit*, unstable, collaps*"),
    ("training-dynamics", 1.5, "saturat*, activation, activations, load balanc*, dead experts"),
    ("training-dynamics", 1.0, "loss, losses, gate, gates, norm, norms, nan, nans, plateau*"),
    ("training-dynamics", 1.5, "curve, curves, trajectory, train loss, training loss, converg*"),
    ("training-dynamics", 1.5, "bump, bumps, smooth, smoothly, noisy, oscillat*, overfit*"),
    ("training-dynamics", 1.5, "final loss, train loss, lm loss"),
    ("evals", 2.5, "eval, evals, evaluation, evaluations, benchmark, benchmarks, mmlu, paloma"),
    ("evals", 2.0, "hellaswag, gsm8k, humaneval, bits per byte, bpb, perplexit*, leaderboard"),
    ("evals", 1.0, "downstream, held out, heldout, validation loss, val loss, contaminat*"),
    # how any benchmark result is reported: shots, harnesses, scores, the common suites
    ("evals", 2.0, "shot, shots, few shot, zero shot, harness, lm eval, exact match, pass 1"),
    ("evals", 2.0, "arc, arc c, arc e, piqa, winogrande, triviaqa, naturalquestions, bbh, gpqa"),
    ("evals", 2.0, "mbpp, ifeval, mt bench, alpacaeval, wer, cer, bleu, rouge, mos, utmos"),
    ("evals", 1.5, "score, scores, scored, scoring, scorer, accuracy, acc, judge, rubric"),
    ("evals", 2.0, "eval loss, eval losses, code split, validation split, test split"),
    ("data", 2.5, "data mix, data mixture, datamix, dataset, datasets, tokeniz*, tokenis*"),
    ("data", 2.5, "dedup*, corpus, corpora, synthetic data, data pipeline, upsampl*, downsampl*"),
    ("data", 1.0, "shard, shards, data loader, dataloader*, synthetic, mixture"),
    ("data", 1.0, "epoch, epochs, filtering, quality filter, web data, training data, data"),
    ("data", 2.0, "blend, blends, mix, mixes, mixing, subset, subsets, filter, filters"),
    ("data", 1.5, "documents, docs, source, sources, hours of audio, decontaminat*, unk"),
    ("data", 1.5, "compress*, bytes per token, fertility, vocab, vocabulary"),
    ("checkpointing", 2.5, "checkpoint*, ckpt, ckpts, orbax, tensorstore"),
    ("checkpointing", 2.0, "permanent checkpoint, checkpoint schedule, checkpoint interval"),
    ("checkpointing", 2.0, "checkpoint every, pin, pins, pinned, pinning"),
    ("checkpointing", 1.5, "restore, restored, restores, restoring, resumed"),
    # a recovery note: "Back up from 15,000", "Relaunched from 41,000", "rolled back to 48k"
    ("checkpointing", 2.5, "restarted from, relaunched from, back up from, restarting from"),
    ("checkpointing", 2.5, "resume from, resumed from, resuming from, saved from memory"),
    ("checkpointing", 2.5, "rolled back to, roll back to, rollback, resumed at, back at"),
    ("checkpointing", 2.0, "manifest, retention, re saved, resave*, optimizer state"),
    ("checkpointing", 1.5, "safetensors, hf export, export to hf"),
    ("checkpointing", 0.5, "save, saves, saved, saving"),
    ("checkpointing", 1.5, "convert, converted, conversion, hub, upload, uploaded, uploading"),
    ("checkpointing", 2.5, "async save, async saves, async saving, async checkpoint*"),
    ("long-context", 3.0, "long context, context length, context window, context extension"),
    ("long-context", 3.0, "sequence length, sequence lengths, seq len, max seq len, seqlen"),
    ("long-context", 2.5, "rope, yarn, ring attention, 262k, 131k, 128k, 256k, 64k context"),
    ("long-context", 2.0, "needle, ruler, positional, position embeddings, 1m context"),
    ("long-context", 2.0, "rope theta, rope base, theta, long docs, long documents, long form"),
    ("long-context", 1.5, "context, contexts"),
    ("infra", 3.0, "infra, infrastructure, devops, sre, dependencies"),
    ("infra", 2.0, "cluster, scheduler, kubernetes, k8s, slurm, ray, tpu, tpus"),
    ("infra", 2.0, "nvlink, nvswitch, xid, xids, ecc, firmware, driver, drivers, cuda, cublas"),
    ("infra", 2.0, "reservation, reservations, allocation, allocations, capacity"),
    ("infra", 2.0, "maintenance, maintenance window, switch, switches, rack, racks, spine, nic"),
    ("infra", 1.5, "watchdog, monitoring, alert, alerts, sidecar, image, provider, rma, drained"),
    ("infra", 1.0, "dashboard, dashboards"),
    ("infra", 2.0, "v4, v5e, v5p, v6e, h100, h100s, a100, a100s, gb200, nccl, infiniband"),
    ("infra", 2.0, "throughput, mfu, jemalloc, container, containers, docker, node, nodes"),
    ("infra", 1.5, "host, hosts, pod, pods, slice, slices, gpu, gpus, memory, oom*, step time"),
    ("infra", 1.5, "tokens s, preempt*, allocator, vm, vms"),
    ("infra", 1.0, "restart*, crash*, hang, hangs, hung, deadlock*, timeout, timeouts, gcs"),
    ("infra", 1.0, "bucket, buckets, storage, fsdp, sharding, mesh, xla, jax, compil*, quota"),
    # how a run's machines and their plumbing are talked about on any stack
    ("infra", 2.0, "tflops, kernel, kernels, fused, remat, network, fabric, interconnect, ici"),
    ("infra", 1.5, "queue, queued, partition, requeue*, grafana, prometheus, service account"),
    ("infra", 1.5, "bandwidth, latency, topology, duty cycle, utilization, utilisation, dcn"),
    ("infra", 2.0, "goodput, uptime, availability, rack, pool"),
    ("infra", 1.5, "runbook, on call, oncall, prolog, launcher, jobset, gke, deepspeed, megatron"),
    ("spec", 3.0, "spec, specs, specification, architecture"),
    ("spec", 2.0, "hyperparam*, hyper parameters, parameters, params, d model, hidden size"),
    ("spec", 2.0, "vocab size, vocabulary size, num heads, moe, mixture of experts"),
    ("spec", 1.0, "layers, experts, dense, config, recipe, head dim"),
    ("spec", 2.0, "global batch, batch size, token budget, tokens budget, parallelism, d model"),
    ("spec", 1.5, "configuration, setting, settings, schedule, seq, kv heads, n layers"),
    (NO_TOPIC, 3.0, "ci, pytest, unit test, unit tests, test suite, github actions, runner"),
    (NO_TOPIC, 3.0, "flaky, lint, linter, pre commit, mypy, typo, readme"),
    # a fault and its aftermath: an incident the detector did not mark reads like infra, so a
    # post that speaks of one shows no tag rather than a doubtful "infra"
    (FAULT, 1.5, "crash*, hang, hangs, hung, died, dies, dead, fail, fails, failed, failing"),
    (FAULT, 1.5, "failure, failures, broke, broken, stuck, evicted, excluded, cordon*, requeue*"),
    (FAULT, 1.5, "lost, root cause, workaround, retries, flapping"),
    # someone's own side workload, not the run: a notebook, an interactive session, a laptop
    (NO_TOPIC, 3.0, "notebook, jupyter, interactive, login node, laptop, my own, debug pod"),
    # the team's logistics: meetings, travel, rooms, talks
    (NO_TOPIC, 3.0, "lunch, offsite, travel, meeting, slides, reading group, projector, wifi"),
    (NO_TOPIC, 3.0, "parking, coffee, vacation, out tomorrow, ooo, social"),
)


@dataclass(frozen=True, slots=True)
class _Term:
    tag: str
    weight: float
    text: str


def _compile(
    table: tuple[tuple[str, float, str], ...],
) -> tuple[dict[str, list[_Term]], dict[str, list[_Term]], dict[str, list[_Term]]]:
    words: dict[str, list[_Term]] = {}
    prefixes: dict[str, list[_Term]] = {}
    phrases: dict[str, list[_Term]] = {}
    for tag, weight, spec in table:
        if tag not in SCORED_TAGS and tag not in RIVALS:
            raise ValueError(f"unknown tag {tag!r} in TERMS")
        for raw in spec.split(","):
            term = raw.strip()
            if term.endswith("*"):
                prefixes.setdefault(term[:-1], []).append(_Term(tag, weight, term))
            elif " " in term:
                phrases.setdefault(f" {term} ", []).append(_Term(tag, weight, term))
            else:
                words.setdefault(term, []).append(_Term(tag, weight, term))
    return words, prefixes, phrases


_WORDS, _PREFIXES, _PHRASES = _compile(TERMS)
_PREFIX_TUPLE: Final = tuple(_PREFIXES)
#: The phrases in table order, and the places of those each first word starts: a post is only
#: searched for the phrases whose first word it has.
_PHRASE_ITEMS: Final = tuple(_PHRASES.items())


def _places_by_first_word(phrases: Iterable[str]) -> dict[str, tuple[int, ...]]:
    places: dict[str, list[int]] = {}
    for n, phrase in enumerate(phrases):
        places.setdefault(phrase.split()[0], []).append(n)
    return {word: tuple(found) for word, found in places.items()}


_PHRASES_FROM: Final = _places_by_first_word(_PHRASES)
_TOKEN = re.compile(r"[a-z0-9]+")
_RANK: Final = {tag: i for i, tag in enumerate(PRIORITY)}


@dataclass(slots=True)
class Evidence:
    """What was found for each tag: its score, the distinct terms (words, phrases, shapes,
    markers) that gave it, and whether one of them is strong on its own (``STRONG_WEIGHT``)."""

    scores: dict[str, float] = field(default_factory=dict)
    terms: dict[str, set[str]] = field(default_factory=dict)
    strong: set[str] = field(default_factory=set)

    def add(self, tag: str, value: float, term: str, *, strong: bool) -> None:
        self.scores[tag] = self.scores.get(tag, 0.0) + value
        self.terms.setdefault(tag, set()).add(term)
        if strong:
            self.strong.add(tag)

    def merge(self, other: Evidence, factor: float = 1.0) -> None:
        for tag, value in other.scores.items():
            self.scores[tag] = self.scores.get(tag, 0.0) + factor * value
            self.terms.setdefault(tag, set()).update(other.terms.get(tag, ()))
        self.strong |= other.strong

    def broad(self, tag: str) -> bool:
        """Evidence for ``tag`` that is more than one weak word said again and again."""
        return tag in self.strong or len(self.terms.get(tag, ())) >= BROAD_TERMS


def _add(evidence: Evidence, terms: list[_Term], hits: int, factor: float) -> None:
    for term in terms:
        value = term.weight * factor * min(hits, MAX_HITS)
        evidence.add(term.tag, value, term.text, strong=term.weight >= STRONG_WEIGHT)


def _score_part(text: str, factor: float, evidence: Evidence) -> None:
    tokens = _TOKEN.findall(text.lower())
    if not tokens:
        return
    counts = Counter(tokens)
    for token, n in counts.items():
        terms = _WORDS.get(token)
        if terms:
            _add(evidence, terms, n, factor)
        if token.startswith(_PREFIX_TUPLE):
            for prefix, pterms in _PREFIXES.items():
                if token.startswith(prefix):
                    _add(evidence, pterms, n, factor)
    starts = counts.keys() & _PHRASES_FROM.keys()
    if len(tokens) > 1 and starts:
        joined = f" {' '.join(tokens)} "
        for place in sorted(n for word in starts for n in _PHRASES_FROM[word]):
            phrase, terms = _PHRASE_ITEMS[place]
            n = joined.count(phrase)
            if n:
                _add(evidence, terms, n, factor)


def best_tag(scores: dict[str, float], default: str = "other") -> str:
    """Highest-scoring tag (ties by ``PRIORITY``), or ``default`` below ``MIN_SCORE``."""
    if not scores:
        return default
    tag = min(scores, key=lambda t: (-scores[t], _RANK.get(t, len(PRIORITY))))
    return tag if scores[tag] >= MIN_SCORE else default


def _reports_ablation(evidence: Evidence, top: float) -> bool:
    """Strong, broad evidence of a comparison of arms, close to the best topic: the topic is
    what was compared, the post is the comparison."""
    value = evidence.scores.get("ablation", 0.0)
    return (
        value >= CONFIDENT_SCORE
        and value * CONFIDENT_MARGIN >= top
        and len(evidence.terms.get("ablation", ())) >= BROAD_TERMS
    )


def confident_tag(evidence: Evidence, default: str = "other", *, short: bool = False) -> str:
    """``best_tag`` when the rules are sure of it, else ``default``.

    Sure means: the tag clearly wins (``CONFIDENT_MARGIN`` over the runner-up, the no-topic
    evidence included), its score reaches ``CONFIDENT_SCORE`` (``SHORT_SCORE`` for a ``short``
    post, whose few words leave room for one topic word), and its evidence is broad
    (``Evidence.broad``). Two topics neck and neck, a topic mentioned in passing or one weak
    word said three times is no topic."""
    scores = evidence.scores
    tag = best_tag(scores, default)
    if tag == default or tag in RIVALS:
        return default
    if _reports_ablation(evidence, scores[tag]):
        # whatever was ablated (a warmup, an optimizer), the post reports the comparison; the
        # words of the thing compared are no rival
        return "ablation"
    top = scores[tag]
    runner_up = max((v for t, v in scores.items() if t != tag), default=0.0)
    if runner_up * CONFIDENT_MARGIN > top or not evidence.broad(tag):
        return default
    if top >= CONFIDENT_SCORE or (short and top >= SHORT_SCORE and runner_up == 0.0):
        return tag
    return default


# --------------------------------------------------------------------------------------------
# Thread-aware choice

#: Weight of a thread's markers: its title prefix and labels are chosen by people to say what the
#: thread is about, so their words count more than the title's own.
MARKER_WEIGHT: Final = 4.0
#: A description's first paragraph says what the change or issue is; the rest elaborates.
FIRST_PARAGRAPH_WEIGHT: Final = 1.5
#: How much the thread's topic counts in a comment's tag, relative to the comment's own words.
PRIOR_WEIGHT: Final = 0.3


def thread_evidence(
    context: ThreadContext, title: str | None = None, *, with_title: bool = True
) -> Evidence:
    """Evidence of the thread's topic: title prefix, labels and title (``title`` overrides the
    context's, for a description that carries its own)."""
    evidence = Evidence()
    heading = title if title is not None else context.title
    prefix, rest = split_prefix(heading)
    markers = [context.prefix, *context.labels]
    if prefix and prefix != context.prefix:
        markers.append(prefix)
    for marker in markers:
        named = named_tag(marker)
        if named is not None:  # "[evals]", label "infra": the thread says what it is about
            evidence.add(named, NAMED_TAG_SCORE, f"[{named}]", strong=True)
        else:
            _score_part(marker, MARKER_WEIGHT, evidence)
    if rest and with_title:
        _score_part(rest, TITLE_WEIGHT, evidence)
    return evidence


NAMED_TAG_SCORE: Final = 20.0
_TAG_NAMES: Final = {
    **{tag: tag for tag in SCORED_TAGS},
    **{tag + "s": tag for tag in SCORED_TAGS},
    "longcontext": "long-context",
    "long context": "long-context",
    "checkpoint": "checkpointing",
    "checkpoints": "checkpointing",
    "optimization": "optimizer",
    "optim": "optimizer",
    "evaluation": "evals",
    "evaluations": "evals",
    "eval": "evals",
    "dynamics": "training-dynamics",
    "training dynamics": "training-dynamics",
    "infrastructure": "infra",
    # a thread labelled as an experiment is a comparison of runs
    "experiment": "ablation",
    "experiments": "ablation",
}


def named_tag(marker: str) -> str | None:
    """The tag a label or title prefix names outright, if it does."""
    key = " ".join(marker.lower().replace("_", " ").split())
    return _TAG_NAMES.get(key) or _TAG_NAMES.get(key.replace(" ", "-"))


#: Evidence in a post's shape rather than its words: a loss read as a trajectory ("loss 2.61 →
#: 2.48", "went from 2.43 to 2.39") is about how training goes; a context length in thousands
#: of tokens ("16k context", "seq len to 32k") is about long context.
#: Three or more settings or results side by side ("warmup 250 / 1k / 2k / 4k", "2.71 / 2.68 /
#: 2.69") are the arms of a comparison.
SHAPES: Final[tuple[tuple[str, float, re.Pattern[str]], ...]] = (
    # two numbers set against each other: "31.1 vs 27.4"
    ("ablation", 3.0, re.compile(r"\d[\d.,]*%?\s+(?:vs\.?|versus)\s+\d", re.IGNORECASE)),
    # a model's shape: "80 layers", "d_model 7168", "15T tokens"
    (
        "spec",
        3.0,
        re.compile(
            r"\b\d+\s+layers\b|\bd_?model\s+\d|\bhidden\s+(?:size\s+)?\d|\b\d+(?:\.\d+)?[tb]\s+tokens\b",
            re.IGNORECASE,
        ),
    ),
    # and its size said as a size: "20B dense", "1.4B params", a run's setup more than its hosts
    ("spec", 3.0, re.compile(r"\b\d+(?:\.\d+)?[bm]\s+(?:params|parameters|dense|moe)\b", re.I)),
    ("evals", 3.0, re.compile(r"\bpass@(?:\d+|k)\b", re.IGNORECASE)),
    (
        "ablation",
        3.0,
        # spaced, or four and more: not a date ("10/26/2026")
        re.compile(r"\d[\w.+-]*\s+/\s+\d[\w.+-]*\s+/\s+\d|\d[\w.]*/\d[\w.]*/\d[\w.]*/\d"),
    ),
    (
        "training-dynamics",
        3.0,
        re.compile(
            r"\bloss(?:es)?\b[^.\n;|]{0,50}?\d+\.\d+\s*(?:→|->|to)\s*\d+\.\d+", re.IGNORECASE
        ),
    ),
    (
        "long-context",
        3.0,
        re.compile(
            r"\b\d+k\s+(?:context|tokens?\s+of\s+context|sequences?)\b|\b(?:context|sequence"
            r"\s+length|seq\s+len)\s+(?:of\s+|to\s+|from\s+\d+k\s+to\s+|\d+k?\s*(?:→|->)\s*)\d+k\b",
            re.IGNORECASE,
        ),
    ),
)


def _score_shapes(text: str, evidence: Evidence) -> None:
    for tag, weight, pattern in SHAPES:
        if pattern.search(text):
            evidence.add(tag, weight, pattern.pattern, strong=True)


def body_evidence(doc: Document) -> Evidence:
    """Evidence in a body: its first paragraph weighted up, then the rest of its prose, and the
    shapes of its evidence (``SHAPES``)."""
    evidence = Evidence()
    _score_shapes(doc.prose[:TAG_LIMIT], evidence)
    blocks = [b for b in doc.blocks if b.kind in (PARA, ITEM, HEADING)]
    first = next((i for i, b in enumerate(blocks) if b.kind != HEADING), None)
    if first is not None:
        _score_part(blocks[first].text[:TAG_LIMIT], FIRST_PARAGRAPH_WEIGHT, evidence)
    rest = "\n".join(b.text for i, b in enumerate(blocks) if i != first)
    if rest:
        _score_part(rest[:TAG_LIMIT], 1.0, evidence)
    return evidence


def tag_evidence(
    doc: Document,
    *,
    title: str | None,
    kind: str,
    context: ThreadContext,
    incident_thread: bool = False,
) -> Evidence:
    """Every tag's evidence for one event in its thread (empty when it has nothing to say).

    A description (issue or pull, ``title`` given) is read title first: prefix, labels and title
    words, then its first paragraph, then the rest. A comment, review or message is scored on its
    own words, with the thread's topic as a prior (``PRIOR_WEIGHT``) that a strong signal of its
    own overrides. In an incident's own thread the title describes the incident, not the
    follow-ups: only its labels and prefix count there.
    """
    own = body_evidence(doc)
    if title is not None or kind in ("issue", "pull"):
        combined = thread_evidence(context, title)
        combined.merge(own)
        return combined
    if not doc.prose:
        return Evidence()  # nothing of its own to say: no topic either (a bot footer, a link)
    combined = Evidence()
    combined.merge(own)
    combined.merge(thread_evidence(context, with_title=not incident_thread), PRIOR_WEIGHT)
    return combined


def is_short(doc: Document, title: str | None) -> bool:
    """A post of a few words without a title of its own: one chat line, a short reply."""
    return title is None and len(_TOKEN.findall(doc.prose.lower())) <= SHORT_WORDS


def choose_tag(
    doc: Document,
    *,
    title: str | None,
    kind: str,
    context: ThreadContext,
    default: str = "other",
    incident_thread: bool = False,
) -> str:
    """The tag of one event in its thread when the rules are sure of it (``tag_evidence``,
    ``confident_tag``), else ``default``."""
    evidence = tag_evidence(
        doc, title=title, kind=kind, context=context, incident_thread=incident_thread
    )
    return confident_tag(evidence, default, short=is_short(doc, title))
