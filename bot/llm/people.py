"""The people check: a reply may credit an action, a report or a statement only to a person the
text it was given credits with it. Grounding (`bot.llm.grounding`) checks numbers, links, refs and
ids; a name has no digit, so "jun-h relaunched the job" passed when mei-lin did it.

The model's input is read as units (`units_in`): each fenced source (`<untrusted_data …>`) is a
unit whose `author` attribute is its person; text outside fences is a unit without one. The
people the model may name (`Given.people`) are the units' authors and every person of the run
whose name appears in the input (in a GitHub body, a thread title, "thanks @dana").

A reply is refused (`check_people`) when:

1. it names a **known person of the run** (an author the store holds for it, or of another
   source in the same request) who is absent from what the model was given;
2. a **name-shaped word in claim position** ("alice drained …", "reported by @bob", "Carol's
   fix") is neither a given person nor any word of the request;
3. a **given person is credited with a claim the input does not credit them with**. A claim is
   a name as the subject of a verb ("X drained k17n3", "X and Y relaunched", "Bob from infra
   drained"), as the owner of a noun ("X's fix in #415", "X's cooldown proposal"), or as the
   agent after "by" ("relaunched by X", "the fix in #415 by X", "the relaunch was done by X");
   "As X reported in #412, <what>" claims the whole sentence. Its verb may have a family
   (`FAMILIES`: restart, drain, fix, approve, merge, propose; reporting verbs such as
   "reported", "said", "found", "traced" have none: what a person found is what they wrote),
   and its object words (refs, ids, numbers, content words, crudely stemmed) are weighed by
   1 / the number of units carrying each ("k17n3" in two units says more than "host" in nine).
   A unit authored by X, or naming X, must carry the family, not negated ("Not approved yet"
   backs no "approved"), and at least `SHARE_OF_BEST` of the object words' weight that the best
   unit carries (a unit's references are its own `ref` only: a comment that mentions #412 is
   not one in #412). "tomas-r relaunched from 61,000" fails when only mei-lin's comment says
   "Relaunched"; "Sam O's evals of the 60k checkpoint" fails when ines's message carries the
   evals; "the hang, reported by mei-lin" fails when tomas-r's report carries the hang.

Names are matched case-insensitively, with or without `@`, with a possessive `'s`, and a name's
parts joined by a space, hyphen, underscore or dot alike (the display name "Mei Lin" is the login
"mei-lin"); a run's hundreds of authors are
looked up by their first word among the text's words (`mentioned`) before any pattern runs. A
person whose name is an ordinary word ("will") counts only where a person stands: in a claim,
after `@`, or capitalised mid-text; "will resume" is a modal, not a claim. Never people:
sentence-initial and common words (only name-shaped words in claim position are read, and of
those only words written like a name: with `@`, as a login, capitalised inside a sentence, or not
in a common word's shape, so "problems found", "earlier runs", "variant cut" are words), words
ending in "-ing", months and days, product and model names (`NOT_PEOPLE`: GitHub, W&B, NCCL,
InfiniBand, Claude …), and any word the request itself uses (run names, refs, the prompt's
words).

Known gaps: pronouns ("her fix") are not resolved; a claim whose object words are all generic
passes on the verb; a wrong person credited with a statement only in a sentence that names
nobody else's content (the claim has no object words) passes on being a person of the input."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from bot.llm.safety import FENCE_TAG
from bot.store import Store

_FENCE = re.compile(rf"<{FENCE_TAG}\b(?P<attrs>[^>]*)>(?P<body>.*?)</{FENCE_TAG}>", re.DOTALL)
_ATTR = re.compile(r'(\w+)="([^"]*)"')
_WORDS = re.compile(r"[a-z0-9][a-z0-9'’\-]*")
_KEY = re.compile(r"#[\w\-]+|[a-z0-9][a-z0-9.,\-]*[a-z0-9]|[a-z0-9]")

# Verb families: a claim with one of these verbs must be backed by a unit carrying the family.
FAMILIES: dict[str, tuple[str, ...]] = {
    "restart": (
        "relaunch",
        "restart",
        "resum",
        "requeu",
        "restor",
        "rerun",
        "reran",
        "rolled back",
        "roll back",
        "rolls back",
        "brought back",
        "brought it back",
        "recover",
    ),
    "drain": ("drain", "cordon", "swap", "replac", "pull", "remov", "evict"),
    "fix": ("fix", "patch", "repair", "resolv", "pr ", "pull request", "pull/"),
    "approve": ("approv", "signed off", "sign off", "signs off", "greenlit", "accept"),
    "merge": ("merg",),
    "propose": ("propos", "suggest", "plan", "recommend", "should", "want"),
}
# verb forms (as written) → family; None is a reporting verb (any unit of the person backs it)
_VERBS: dict[str, str | None] = {}


def _split(words: str) -> list[str]:
    return words.split()


for _family, _forms in {
    "restart": "relaunched relaunches relaunch restarted restarts restart resumed resumes resume "
    "requeued requeues requeue restored restores restore reran reruns rerun recovered recovers",
    "drain": "drained drains drain cordoned cordons swapped swaps replaced replaces evicted "
    "removed pulled",
    "fix": "fixed fixes fix patched patches repaired repairs resolved resolves",
    "approve": "approved approves approve accepted accepts greenlit",
    "merge": "merged merges merge",
    "propose": "proposed proposes propose suggested suggests suggest recommended recommends "
    "planned plans",
}.items():
    for _form in _split(_forms):
        _VERBS[_form] = _family
for _form in _split(
    "reported reports said says wrote writes posted posts noted notes flagged flags raised "
    "raises opened opens filed files asked asks mentioned mentions found finds spotted spots "
    "noticed notices identified identifies confirmed confirms shared shares announced announces "
    "explained explains warned warns measured measures tested tests benchmarked benchmarks "
    "compared compares ran runs started starts added adds thanked thanks replied replies "
    "answered answers pointed points argued argues agreed agrees showed shows checked checks "
    "looked investigated investigates logged logs diagnosed diagnoses traced traces pinpointed "
    "bisected lowered lowers increased increases decreased decreases changed changes tuned tunes "
    "bumped bumps cut cuts wired built builds wrote"
):
    _VERBS[_form] = None
_NOUNS: dict[str, str | None] = {
    "fix": "fix",
    "patch": "fix",
    "pr": "fix",
    "pull": "fix",
    "proposal": "propose",
    "plan": "propose",
    "suggestion": "propose",
    "idea": "propose",
    "approval": "approve",
    "diagnosis": None,
    "relaunch": "restart",
    "restart": "restart",
    "report": None,
    "comment": None,
    "message": None,
    "question": None,
    "ladder": None,
    "ablation": None,
    "sweep": None,
    "evals": None,
    "eval": None,
    "results": None,
    "result": None,
    "note": None,
    "post": None,
    "issue": None,
    "thread": None,
    "analysis": None,
    "benchmark": None,
    "finding": None,
    "numbers": None,
    "measurement": None,
    "test": None,
    "point": None,
    "warning": None,
}
_ADVERB = (
    r"(?:(?:also|then|later|first|quickly|already|has|had|have|just|finally|eventually|"
    r"immediately|soon|promptly|since|initially|originally|manually|again)\s+)"
)
# "X (and Y) (also) VERB", "X's NOUN", "VERB by X"
_AFTER = re.compile(
    rf"^(?P<poss>['’]s)?\s*(?:,\s*)?(?:and\s+@?[\w\-]+\s+)?(?:(?:from|of|on)\s+(?:the\s+)?[\w\-]+\s+)?"
    rf"{_ADVERB}{{0,2}}(?P<w>[a-z]+)\b",
    re.IGNORECASE,
)
_BY = re.compile(r"(?P<w>[\w#]+)\s+by\s+$", re.IGNORECASE)
_AS_BEFORE = re.compile(r"(?:^|[.;:!?,(]\s*|\n)as\s+$", re.IGNORECASE)
_ARTICLE_BEFORE = re.compile(
    r"(?:\b(?:the|a|an|its|their|his|her|our|this|that|each|every|no|any|some)\s+|[\w\-]['’]s\s+"
    r"|[\w&]&)$",
    re.IGNORECASE,
)
_CLAUSE_END = re.compile(
    r"\.(?!\d)|[;:!?\n]|,\s|\s\[\d|\s(?:and|but|while|whereas|after|so|which)\s"
)

CLAUSE_WORDS = 10
MIN_KEY = 4  # letters of a content word that counts as a claim's object
# A claim's object words (refs, ids, numbers, content words, each weighed by 1 / the number of
# units carrying it) must be carried by a unit of the credited person at least this share as
# well as by the unit that carries them best.
SHARE_OF_BEST = 0.6

# Words that are never people, whatever position they stand in.
NOT_PEOPLE = frozenset(
    _split(
        "github discord w&b wandb weights biases claude anthropic openai nccl infiniband ib "
        "nvidia cuda pytorch torch jax slurm kubernetes k8s slack google gcs gcp aws azure "
        "runscribe alertmanager prometheus grafana linux docker megatron deepspeed fsdp yarn "
        "rope mmlu hellaswag wsd adamw muon monday tuesday wednesday thursday friday saturday "
        "sunday january february march april may june july august september october november "
        "december jan feb mar apr jun jul aug sep sept oct nov dec today yesterday tomorrow "
        "tonight someone somebody nobody everyone everybody anyone anybody team teams ops "
        "oncall on-call infra sre admin admins automation scheduler cluster launcher watchdog "
        "monitor system bot job jobs run runs training model it he she they we you i who which "
        "that this these those one each both all none nothing everything it's there here "
        "people person engineer engineers owner owners maintainer maintainers reviewer reviewers "
        "author authors user users host node gpu gpus rank ranks loss pipeline trainer "
        "upstream vendor vendors support provider cloud datacenter kernel driver drivers "
        "firmware hardware software script scripts tooling autoscaler orchestrator controller "
        "operator daemon service healthcheck neither either nobody's someone's"
    )
)
_STOP = frozenset(
    _split(
        "the a an and or but of to in on at by for with from into over under about after before "
        "since until while that this these those it its is was were be been being has have had "
        "not no yet still also then than so as if when where which who what how why there here "
        "their them they he she his her our we you your i me my all any some each every both one "
        "two three four five six seven eight nine ten more most less least very just only again "
        "out up down off back now once same other another such per via without within between "
        "during through across around near instead whether because though although would could "
        "should will shall may might must can did does done do make made get got set put take "
        "took give gave keep kept"
    )
)


@dataclass(frozen=True, slots=True)
class Unit:
    """One piece of the model's input: a fenced source and its person, or the text around."""

    author: str | None
    text: str


@dataclass(slots=True)
class Given:
    """What the model was given, read for people."""

    units: list[Unit]
    people: set[str]  # lowercased names the model may name
    known: set[str]  # lowercased names of every person of the run
    vocabulary: set[str] = field(default_factory=set)  # every word of the request
    _unit_keys: dict[int, frozenset[str]] = field(default_factory=dict)
    _weights: dict[str, float] | None = None

    def keys_of(self, unit: Unit) -> frozenset[str]:
        """A unit's words, read once."""
        found = self._unit_keys.get(id(unit))
        if found is None:
            found = self._unit_keys[id(unit)] = _keys(unit.text, claim=False)
        return found

    def weight(self, key: str) -> float:
        """1 / the number of units that carry the word: "k17n3" in two sources says more about
        who is meant than "host" in nine."""
        if self._weights is None:
            counts: dict[str, int] = {}
            for unit in self.units:
                for word in self.keys_of(unit):
                    counts[word] = counts.get(word, 0) + 1
            self._weights = {word: 1 / n for word, n in counts.items()}
        return self._weights.get(key, 0.0)

    def units_of(self, person: str) -> list[Unit]:
        name = _name_pattern(person)
        return [
            u
            for u in self.units
            if (u.author and u.author.lower() == person) or name.search(u.text)
        ]


def units_in(*texts: str) -> list[Unit]:
    """Every fenced source of the texts as a unit with its author; the rest as authorless."""
    units: list[Unit] = []
    for text in texts:
        rest = text
        for match in _FENCE.finditer(text):
            attrs = dict(_ATTR.findall(match.group("attrs")))
            author = attrs.get("author") or None
            units.append(Unit(author, f"{match.group('attrs')}\n{match.group('body')}"))
            rest = rest.replace(match.group(0), " ")
        if rest.strip():
            units.append(Unit(None, rest))
    return units


def _name_pattern(name: str) -> re.Pattern[str]:
    """A name as people write it: any case, with or without `@`, a possessive `'s`, and its
    parts joined by a space, a hyphen, an underscore or a dot alike ("Mei Lin" is the display
    name of the login "mei-lin", "sam_o" the login of "Sam O")."""
    parts = [p for p in re.split(r"[\s\-_.]+", name.strip()) if p]
    joined = r"[\s\-_.]?".join(re.escape(p) for p in parts) if len(parts) > 1 else re.escape(name)
    return re.compile(rf"(?<![\w@\-])@?{joined}(?![\w\-]|['’](?!s\b))", re.IGNORECASE)


_TOKEN = re.compile(r"[\w\-]+")


def mentioned(names: Iterable[str], text: str) -> set[str]:
    """The (lowercased) names that appear in `text`: a set look-up of each name's first word
    among the text's words, then the name's pattern only for those (a run has hundreds of
    authors; the text names a few)."""
    words = {w for w in re.split(r"[^a-z0-9]+", text.lower()) if w}
    found = set()
    for name in names:
        parts = [w for w in re.split(r"[^a-z0-9]+", name.lower()) if w]
        if parts and parts[0] in words and _name_pattern(name).search(text):
            found.add(name)
    return found


def _plain_word(name: str) -> bool:
    """A name that is also an ordinary word ("will", "sam"): read only where a person stands."""
    return bool(re.fullmatch(r"[a-z]+", name))


def given(texts: Iterable[str], known: Iterable[str] = (), *, request: str = "") -> Given:
    """Read the model's input (`texts`) for people; `known` are the run's people; `request` is
    the whole request (system and user), whose words are never taken for unknown people."""
    texts = list(texts)
    units = units_in(*texts)
    known_names = {k.strip().lower() for k in known if k and k.strip()}
    people = {u.author.lower() for u in units if u.author}
    joined = "\n".join(texts)
    people |= mentioned(known_names, joined)
    people |= {h.lower() for h in re.findall(r"(?<![\w@])@([A-Za-z0-9][\w\-]*)", joined)}
    vocabulary = set(_WORDS.findall((joined + "\n" + request).lower()))
    return Given(units=units, people=people, known=known_names | people, vocabulary=vocabulary)


@dataclass(frozen=True, slots=True)
class _Claim:
    family: str | None
    keys: frozenset[str]


_IRREGULAR = {"hung": "hang", "ran": "run", "found": "find", "lost": "lose", "went": "go"}


def _stem(word: str) -> str:
    """A crude stem, the same on both sides: "hung" and "hang", "uploads" and "upload"."""
    word = _IRREGULAR.get(word, word)
    for suffix in ("ing", "ed", "es", "s"):
        if len(word) > len(suffix) + 3 and word.endswith(suffix) and not word[-2:].isdigit():
            return word[: -len(suffix)]
    return word


def _keys(text: str, *, claim: bool = True) -> frozenset[str]:
    """The object words of a claim (its verbs and nouns left out), or of a unit (`claim=False`:
    its references only from its own `ref` attribute, so a comment that mentions #412 is not
    taken for one in #412)."""
    keys: set[str] = set()
    if not claim:
        keys.update(r.lower() for r in re.findall(r'\bref="(#[^"]+)"', text))
        text = re.sub(r"#[\w\-]+", " ", text)
    for token in _KEY.findall(text.lower()):
        token = token.strip(".,-")
        if not token or token in _STOP or (claim and (token in _VERBS or token in _NOUNS)):
            continue
        if token.startswith("#") or any(ch.isdigit() for ch in token) or len(token) >= MIN_KEY:
            keys.add(_stem(token.replace(",", "")))
    return frozenset(keys)


def _clause(text: str) -> str:
    end = _CLAUSE_END.search(text)
    words = (text[: end.start()] if end else text).split()
    return " ".join(words[:CLAUSE_WORDS])


def _claims(reply: str, start: int, end: int) -> list[_Claim]:
    """The claims the name at reply[start:end] makes where it stands as a person acting: as the
    subject of a verb or owner of a noun that follows, and as the agent of a passive ("by X")."""
    return [c for c in (_subject_claim(reply, start, end), _agent_claim(reply, start, end)) if c]


def _subject_claim(reply: str, start: int, end: int) -> _Claim | None:
    after = _AFTER.match(reply[end : end + 80])
    if after is not None:
        word = after.group("w").lower()
        if after.group("poss"):
            if word in _NOUNS or word in FAMILIES:
                rest = reply[end + after.end() :]
                return _Claim(_NOUNS.get(word, word), _keys(_clause(rest)) | {_stem(word)})
            # "X's cooldown proposal": one adjective before the noun
            nxt = re.match(r"\s+([a-z]+)", reply[end + after.end() : end + after.end() + 30])
            if nxt and nxt.group(1).lower() in _NOUNS:
                rest = reply[end + after.end() + nxt.end() :]
                noun = nxt.group(1).lower()
                return _Claim(_NOUNS[noun], _keys(word + " " + _clause(rest)) | {_stem(noun)})
        elif word in _VERBS and not (
            _plain_word(reply[start:end]) and reply[start:end].islower() and _base_form(word)
        ):
            rest = reply[end + after.end() :]
            if _AS_BEFORE.search(reply[:start]) and _VERBS[word] is None:
                # "As X reported in #412, host k17n3 hit Xid 79": what follows is the report
                return _Claim(None, _keys(re.split(r"[.;!?\n]", rest)[0]))
            return _Claim(_VERBS[word], _keys(_clause(rest)))
    return None


def _agent_claim(reply: str, start: int, end: int) -> _Claim | None:
    by = _BY.search(reply[max(0, start - 40) : start])
    if by is None:
        return None
    verb = by.group("w").lower()
    sentence = re.split(r"[.;:!?\n]", reply[:start])[-1]
    before = sentence[: len(sentence) - len(by.group(0))]
    words = before.split()[-CLAUSE_WORDS:]
    text = " ".join(words) + " " + _clause(reply[end:])
    if verb in _VERBS:
        return _Claim(_VERBS[verb], _keys(text))
    # "the relaunch was done by X", "the fix in #415 by X": the noun says what was done
    nouns = [w.lower().strip(",") for w in words if w.lower().strip(",") in _NOUNS]
    if verb in _DONE or nouns:
        families = [_NOUNS[n] for n in nouns if _NOUNS[n]]
        return _Claim(families[0] if families else None, _keys(text) | {_stem(n) for n in nouns})
    return None


_NEGATED = re.compile(r"(?:\b(?:not|no|never|without|nor)|n't|\bun)\s*(?:\w+\s+)?$")
_DONE = frozenset(_split("done made performed handled led owned carried"))
_PAST = frozenset(_split("said wrote found ran reran cut built greenlit set"))


def _base_form(verb: str) -> bool:
    """ "resume", "fix": what follows a modal ("will resume"), not a claim of a past act."""
    return not (verb.endswith(("ed", "s")) or verb in _PAST)


def _backed(claim: _Claim, person: str, facts: Given) -> bool:
    mine = facts.units_of(person)
    if not mine:
        return False
    family = FAMILIES.get(claim.family or "", ())

    def carries(unit: Unit) -> bool:
        if not family:
            return True
        lowered = unit.text.lower()
        for stem in family:
            for found in re.finditer(re.escape(stem), lowered):
                if not _NEGATED.search(lowered[max(0, found.start() - 24) : found.start()]):
                    return True
        return False

    def shares(unit: Unit) -> float:
        return sum(facts.weight(word) for word in claim.keys & facts.keys_of(unit))

    # the object words: the person's best unit must carry about as much of them as anyone's,
    # each word weighed by how few units carry it
    best = max((shares(u) for u in facts.units if u.author), default=0.0)
    need = best * SHARE_OF_BEST - 1e-9
    return any(carries(u) and shares(u) >= need and (best == 0 or shares(u) > 0) for u in mine)


_NAME_SHAPED = re.compile(r"(?<![\w@\-&.#/])@?[A-Za-z][A-Za-z]+(?:[\-_][A-Za-z0-9]+)*(?![\w\-&])")


# Endings of common English words (plurals, comparatives, participles, abstract nouns): such a
# word before a verb is a noun doing something ("problems found"), not an unknown person.
_COMMON_SHAPE = re.compile(
    r"(?:[^s]s|ies|er|ed|ly|ing|ion|ment|ness|ity|ant|ent|al|ive|ure|ics|ous|ful|able|ible"
    r"|ism|ist|age|ance|ence|ship|hood|ward|wise)$"
)


def _written_as_name(reply: str, start: int, written: str) -> bool:
    """An unknown word in claim position is read as a person only when written like a name:
    with `@`, as a login (a hyphen, an underscore or a digit), capitalised inside a sentence,
    or in a shape common words do not have."""
    if written.startswith("@") or re.search(r"[\-_0-9]", written):
        return True
    opens = not reply[:start].strip() or bool(re.search(r"[.!?:;\n]\s*$", reply[:start]))
    if written[:1].isupper() and not opens:
        return True
    return not _COMMON_SHAPE.search(written.lower())


def _name_parts(name: str) -> list[str]:
    """A name's words, a login's CamelCase and separators split: "ClassicLarry" → classic,
    larry; "Kaiyue-Wen" → kaiyue, wen."""
    spaced = re.sub(r"(?<=[a-z])(?=[A-Z])", " ", name)
    return [p for p in re.split(r"[^a-z0-9]+", spaced.lower()) if p]


ALIAS_PART = 4  # letters a name must have to stand for a longer name it is part of


def alias(person: str, people: Iterable[str]) -> str | None:
    """The given person `person` is another name of: the same letters ("Percy Liang" and
    "percyliang"), or a word of theirs ("Larry", the Discord name of "ClassicLarry")."""
    compact = "".join(_name_parts(person))
    for other in people:
        parts = _name_parts(other)
        if compact == "".join(parts):
            return other
        if len(compact) >= ALIAS_PART and (
            compact in parts or "".join(parts) in _name_parts(person)
        ):
            return other
    return None


def check_people(reply: str, facts: Given) -> list[str]:
    """The problems with the people the reply names or credits (empty: none)."""
    problems: list[str] = []

    def problem(message: str) -> None:
        if message not in problems:
            problems.append(message)

    spans: list[tuple[int, int, str]] = []
    for person in sorted(mentioned(facts.known, reply), key=len, reverse=True):
        for match in _name_pattern(person).finditer(reply):
            if any(s <= match.start() < e for s, e, _ in spans):
                continue
            spans.append((match.start(), match.end(), person))
    for start, end, person in spans:
        if person in NOT_PEOPLE:
            continue
        claims = _claims(reply, start, end)
        written = reply[start:end]
        opens = not reply[:start].strip() or bool(re.search(r"[.!?;\n]\s*$", reply[:start]))
        ordinary = _ARTICLE_BEFORE.search(reply[:start]) or not (written[:1].isupper() or opens)
        if _plain_word(person) and not claims and not written.startswith("@") and ordinary:
            continue  # "will", "sam" as ordinary words
        if person not in facts.people:  # another name of a given person ("Larry" of ClassicLarry)
            names = {u.author for u in facts.units if u.author} | facts.people
            person = (alias(person, names) or person).lower()
        if person not in facts.people:
            problem(
                f"{written} is not in what you were given: name only the people of the facts "
                "and sources, and credit each with what they wrote or did"
            )
            continue
        if any(not _backed(claim, person, facts) for claim in claims):
            problem(
                f"what the reply credits to {written} is not what the facts credit them with: "
                "say who did what exactly as the sources do"
            )
    for match in _NAME_SHAPED.finditer(reply):
        if any(s <= match.start() < e for s, e, _ in spans):
            continue
        word = match.group(0).lstrip("@").lower()
        if word in NOT_PEOPLE or word in _STOP or word in facts.vocabulary:
            continue
        if word.endswith("ly") or word in _VERBS or word in _NOUNS:
            continue
        if not _written_as_name(reply, match.start(), match.group(0)):
            continue  # "problems found", "earlier runs", "variant cut": common words
        if _ARTICLE_BEFORE.search(reply[: match.start()]):
            continue
        if word.endswith("ing") or not _claims(reply, match.start(), match.end()):
            continue
        problem(
            f"{match.group(0)} is not in what you were given: name only the people of the facts "
            "and sources, and credit each with what they wrote or did"
        )
    return problems


def people_verbs() -> dict[str, str | None]:
    """The verb forms a claim about a person is read by, each with its family (None: a reporting
    verb such as "found" or "noted")."""
    return dict(_VERBS)


KNOWN_LIMIT = 500  # authors read per run


async def known_people(store: Store, run_slug: str) -> list[str]:
    """Every author the store holds for the run (at most `KNOWN_LIMIT`, the most recent first),
    kept in the store's memo under the run's search version: read again only when its text
    changed."""
    version = await store.search.version(run_slug)
    key = ("run_people", run_slug)
    cached = store.memo.get(key)
    if cached is not None and cached[0] == version:
        return list(cached[1])
    authors = await store.events.authors(run_slug, KNOWN_LIMIT)
    store.memo[key] = (version, tuple(authors))
    return authors


__all__ = [
    "FAMILIES",
    "NOT_PEOPLE",
    "Given",
    "Unit",
    "check_people",
    "given",
    "known_people",
    "people_verbs",
    "units_in",
]
