"""Promotional spam in public threads: "Check out our GPU cloud, 50% off, DM me on Telegram".

Only people without a standing in the repository post it, so the rule needs both: an author whose
GitHub ``author_association`` is not OWNER, MEMBER, COLLABORATOR or CONTRIBUTOR (a contributor
has had a change merged), and text that reads like an advertisement. A stranger's real report
("your loader crashes on empty shards") has no promotional cues and stays; a member is never
filtered, whatever they write. Where the source cannot say (Discord), more cues are needed.
"""

from __future__ import annotations

import re
from typing import Final

from bot.enrich.context import ThreadContext
from bot.enrich.lowered import Words

#: Promotional phrases; each distinct match is one cue.
_PROMO = re.compile(
    r"""\b(?:
        check\s+out\s+(?:our|my|this)|visit\s+(?:our|my)|(?:our|my)\s+(?:platform|product|startup
          |service|tool|app|website|site|course|company|agency|team\s+offers)
      | sign\s+up|free\s+(?:\d+\s*(?:-?\s*days?|h|hrs?|hours?)[- ]?\s*)?trial
      | (?:\d{1,2}\s?%|percent)\s+off|discount
      | promo(?:tion)?\s*code|coupon
      | use\s+(?:the\s+)?code|\d+x\s+cheaper|free\s+\d[\d,.]*k?\s+(?:minutes|credits)
      | save\s+\d{1,2}\s?%\s+on\s+(?:your\s+)?(?:gpu|compute|cloud)\s+(?:spend|costs?|bills?)
      | limited[- ]time|act\s+now|don't\s+miss|best\s+prices?|cheap(?:est)?|affordable
      | lowest\s+prices?|free\s+shipping
      | click\s+(?:here|the\s+link)|link\s+in\s+(?:my\s+)?(?:bio|profile)|dm\s+(?:me|us|for)
      | contact\s+me
      | hire\s+(?:me|us)
      | whats\s?app|telegram|wechat|airdrop|crypto(?:currency)?|token\s+sale|nfts?|giveaway|casino
      | free\s+mint|mint(?:ing)?\s+(?:now|live|is\s+live)|connect\s+(?:your\s+)?wallet|wallets?
      | earn\s+(?:money|\$)|make\s+money|passive\s+income|guaranteed|seo\s+services?|backlinks?
      | boost\s+your|grow\s+your|we\s+offer|we\s+provide|i\s+offer|special\s+offer|buy\s+now
      | (?:rent|cheap|on-?demand)\s+(?:gpus?|h100s?|a100s?)\s+(?:at|from|for)
      | enrol(?:l|ment)?\s+(?:now|today)|register\s+(?:now|today)|early[- ]bird|bootcamp
      | (?:this|today)\s+(?:week(?:end)?|month)?\s*only|only\s+today
      | (?:please\s+)?star\s+(?:the|my|our)\s+repo
      | share\s+(?:it\s+)?with\s+your|would\s+mean\s+a\s+lot|buy\s+(?:followers|likes|stars)
      | followers|top\s+\d+\s+(?:ai\s+)?tools|(?:discord\s+)?nitro|free\s+(?:\w+\s+){0,2}credits
      | limited\s+offer|book\s+a\s+(?:free\s+)?(?:call|demo|meeting)|no\s+minimum|flexible\s+terms
      | \d+\s+(?:months?|weeks?)\s+free|zero\s+code\s+changes?|no\s+(?:credit\s+)?card(?:\s+needed)?
      | free\s+(?:[\w-]+\s+){0,2}(?:hours|hrs|chip-hours|gpu-hours?)|no\s+(?:waitlist|catch)
      | \d{1,2}\s?%\s+(?:below|under|cheaper\s+than)\s+(?:\w+\s+)?(?:pricing|prices?|market|list)
      | \d{1,2}\s?%\s+cheaper\s+than\s+(?:the\s+)?(?:hyperscalers|aws|gcp|azure|big\s+clouds?)
      | thesis\s+editing|paper\s+writing|plagiarism[- ]free|fast\s+delivery
      | gpu\s+credits
      | claim\s+(?:now|before|in\s+\d+\s*h|at|here|your|yours|free|\d[\d,.]*)|presale|usdt
      | trading\s+(?:signals|bots?)|\d{2}\s?%\s+win\s+rate|vip\s+group
      | signals?\s+(?:bots?|groups?)|making\s+\d{2,4}\s?%|private\s+(?:channel|group)\s+before
      | before\s+(?:the\s+)?slots\s+close
      | made\s+\$?\d[\d,.]*k?\s*\$?\s+in\s+(?:one|a|\d+)\s+(?:days?|weeks?|months?)
      | (?:spots?|slots?|seats?)\s+(?:are\s+)?limited|limited\s+(?:spots?|slots?|seats?)
      | only\s+\d+\s*h(?:ours?)?\s+left|first\s+\d+\s+(?:wallets|members|users|signups|people)
      | free\s+consultation|complimentary|real\s+(?:github\s+)?stars
      | (?:invite|referral|promo)\s+code
      | no\s+experience(?:\s+(?:needed|required))?|flexible\s+hours|work\s+from\s+home
      | no\s+contracts?|instant\s+(?:deploy|access|availability)|whitelist|earn\s+daily|stake\s+your
      | (?:hiring|looking\s+for)\s+remote
      | free\s+(?:audit|strategy\s+call)|done[- ]for[- ]you|\d+x\s+(?:your|their)\s+\w+
      | first\s+\d+\s+get
      | we\s+guarantee|\d+k?\s+github\s+stars|packages?\s+(?:from|starting\s+at)\s+\$
      | sells?\s+out|sold\s+out|(?:zero|no)\s+paperwork|unused\s+(?:cloud\s+)?credits
      | reply\s+['"]\w+['"]
      | \d+\s*%\s+apy|staking|dm\s+(?:now|(?:me\s+|us\s+)?for\s+(?:a|an|the|your)\s+free)
      | \d[\d,]*\s+(?:free\s+)?(?:h100|h200|a100|b200|gpu)\s+hours
      | claim\s+(?:in\s+the\s+next|within)\s+\d+\s*h(?:ours?)?|before\s+the\s+snapshot
      | join\s+now|rent(?:ing)?\s+(?:out\s+)?your\s+(?:idle\s+)?(?:gpus?|[ahb]\d{2,3}s?|tpus?)
      | mining\s+pool|\d+(?:\.\d+)?\s*(?:eth|btc|usdt)\s*/\s*(?:day|week|month)
      | gana(?:r)?\s+\$?\d[\d,.]*|sin\s+experiencia|cupos?\s+limitados?|grupo\s+vip
      | únete\s+(?:al|a)\s+(?:grupo|canal)|trading\s+de\s+ia
      | first\s+\d+\s+only|free\s+\w+\s+for\s+\d+\s+months?|first\s+come,?\s+first\s+served
      | (?:for\s+)?(?:just|only)\s+[$€£]\s?\d+
    )\b""",
    re.IGNORECASE | re.VERBOSE,
)
_PROMO_WORDS: Final = Words(_PROMO)
#: A link, spelled out or not: "https://", "www.", "bit.ly/…", "deals.xyz", "gift.gg/k2",
#: "site dot io".
_LINK: Final = re.compile(
    r"https?://|www\.|\b(?:bit\.ly|t\.me|tinyurl\.com)/"
    r"|\b[a-z0-9-]+\.(?:xyz|biz|top|click|shop|online|site|live|info)\b"
    r"|\b[a-z0-9-]+\.[a-z]{2,10}/\w"
    r"|\bdot\s+(?:com|io|biz|xyz|net|org|ai)\b|\b[a-z0-9-]+\s+\.\s*(?:com|io|biz|xyz|net|ai)\b"
    r"|\b[a-z0-9-]+\[\.\][a-z]{2,6}\b|\b[a-z0-9-]+\s*\(dot\)\s*[a-z]{2,6}\b",
    re.IGNORECASE,
)
#: A coin's ticker dropped ("$EDEL token") or a price by the hour ("$0.39/h", "0,89€/h"), and a
#: pitch's words in Korean, Chinese or Japanese (lowest price, discount, Telegram, WeChat, no
#: contract, free, airdrop, first come first served: scripts without spaces between words, so no
#: word boundaries): one cue each.
_MONEY: Final = (
    re.compile(r"\$[A-Z]{2,6}\s+(?:tokens?|coins?|presale|airdrop)\b"),
    re.compile(
        r"(?:[$€£]\s?\d+(?:[.,]\d+)?|\d+(?:[.,]\d+)?\s*[$€£])\s*/\s*(?:h|hr|hour|gpu-?h)\b", re.I
    ),
    re.compile(
        r"최저가|할인|텔레그램|약정\s*없|무료|에어드[랍롭]|선착순|最低价|优惠|电报|微信|格安|割引|最安"
    ),
)
#: The same emoji twice in a row, as advertisements shout: "🔥🔥", "🚀🚀".
_EMOJI_RUN: Final = re.compile(r"([\U0001F300-\U0001FAFF\u2600-\u27BF])\1")
#: Cues needed: two promotional phrases, or one and a link; three when the author's standing
#: is unknown (a Discord message: the channel is the team's, so more evidence is asked for).
MIN_CUES: Final = 2
MIN_CUES_UNKNOWN: Final = 3


def promo_cues(text: str) -> int:
    """Distinct promotional phrases in ``text`` (a link and a shouted emoji count as one more
    each, beside a phrase)."""
    head = text[:4000]
    found = {m.group(0).lower() for m in _PROMO_WORDS.finditer(head)}
    found.update(m.group(0) for pattern in _MONEY for m in pattern.finditer(head))
    if not found:
        return 0
    return len(found) + bool(_LINK.search(head)) + bool(_EMOJI_RUN.search(head))


def is_spam(text: str, context: ThreadContext) -> bool:
    """Promotional text from an author without a standing in the repository (or whose standing
    is unknown, on stronger evidence). Members and contributors are never filtered."""
    trusted = context.trusted
    if trusted:
        return False
    return promo_cues(text) >= (MIN_CUES if trusted is False else MIN_CUES_UNKNOWN)
