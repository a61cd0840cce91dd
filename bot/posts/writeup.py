"""An incident's write-up, worded like an operator's ops-log note: what happened and when (in
the run's zone), the cause in the reporters' words with links, who did what, how training came
back, what it cost, the follow-ups and every source. The facts are `bot.incidents.writeup`'s;
this module only words them, as Markdown (`writeup_markdown`: the CLI) and as one thread post
(`writeup_payload`: a card, so a long note still fits).

With a model key, the model's cited prose (`Prose`, checked against the facts it cites) takes
the place of the sections that tell the story (what happened, the cause, who acted, how
training came back); the cost, the follow-ups and the sources stay these lines, written from
the facts, so every figure and link is the code's. Each says once who wrote it."""

from __future__ import annotations

from typing import Any

from bot.core.limits import DESCRIPTION_LIMIT, TITLE_LIMIT
from bot.core.mentions import body, inert, plain, unlinked
from bot.core.numbers import fmt_big, fmt_int, fmt_value
from bot.core.timeutil import humanize_duration
from bot.incidents.writeup import Cost, Prose, Writeup
from bot.models import Event, IncidentAction, Restart
from bot.narrative.format import fmt_when
from bot.outbox.payload import make_payload
from bot.render.cards import Card, clip

QUOTE_LIMIT = 400  # characters of a person's own words quoted


def _quote(text: str) -> str:
    return "“" + body(clip(plain(text), QUOTE_LIMIT)) + "”"


def _linked(label: str, url: str | None) -> str:
    shown = inert(plain(label))
    return f"[{shown}]({url})" if url else shown


def title(w: Writeup) -> str:
    return clip(f"Write-up: incident #{w.id} — {plain(w.incident.title)}", TITLE_LIMIT)


def what_happened(w: Writeup) -> str:
    i = w.incident
    first = w.outages[0].title if len(w.outages) > 1 else i.title
    line = f"First symptom {fmt_when(i.started_at, w.zone)}: {unlinked(plain(first))}."
    if i.cause and w.restart is None and len(w.outages) < 2:  # a restart's own account follows
        line += f" {body(clip(plain(i.cause), QUOTE_LIMIT))}"
    for before, outage in zip(w.outages, w.outages[1:], strict=False):
        assert before.until is not None
        line += f" Resolved {fmt_when(before.until, w.zone)}; reopened"
        line += f" {humanize_duration(outage.since - before.until)} later,"
        line += f" {fmt_when(outage.since, w.zone)}: {unlinked(plain(outage.title))}."
    if i.resolved_at is not None:
        again = " again" if len(w.outages) > 1 else ""
        line += f" Resolved{again} {fmt_when(i.resolved_at, w.zone)}."
    return line


def cause(w: Writeup) -> str:
    said = w.cause
    if said is None:
        return "Nobody reported a cause in the watched channels or threads."
    who = inert(plain(said.author)) if said.author else "Someone"
    where = _linked(said.source, said.url)
    return f"{who} wrote in {where}, {fmt_when(said.at, w.zone)}: {_quote(said.text)}"


def _action(action: IncidentAction, zone: str) -> str:
    where = _linked(action.source, action.url)
    return (
        f"{inert(plain(action.who))}, {fmt_when(action.at, zone)} in {where}: {_quote(action.text)}"
    )


def who_acted(w: Writeup) -> str:
    lines = [_action(a, w.zone) for a in w.actions]
    if not lines:
        lines.append("Nobody reported acting on it: training came back without a person's hand.")
    i = w.incident
    for outage in i.details.outages:  # a reopened incident's earlier outages
        if outage.acked_by and outage.acked_at:
            who, when = inert(plain(outage.acked_by)), fmt_when(outage.acked_at, w.zone)
            lines.append(f"Acknowledged by {who}, {when}.")
    if i.acked_by and i.acked_at:
        lines.append(f"Acknowledged by {inert(plain(i.acked_by))}, {fmt_when(i.acked_at, w.zone)}.")
    return "\n".join(lines)


def came_back(w: Writeup) -> str:
    if len(w.outages) < 2:
        return _came_back(w.restart, w.incident.resolution, w.zone)
    return " ".join(
        f"Outage {n}: {_came_back(o.restart, None, w.zone)}"
        for n, o in enumerate(w.outages, start=1)
    )


def _came_back(r: Restart | None, resolution: str | None, zone: str) -> str:
    if r is None:
        text = resolution or "The condition cleared."
        return body(clip(plain(text), QUOTE_LIMIT))
    run = r.wandb_run.rsplit("/", 1)[-1]
    line = f"W&B run {inert(run)} logged again {fmt_when(r.resumed_at or r.at, zone)}"
    if r.checkpoint_step is not None:
        line += f", from the checkpoint at step {fmt_int(r.checkpoint_step)}"
    if r.to_step is not None and r.to_step != r.checkpoint_step:
        line += f" (first step logged {fmt_int(r.to_step)})"
    if r.from_step is not None:
        line += f"; the last step before the interruption was {fmt_int(r.from_step)}"
    if r.previous_run:
        line += f", in {inert(r.previous_run.rsplit('/', 1)[-1])}"
    return line + "."


def cost(c: Cost) -> str:
    parts = []
    if c.down is not None:
        parts.append(f"{humanize_duration(c.down)} down ({c.down_means})")
    if c.steps_recomputed is not None:
        again = f"{fmt_int(c.steps_recomputed)} steps"
        if c.tokens_recomputed is not None:
            again += f" ({fmt_big(c.tokens_recomputed)} tokens)"
        again += " recomputed"
        if c.recompute_time is not None:
            again += f", {humanize_duration(c.recompute_time)}"
            if c.pace.seconds_per_step is not None:
                again += f" at {fmt_value(c.pace.seconds_per_step)} s a step"
        parts.append(again)
    if c.gpu_hours is not None and c.lost is not None:
        parts.append(
            f"{fmt_int(c.gpu_hours)} GPU-hours ({fmt_int(c.gpus)} GPUs × "
            f"{humanize_duration(c.lost)} without new progress)"
        )
    return "; ".join(parts) + "." if parts else "No training time lost."


def _follow_up(event: Event) -> str:
    what = "PR" if event.kind == "pull" else "issue"
    name = event.ref or what
    text = f"{what} {_linked(name, event.url)}"
    if event.title:
        text += f" {_quote(event.title)}"
    if event.author:
        text += f" by {inert(plain(event.author))}"
    if event.state:
        text += f" ({inert(event.state)})"
    return text


def follow_ups(w: Writeup) -> str:
    if not w.follow_ups:
        return "None named."
    return "; ".join(_follow_up(e) for e in w.follow_ups) + "."


def sources(w: Writeup) -> str:
    if not w.sources:
        return "None linked."
    return " · ".join(_linked(s.label, s.url) for s in w.sources)


#: Who wrote the write-up, said once (as the status card says it for its summary).
BY_MODEL = "Written by AI from the recorded facts, each sentence checked against what it cites"
BY_RULES = "Written by rules from the recorded data, not by a model"


def by_model(prose: Prose | None) -> bool:
    return prose is not None and prose.by_model


def written_by(prose: Prose | None) -> str:
    return BY_MODEL if by_model(prose) else BY_RULES


def _story(w: Writeup, prose: Prose | None) -> list[str]:
    """The paragraphs that tell what happened: the model's, else the template's sections."""
    if prose is not None and by_model(prose):
        return [p.strip() for p in prose.text.split("\n\n") if p.strip()]
    return [
        f"**{name}.** {text}"
        for name, text in (
            ("What happened", what_happened(w)),
            ("Cause, as reported", cause(w)),
            ("Who acted", who_acted(w)),
            ("How training came back", came_back(w)),
        )
    ]


def paragraphs(w: Writeup, prose: Prose | None = None) -> list[str]:
    """The note's paragraphs: the story, then the computed cost, follow-ups and sources."""
    computed = [("Cost", cost(w.cost)), ("Follow-ups", follow_ups(w)), ("Sources", sources(w))]
    return _story(w, prose) + [f"**{name}.** {text}" for name, text in computed]


def writeup_markdown(w: Writeup, prose: Prose | None = None) -> str:
    """The whole note as Markdown (`runscribe incident ID`, the ops-log comment)."""
    parts = [f"## {inert(title(w))}", f"{inert(w.run_name)} · {written_by(prose)}."]
    parts += paragraphs(w, prose)
    return "\n\n".join(parts) + "\n"


def _within(paragraphs: list[str], limit: int) -> str:
    """Whole paragraphs, as many as fit (a link is never cut); the first is clipped if alone
    it is too long."""
    kept: list[str] = []
    for paragraph in paragraphs:
        if len("\n\n".join([*kept, paragraph])) > limit:
            break
        kept.append(paragraph)
    return "\n\n".join(kept) if kept else clip(paragraphs[0], limit)


def writeup_card(w: Writeup, prose: Prose | None = None) -> Card:
    return Card(
        title=title(w),
        description=_within(paragraphs(w, prose), DESCRIPTION_LIMIT),
        color="ok",
        footer=f"{w.run_name} · incident #{w.id} · {written_by(prose)}",
    )


def writeup_payload(
    w: Writeup,
    *,
    edit_of: int | None = None,
    archive_thread: bool = False,
    prose: Prose | None = None,
) -> dict[str, Any]:
    """The thread post (or the edit of it, when the write-up changed)."""
    card = writeup_card(w, prose)
    text = f"📝 Write-up of incident #{w.id}"
    if edit_of is not None:
        return make_payload(text, card, edit_of=edit_of)
    return make_payload(text, card, archive_thread=archive_thread)
