"""Cited prose: the one citation mechanism of `/ask`, the narrative and the digest.

A request carries numbered sources (`[n]`: a fact computed by Runscribe, an event, an open
thread); the model writes sentences that end with the `[n]` of the sources they rest on. This
module reads those markers (`citations_in`, `sentences`) and checks each sentence against what
**it** cites, not against the whole request (`check_sentences`):

- every number, step, date, time, reference, id and link in the sentence must be in its cited
  sources (`bot.llm.grounding.check`, with its rounding, number-word and zone tolerances) or in
  `always` (the run's name);
- every capitalised name in it (a model, a product, a place; "Mistral Large 3") must be written in
  its cited sources, unless it is a word of the request's fixed vocabulary (zones, weekdays,
  sources: `ALWAYS_NAMES`);
- its content words must be mostly the cited sources' words: at least half of them, crudely
  stemmed, or it says something the sources do not ("the bucket ran out of quota" [1], when [1]
  is about an upload's time). An aside in parentheses or between dashes is left out of this (it
  explains jargon), and a decision the sources do not state ("rejected", "merged") or state
  only negated ("Not approved yet") fails on its own;
- numbers and ids must stay with what the sources pair them with: a value swapped with another
  of the same fact ("MMLU 56.9 at 60k" for 58.3), an ordered pair turned round ("16 of the
  14"), a host swapped for its spare, are refused (`misplaced`, `reversed_pairs`);
- the people it names must be the cited sources' authors or named in them, credited with what
  they did (`bot.llm.people` over the cited sources only);
- a sentence without a marker may only connect ("Still open:", "Elsewhere, in short:"): every
  content word in `CONNECTIVE`, no number, id, name or person. Anything else is refused: a claim
  needs its source.

Known gaps: a claim that reuses its source's words in a new order, or negates what its source
says ("the model no longer depends on the gate" for "depends heavily"), passes the content
check; a claim inside an aside is checked for its numbers, ids and people only; a name at the
start of a sentence that is also a common word is not read as a name."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from bot.llm.grounding import FactIndex, Number, check, extract
from bot.llm.people import NOT_PEOPLE, check_people, given, mentioned, people_verbs

# [1], [1, 2], [1][2], [1-3]; not a Markdown link's label ("[2](https://…)").
CITE = re.compile(r"\[\s*(\d{1,3}(?:\s*(?:,|;|-|–)\s*\d{1,3})*)\s*\](?!\()")
# A citation already turned into a link by `link_citations`: `[\[2\]](https://…)`.
LINKED_CITE = re.compile(r"\[\\\[\d{1,3}\\\]\]\([^)\s]+\)")
# a run of markers ("[2][4][5]"), read as one: its sources' links, each page once
_SPACED_CITE = re.compile(rf"(?P<space>[ \t]*)(?:{CITE.pattern})(?:[ \t]*(?:{CITE.pattern}))*")
_SPACED_LINKED = re.compile(r"[ \t]*" + LINKED_CITE.pattern)

SUPPORT_SHARE = 0.5  # of a cited sentence's content words its sources must carry
MIN_UNSUPPORTED = 2  # fewer unsupported content words than this never fail a sentence
MIN_LETTERS = 4  # a content word's length
HEADING_WORDS = 4  # a line ending in ":" this short is a heading


def _split(words: str) -> list[str]:
    return words.split()


# Abbreviations a full stop does not end a sentence after.
_ABBREV = frozenset(
    _split(
        "a.m p.m e.g i.e vs approx etc no jan feb mar apr jun jul aug sep sept oct nov dec mr ms "
        "dr st ca"
    )
)
_SPLIT = re.compile(r"(?<=[.!?…])[\"”’)]?\s+|\n+")
_WORDS = re.compile(r"[A-Za-z][A-Za-z'’\-]*")
# An aside that explains: in parentheses, or between two dashes ("— a steady pull … —").
_PARENS = re.compile(r"\([^()]*\)|\s[—–]\s[^—–]*\s[—–](?=\s)|\s--\s.*?\s--(?=\s)")
_NAME = re.compile(r"(?<![\w@#/.\-])[A-Z][A-Za-z0-9]*(?:[&\-][A-Za-z0-9]+)*")

# Words that claim nothing: an uncited sentence may be made of these alone.
CONNECTIVE = frozenset(
    _split(
        "still open also meanwhile elsewhere otherwise next summary short brief overall news "
        "update updates today incidents incident restarts restart decisions decision results "
        "proposals proposal chat what happened headline more below above detail details follow "
        "following questions question threads thread items item notes note other work progress "
        "first second third finally then besides addition additionally however discussion "
        "discussions recap context background open-questions unresolved pending remaining remain "
        "remains stays stay one"
    )
)
# Capitalised words a sentence may use without a source writing them.
ALWAYS_NAMES = frozenset(
    _split(
        "utc gmt pdt pst edt est cdt cst mdt mst cet cest bst ist jst monday tuesday wednesday "
        "thursday friday saturday sunday i w&b wandb github discord runscribe still incidents "
        "restarts decisions results proposals chat headline kb mb gb tb pb kib mib gib tib pib k "
        "m b t"
    )
)
# Words too general to carry a claim: they never count for or against a sentence.
_GENERIC = frozenset(
    _split(
        "about after again also another around because before being between both could during "
        "each even every first from have into it's its just last later less like more most much "
        "next once only other over same since some still such than that their them then there "
        "these they this those through today under until very were what when where which while "
        "will with within without would yesterday tonight night morning afternoon evening hours "
        "minutes days weeks time times now currently recent recently latest newest new old "
        "training run running runs trains trained team people someone nobody everyone thing "
        "things point says said wrote writes noted notes reported reports says according source "
        "sources fact facts status state shows showed show mean means meaning issue issues thread "
        "threads pull request message messages comment comments channel discussion open opened "
        "still remains remain stays stay kept keeps keep there here whether because "
        "instead rather number numbers step steps does doesn't did didn't say"
    )
)
# How a run is doing, in a narrator's words: what the state, restart and incident facts say
# in other words ("healthy", "back", "hung"), and hedges. They back nothing and cost nothing.
_STATUS = frozenset(
    _split(
        "healthy fine normal normally steady stable back resumed resume resumes recovered recover "
        "recovers running train stalled stall stalls hang hung hangs crashed crash down again "
        "overnight night began begin begins started start starts ended ends stopped stop stops "
        "lasted went goes roughly approximately nearly almost around track incident incidents "
        "trouble problem problems issue went quiet today monday tuesday wednesday thursday friday "
        "saturday sunday whose taking takes took node nodes host hosts machine machines spare "
        "replacement"
    )
)
_NUMBER_WORDS = frozenset(
    _split(
        "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
        "fifteen sixteen seventeen eighteen nineteen twenty thirty forty fifty sixty seventy "
        "eighty ninety hundred thousand million billion trillion half quarter quarters third "
        "thirds dozen second seconds minute minutes hour hours week weeks month months"
    )
)
# Reporting verbs ("found", "logged", "noted"): who said it is the people check's question.
_REPORTING = frozenset(w for w, family in people_verbs().items() if family is None)
# Months: a date is the grounding check's.
_MONTH_WORDS = frozenset(
    _split(
        "january february march april june july august september october november december "
        "sept came come comes coming"
    )
)
_SKIP = _GENERIC | _STATUS | _NUMBER_WORDS | _REPORTING | _MONTH_WORDS


@dataclass(frozen=True, slots=True)
class Source:
    """One numbered source of a request: its text as the model saw it, and its link."""

    n: int
    text: str
    url: str | None = None


def citations_in(text: str) -> list[int]:
    """Cited numbers in order of first appearance; `[2-4]` counts as 2, 3, 4."""
    found: list[int] = []
    for match in CITE.finditer(text):
        for part in re.split(r"\s*[,;]\s*", match.group(1)):
            bounds = re.split(r"\s*[-–]\s*", part)
            numbers = [int(b) for b in bounds if b]
            if len(numbers) == 2 and 0 < numbers[1] - numbers[0] < 20:
                numbers = list(range(numbers[0], numbers[1] + 1))
            for number in numbers:
                if number not in found:
                    found.append(number)
    return found


def strip_citations(text: str) -> str:
    return CITE.sub(" ", text)


def sentences(text: str) -> list[str]:
    """The text's sentences, each with the markers that follow it ("… 5 TiB. [1] Next" gives
    the [1] to the first). A full stop after an abbreviation ("p.m.", "Sep.") ends nothing."""
    pieces: list[str] = []
    pos = 0
    for match in _SPLIT.finditer(text):
        if "\n" not in match.group(0):
            last = re.search(r"([A-Za-z.]+)\.[\"”’)]?$", text[pos : match.start()].rstrip())
            if last and (last.group(1).lower() in _ABBREV or len(last.group(1)) == 1):
                continue
        pieces.append(text[pos : match.start()])
        pos = match.end()
    pieces.append(text[pos:])
    out: list[str] = []
    for piece in pieces:
        lead = re.match(r"^(?:\s*\[[\d,;\s\-–]+\](?!\())+", piece)
        if lead and out:
            out[-1] += " " + lead.group(0).strip()
            piece = piece[lead.end() :]
        if piece.strip():
            out.append(piece.strip())
    return out


_IRREGULAR = {
    "hung": "hang",
    "fell": "fall",
    "fallen": "fall",
    "lost": "lose",
    "ran": "run",
    "timeout": "timed",
    "timeouts": "timed",
}


def _stem(word: str) -> str:
    """A crude stem, the same on both sides: the first five letters ("relaunched" and
    "relaunch"), after the few irregular verbs narratives use."""
    word = re.sub(r"['’]s$", "", word.lower().strip("'’-"))
    return _IRREGULAR.get(word, word)[:5]


# Decisions and outcomes (crudely stemmed): one of these that the cited sources do not carry is
# a claim of its own ("the cooldown was rejected" [1]), however well the rest is supported.
_VERDICTS = frozenset(
    _stem(w)
    for w in _split(
        "approved rejected cancelled canceled abandoned merged reverted declined decided "
        "postponed shelved succeeded completed finished agreed vetoed"
    )
)


_NEGATION = re.compile(
    r"(?:\b(?:not|no|never|nor|without|nobody|yet\s+to)|n['’]t)\s+(?:[\w'’-]+\s+){0,4}$"
)


def _verdict_uses(text: str) -> dict[str, tuple[bool, str]]:
    """Each decision word of `text` by stem → (whether it is ever stated plainly, the word):
    "Not approved yet" states no approval."""
    uses: dict[str, tuple[bool, str]] = {}
    for match in _WORDS.finditer(text):
        stem = _stem(match.group(0))
        if stem in _VERDICTS:
            plain = not _NEGATION.search(text[max(0, match.start() - 48) : match.start()].lower())
            uses[stem] = (uses.get(stem, (False, ""))[0] or plain, match.group(0))
    return uses


def _negated_verdicts(body: str, cited_text: str) -> list[str]:
    """Decisions the sentence states plainly that its sources state only negated."""
    cited = _verdict_uses(cited_text)
    return [
        word
        for stem, (plain, word) in _verdict_uses(body).items()
        if plain and stem in cited and not cited[stem][0]
    ]


def content_words(text: str) -> list[str]:
    """The words that carry a claim: four letters or more, not general, not a run's state in
    other words, not a number (numbers are the grounding check's)."""
    out = []
    for word in _WORDS.findall(text):
        lower = re.sub(r"['’]s$", "", word.lower().strip("'’-"))
        if len(lower) >= MIN_LETTERS and lower not in _SKIP:
            out.append(lower)
    return out


def _stems(text: str) -> set[str]:
    return {_stem(w) for w in _WORDS.findall(text)} | {
        _stem(part) for w in _WORDS.findall(text) for part in w.split("-") if part
    }


def connective(sentence: str, known: Iterable[str] = ()) -> bool:
    """The sentence claims nothing: no number, id, date, reference or link, no person, and
    every content word a connecting one."""
    found = extract(sentence)
    if (
        found.numbers
        or found.idents
        or found.refs
        or found.urls
        or found.dates
        or found.times
        or found.months
        or found.instants
    ):
        return False
    if mentioned(known, sentence):
        return False
    words = [w.lower().strip("'’-") for w in _WORDS.findall(sentence) if len(w) >= 3]
    if sentence.rstrip().endswith(":") and len(sentence.split()) <= HEADING_WORDS:
        return True  # a heading ("Headline numbers:") introduces what follows
    meaningful = [w for w in words if w not in _STOPWORDS]
    return all(w in CONNECTIVE for w in meaningful)


# Words too common to pair a value with anything.
_PAIR_STOP = frozenset(
    _split(
        "being been is are was were has have had its it's our your his her one now again still "
        "step steps run running training trained train about after before with from into over "
        "under each every both only just also then than when what who which that this those these"
    )
)
_STOPWORDS = frozenset(
    _split(
        "the and but for with from into over under about after before since until while that this "
        "these those its was were are has have had not yet then than also there here their they "
        "what how why who which more some any all"
    )
)


@dataclass(slots=True)
class CitedRequest:
    """What a cited reply is checked against: the numbered sources, text every sentence may use
    (the run's name), the card's numbers it may not restate, the run's people and the whole
    request's words (never taken for unknown people)."""

    sources: dict[int, Source]
    always: str = ""
    shown: list[tuple[str, float, float]] | None = None
    known: tuple[str, ...] = ()
    request: str = ""

    # what a sentence without a marker is checked against (`/ask`: the run's computed facts,
    # which are not numbered); None: such a sentence may only connect
    uncited: str | None = None
    # a sentence that says the sources are silent needs no citation (`/ask`)
    silent: Callable[[str], bool] = lambda _text: False


def _excerpt(sentence: str, limit: int = 70) -> str:
    text = " ".join(strip_citations(sentence).split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def unsupported_names(body: str, cited_text: str, always: str) -> list[str]:
    """Capitalised words (not opening the sentence) that the cited sources never write."""
    written = cited_text.lower()
    allowed = always.lower()
    out: list[str] = []
    for match in _NAME.finditer(body):
        if match.start() == 0 or re.search(r"(?:^|[.:;!?\n\"“(]\s*)$", body[: match.start()]):
            continue  # a sentence's (or a clause's) first word is capitalised anyway
        word = match.group(0)
        lower = word.lower()
        if lower in ALWAYS_NAMES or lower in NOT_PEOPLE or lower in written or lower in allowed:
            continue
        if any(ch.isdigit() for ch in word):
            continue  # ids and numbers: the grounding check's
        out.append(word)
    return out


def unsupported_words(body: str, cited_text: str) -> tuple[list[str], int]:
    """(content words the cited sources do not carry, how many content words in all); asides
    in parentheses or between dashes (explanations of jargon) left out."""
    words = content_words(_PARENS.sub(" ", body))
    stems = _stems(cited_text)
    missing = [w for w in words if _stem(w) not in stems]
    return missing, len(words)


_CLAUSE = re.compile(r",\s|;|:\s|\(|\)|\s(?:and|but|while|whereas|then)\s|\.\s|\n")


def _clauses(text: str) -> list[str]:
    return [c for c in _CLAUSE.split(text) if c and c.strip()]


@functools.lru_cache(maxsize=4096)
def _clause_words(clause: str) -> frozenset[str]:
    """A clause's content words (stemmed) and its numbers and ids as written ("60k", "k22n1")."""
    found = extract(clause)
    words = {_stem(w) for w in content_words(clause)}
    return frozenset(words | {n.raw.lower() for n in found.numbers} | set(found.idents))


@functools.lru_cache(maxsize=4096)
def _clause_index(clause: str) -> FactIndex:
    return FactIndex.build(clause)


def misplaced(body: str, cited_text: str) -> list[str]:
    """Numbers and ids the sentence pairs with what its sources pair with another value: "MMLU
    56.9 at the 60k checkpoint" when the source says "MMLU 58.3, up from 56.9 at 50k", "host
    k22n1 logged Xid 79" when it says "host k17n3 logged Xid 79 … the spare k22n1". Each value is
    read with the words of its clause. It is misplaced when no clause of the cited sources that
    carries it shares one of those words, while a clause that does share them carries another
    value of the same kind (a swap or a borrowing, not a paraphrase)."""
    fact_clauses = _clauses(cited_text)
    out: list[str] = []
    for clause in _clauses(body):
        found = extract(clause)
        values = {n.raw.lower() for n in found.numbers} | set(found.idents)
        own = _pair_words(clause) - values  # what the value is said of, not the other values
        if not own:
            continue
        for number in found.numbers:
            holders = [f for f in fact_clauses if _clause_index(f).number_ok(number)]
            if not holders or any(own & _pair_words(h) for h in holders):
                continue
            rivals = [f for f in fact_clauses if own & _pair_words(f)]
            # a rival the clause itself also states ("2.412 against 2.431") is no swap
            others = [n for f in rivals for n in extract(f).numbers if n.raw.lower() not in values]
            if _rival(number, others):
                out.append(number.raw)
        for ident in found.idents:
            holders = [f for f in fact_clauses if _clause_index(f).ident_ok(ident)]
            if not holders or any(own & _pair_words(h) for h in holders):
                continue
            shape = _shape(ident)
            rivals = [f for f in fact_clauses if own & _pair_words(f)]
            if any(
                _shape(i) == shape and i not in values for f in rivals for i in extract(f).idents
            ):
                out.append(ident)
    return out


_VALUE = r"(\d[\d,]*(?:\.\d+)?(?:e-?\d+)?[kKMBT%]?)"
# Ordered pairs whose order is the claim: "546 of 128,256", "from 0.05 to 0.02".
_PAIRS = (
    re.compile(rf"{_VALUE}\s+(?:out\s+)?of\s+(?:the\s+)?(?:\w+\s+)?{_VALUE}"),
    re.compile(rf"\bfrom\s+(?:step\s+)?{_VALUE}\s+to\s+(?:step\s+)?{_VALUE}"),
)


def reversed_pairs(body: str, cited_text: str) -> list[str]:
    """Pairs the sentence writes in the opposite order to its sources ("16 of the 14 subsets"
    for "14 of the 16", "from 0.02 to 0.05" for "from 0.05 to 0.02")."""
    out = []
    for pattern in _PAIRS:
        said = {(a, b) for a, b in pattern.findall(cited_text)}
        for a, b in pattern.findall(body):
            if a != b and (b, a) in said and (a, b) not in said:
                out.append(f"{a} … {b}")
    return out


def _shape(ident: str) -> str:
    """An id's form, its digits blanked: "k17n3" and "k22n1" are both "k#n#"."""
    return re.sub(r"\d+", "#", ident.lower())


@functools.lru_cache(maxsize=4096)
def _pair_words(clause: str) -> frozenset[str]:
    """The words a value in a clause is said of: every word of three letters or more but the
    most common (a host, a GPU, a rung are anchors here), stemmed, and the clause's values."""
    found = extract(clause)
    words = {
        _stem(w)
        for w in _WORDS.findall(clause)
        if len(w) >= 3 and w.lower() not in _STOPWORDS and w.lower() not in _PAIR_STOP
    }
    return frozenset(words | {n.raw.lower() for n in found.numbers} | set(found.idents))


def _rival(number: Number, others: Sequence[Number]) -> bool:
    """Another value of the same kind (its first reading: a duration, a percent, a plain number)
    and about the same size: what a swap would put there."""
    dim, value, _ = number.all_readings()[0]
    for other in others:
        other_dim, other_value, _ = other.all_readings()[0]
        if dim != other_dim or not value or not other_value or value == other_value:
            continue
        if 0.1 <= value / other_value <= 10:
            return True
    return False


def check_sentence(sentence: str, request: CitedRequest) -> list[str]:
    """The problems of one sentence against the sources it cites."""
    cited = citations_in(sentence)
    body = strip_citations(sentence)
    where = f"“{_excerpt(sentence)}”"
    bad = [n for n in cited if n not in request.sources]
    if bad:
        top = max(request.sources, default=0)
        return [f"{where} cites [{bad[0]}], which is not a source: cite only [1] to [{top}]"]
    if not cited:
        if connective(body, request.known) or request.silent(body):
            return []
        if request.uncited is None:
            return [
                f"{where} states something without citing a source: end each sentence that "
                "says something with the [n] of the facts or sources it rests on, or leave it out"
            ]
    texts = [request.sources[n].text for n in cited] if cited else [request.uncited or ""]
    marks = _marks(cited) if cited else "the facts"
    index = FactIndex.build(request.always, *texts)
    index.shown = list(request.shown or [])
    problems = [f"{where}: {p}" for p in check(body, index).problems]
    cited_text = "\n".join(texts)
    for name in unsupported_names(body, cited_text, request.always):
        problems.append(f"{where}: {name} is not in what it cites ({marks})")
    for raw in [*misplaced(body, cited_text), *reversed_pairs(body, cited_text)]:
        problems.append(
            f"{where}: “{raw}” is not what {marks} says it is: keep each number and id "
            "with what the source pairs it with"
        )
    missing, total = unsupported_words(body, cited_text + "\n" + request.always)
    verdicts = [w for w in missing if _stem(w) in _VERDICTS] or _negated_verdicts(body, cited_text)
    if verdicts:
        problems.append(
            f"{where} says “{verdicts[0]}”, which {marks} does not: a decision or outcome must "
            "be one its source states"
        )
    elif len(missing) >= MIN_UNSUPPORTED and len(missing) > total * (1 - SUPPORT_SHARE):
        problems.append(
            f"{where} says more than {marks} says ({', '.join(missing[:4])}): "
            "say only what the cited sources say, and cite the ones that say it"
        )
    people = given(texts, request.known, request=request.request)
    problems.extend(f"{where}: {p}" for p in check_people(body, people))
    return problems


def _marks(cited: Sequence[int]) -> str:
    return "".join(f"[{n}]" for n in cited)


def check_sentences(text: str, request: CitedRequest) -> list[str]:
    """The problems of every sentence of `text` (empty: each says only what it cites)."""
    problems: list[str] = []
    for sentence in sentences(text):
        for problem in check_sentence(sentence, request):
            if problem not in problems:
                problems.append(problem)
    return problems


def link_citations(text: str, sources: dict[int, Source]) -> str:
    """Each `[n]` as a link to its source (`[\\[1\\]](url)`, a Markdown link every surface
    reads), renumbered in order of first use; a marker whose source has no link is dropped,
    with the space before it."""
    urls: dict[str, int] = {}  # a link's number: one per source page, in order of first use
    for n in citations_in(text):
        url = sources[n].url if n in sources else None
        if url and url not in urls:
            urls[url] = len(urls) + 1

    def replace(match: re.Match[str]) -> str:
        cited = [sources[n].url for n in citations_in(match.group(0)) if n in sources]
        links = "".join(
            f"[\\[{urls[url]}\\]]({url})" for url in dict.fromkeys(cited) if url in urls
        )
        return match.group("space") + links if links else ""

    return _SPACED_CITE.sub(replace, text)


def drop_citations(text: str) -> str:
    """The text without its citation links or markers (for surfaces that show no links)."""
    return _SPACED_CITE.sub("", _SPACED_LINKED.sub("", text))


__all__ = [
    "CITE",
    "CitedRequest",
    "Source",
    "check_sentence",
    "check_sentences",
    "citations_in",
    "connective",
    "drop_citations",
    "link_citations",
    "sentences",
    "strip_citations",
]
