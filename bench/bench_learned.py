"""Grouped cross-validation of the learned live-report scorers beside the rules (issue 40).

    python bench/bench_learned.py [--corpus tests/data/signal_corpus.jsonl] [--limit N] [--before]

The development corpus is split into the projects (batches) it was written in, by id range
(`GROUPS`, from `tests/data/README.md`), and the groups dealt into `FOLDS` folds. Each fold is
left out in turn: the two scorers (`FAMILIES`: one for replies, comments and chat messages; one
for issue descriptions) are fitted (`scripts/train_signals.py`'s fit) on the others and score
the left-out groups, none of which they have seen a word of. Printed per group and pooled, for
every live report (incident event) and every 🚨 mark:

* rules: the rules alone. They were written seeing every group, so this figure is optimistic;
  the honest rules-alone readings are the "before" ones of each batch, taken before the rules
  were changed on it;
* model: the replies' scorer alone, out of sample: the live reports it finds above the
  threshold, and how many of the posts it finds are about an incident;
* rules+model: what the live path does, a report the rules missed added when a scorer is above
  its threshold, on a reply or an issue that no rule ruled out (never on a pull description or
  a review); where its prose holds words the rules judge incidents by and they judged it no
  report, only above the higher "over" threshold.

Both scorers' bars are chosen on the honest reading (`--before`): today's rules were written
seeing every post of the corpus, so in sample they leave a scorer too little to add to judge it
by. The replies' threshold (`choose_pooled`) is the lowest on a grid at which the 🚨 marks of
the rules-before with both scorers stay, pooled, at least `MARK_FLOOR` about incidents (issue
40's 0.80, with a margin for projects that read worse than the pool): a missed live report is a
lost alert, so the scorer adds all it can while the marks stay sure. Its "over" is the lowest
at or above it at which the reports it adds over the rules' judgement of words they heard are
themselves `OVER_FLOOR` about incidents (the rules had a reason there). The committed
threshold may sit higher: the lowest at or above the chosen one at which the chat lines a lead
reads as no report (`tests/enrich/test_incident_shapes.py`, written as the product's spec)
stay unmarked. The issue scorer's (`choose_before`) are the lowest at which the reports it
adds are themselves `PRECISION_FLOOR` about incidents: an issue's wrong 🚨 is a proposal or a
plan shown as an incident. In sample, the replies' threshold the old rule chose (the lowest at
which the pooled 🚨 precision and the scorer's own both reach `PRECISION_FLOOR`, and its
"over") is still printed, with its sweeps. The committed bars (`scripts/train_signals.py`'s
`THRESHOLD`, `OVER`, `ISSUE_THRESHOLD`, `ISSUE_OVER`) are said beside them. `--before` adds
the honest comparison: each batch read by the rules as they were before the batch was committed
(run from git), alone and with the scorers at the committed bars, gated by those old rules'
words and vetoes, and the bars chosen on it. Then
the cost per event of the enrichment, rules alone and with the committed scorers. `--limit`
keeps the first N entries of each group (a quick run).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bot.enrich.context import ThreadContext
from bot.enrich.incidents import signals_heard
from bot.enrich.learned import LiveModel, TagModel
from bot.enrich.markdown import parse_post
from bot.enrich.rules import TITLED_KINDS, enrich_event
from bot.enrich.spam import is_spam
from scripts.train_signals import (
    ISSUE_OVER,
    ISSUE_THRESHOLD,
    OVER,
    THRESHOLD,
    Example,
    eligible,
    example,
    fit,
    issue_eligible,
    issue_example,
    prune,
)
from tests.enrich.signal_corpus import CORPUS, KIND_NAMES, Verdict, load, recorded, to_event

#: The corpus's projects and batches by id range (tests/data/README.md and the corpus's history).
GROUPS: tuple[tuple[str, int, int], ...] = (
    ("hero+northwind", 1, 332),
    ("basalt", 333, 388),
    ("tern", 389, 432),
    ("pumice", 433, 467),
    ("flint", 468, 497),
    ("slate", 498, 526),
    ("gneiss", 527, 550),
    ("schist", 551, 570),
    ("marble", 571, 598),
    ("onyx", 599, 622),
    ("jasper", 623, 643),
    ("saltmarsh-nlp/heron", 644, 706),
    ("pinecrest/wisp", 707, 749),
    ("selkie", 750, 783),
    ("pelican", 784, 799),
    ("saltmarsh-ml heron+plover", 800, 856),
    ("loam/wisp", 857, 896),
    ("kelvin", 897, 929),
    ("marten", 930, 961),
    ("bison", 962, 992),
    ("hawk", 993, 999),
    ("ridgeline/condor", 1000, 1119),
    ("fjordline/auk", 1120, 1239),
    ("thornbury/gannet", 1240, 1359),
    ("larkspur/ibis", 1360, 1479),
    ("vantablack/osprey", 1480, 1599),
    ("moorhen/rail", 1600, 1719),
    ("alpenglow/edelweiss", 1720, 1839),
    ("saffron/kestrel-2", 1840, 1959),
    ("quayside/pipit", 1960, 2079),
    ("hollowbrook/wagtail", 2080, 2199),
    ("kittiwake/curlew", 2200, 2319),
    ("quillon/tern", 2320, 2439),
    ("marisol/garza", 2440, 2559),
    ("stratus/halcyon", 2560, 2679),
    ("fennel/sparrow", 2680, 2799),
    ("tidepool/yarrow", 2800, 2919),
    ("lotus-ridge/magpie", 2920, 3039),
    ("cobalt-reach/kestrel-rl", 3040, 3159),
    ("meridian/ptarmigan", 3160, 3279),
    ("openfield/bittern", 3280, 3399),
    ("saltgrass/osprey-x", 3760, 3879),
    ("windrow/gyrfalcon", 3880, 3999),
    ("beacon-hill/tanager", 4000, 4119),
    ("quarry-point/kiln", 4120, 4239),
    ("lowmoor/curlew", 4240, 4359),
    ("tidewater/shrike", 4360, 4479),
    ("copperline/wren", 4480, 4599),
    ("stonebridge/avocet", 4600, 4719),
    ("fieldnote/merlin", 4720, 4839),
    ("brightwater/plover", 4840, 4959),
    ("northgate/shearwater", 4960, 5079),
    ("hollin/dunlin", 5080, 5199),
    ("redfern/godwit", 5200, 5319),
    ("saltire/whimbrel", 5320, 5439),
    ("tarnbeck/knot", 5440, 5559),
    ("terse-ops/teal", 5560, 5679),
    ("hanbit-ai/lapwing", 5680, 5799),
    ("driftwood-ml/sanderling", 5800, 5919),
    ("quernstone/stint", 5920, 6039),
    ("highmoor-ai/ruff", 6040, 6159),
    ("fenwick-lm/garganey", 6160, 6279),
    ("larchmont-ai/smew", 6280, 6399),
    ("sablewood/pintail", 6400, 6519),
    ("brackenfold/kittlitz", 6520, 6639),
    ("wherry-labs/dotterel", 6640, 6759),
    ("ironmere/stilt", 6760, 6879),
    ("nightjar-ai/phalarope", 6880, 6999),
    ("corrie-ml/turnstone", 7000, 7119),
    ("quillfeather/rook", 7120, 7239),
    ("lanternfish/grebe", 7240, 7359),
    ("saltwick/eider", 7360, 7479),
    ("brantford/scaup", 7480, 7599),
    ("openbarrow/murre", 7960, 8079),
    ("tidecrest/auklet", 8080, 8199),
    ("northbay/fulmar", 8200, 8319),
    ("cairnfield/gannetx", 8320, 8439),
    ("ashgrove/skua", 8440, 8559),
    ("brightling/arctic-tern", 8560, 8679),
    ("fernbrook/brant", 8680, 8799),
    ("quietharbor/eiderx", 8800, 8919),
    ("stillwater-ai/loon", 8920, 9039),
    ("tallowmere/merganser", 9040, 9159),
    ("greywell/pochard", 9160, 9279),
    ("lakeshore-ml/wigeon", 9280, 9399),
    ("fernhill-ai/kestrel", 9400, 9519),
    ("oriole-labs/gannet", 9520, 9639),
    ("ridgeback-research/pintail", 10000, 10119),
    ("cobalt-arc/avocet", 10120, 10239),
    ("meadowlark-org/shoveler", 10240, 10359),
    ("saltgrass-ai/merganser", 10360, 10479),
    ("northstar-labs/scoter", 10480, 10599),
    ("halcyon-research/smew", 10600, 10719),
    ("brightwater-ml/eider", 10720, 10839),
    ("ashgrove-ai/garganey", 10840, 10959),
    ("kettle-labs/pochard", 10960, 11079),
    ("millrace-ai/tarn", 11080, 11199),
    ("quarry-research/gadwall", 11200, 11319),
    ("fieldfare-ml/shelduck", 11320, 11439),
    ("cormorant-ai/velvet", 11440, 11559),
    ("pinecrest-ai/shrike", 11800, 11919),
    ("halyard-research/lapwing", 11920, 12039),
    ("ironbark-ml/whimbrel", 12040, 12159),
    ("cobalt-systems/pipit", 12280, 12399),
    ("sedgewick-labs/garganey", 12400, 12519),
    ("orchid-labs/tern", 12520, 12639),
    ("drumlin-ai/avocet", 12640, 12759),
    ("saltmarsh-ml/phalarope", 12760, 12879),
    ("ridgeback-research/stint", 12880, 12999),
    ("copperline-ai/knot", 13000, 13119),
    ("beacon-works/skua", 13120, 13239),
    ("hollow-pine/curlew", 13240, 13359),
    ("ferrous-ml/godwit", 13360, 13479),
    ("lattice-ops/tattler", 13480, 13599),
    ("quiet-harbor/knot-b", 13600, 13719),
    ("twin-rivers/dunlin", 13720, 13839),
    ("glasswing-ai/pipit-b", 13840, 13959),
    ("meridian-lab/stilt", 13960, 14079),
    ("pallid-systems/wryneck", 14080, 14199),
    ("north-fen/ruff-b", 14200, 14319),
    ("thistledown-ai/bunting", 14320, 14439),
    ("coldharbour-ml/crake", 14560, 14679),
    ("saltings-ai/twite", 14680, 14799),
    ("pennant-research/siskin", 14800, 14919),
    ("hollowmere-lm/firecrest", 15160, 15279),
    ("larchgate-ml/nuthatch", 15280, 15399),
    ("sierra-alta/zorzal", 15400, 15519),
    ("prismhollow/jackdaw", 15520, 15639),
    ("stillmeadow-ai/goldcrest", 15640, 15759),
    ("keystone-lm/stonechat", 15760, 15879),
    ("wychwood-ai/pratincole", 15880, 15999),
    ("emberfell-compute/whinchat", 16000, 16119),
    ("tarnside-lm/dipper", 16120, 16239),
    ("corvidae-labs/cuckoo", 16240, 16359),
    ("quarrymoor-ai/bullfinch", 16360, 16479),
    ("saltcote-ai/brambling", 16480, 16599),
    ("hollowell-ml/serinx", 16600, 16719),
    ("kestrelmoor/fenwren", 16720, 16839),
    ("cirl-labs/yellowhammer", 16840, 16959),
    ("mossgate-ml/goosander", 17080, 17199),
    ("quillmere/redwing", 17320, 17439),
    ("harrowby-ai/chiffchaff", 17440, 17559),
    ("salterns-lab/ortolan", 17560, 17679),
    ("brackwater-ai/blackcap", 17800, 17919),
    ("thornwick-ai/stoat", 17920, 18039),
    ("wrenmoor-lab/weasel", 18040, 18159),
    ("hazelrig-ml/polecat", 18160, 18279),
    ("gullane-research/marten", 18280, 18399),
    ("fellside-ai/ptarmigan", 18400, 18519),
    ("tarnhow-labs/capercaillie", 18520, 18639),
    ("linthwaite-ai/dotterel", 18640, 18759),
    ("bittercress/teal", 18760, 18879),
    ("quernmoor-ai/ringtail", 18880, 18999),
    ("brackenby-lab/wheatear", 19000, 19119),
    ("elsdon-compute/ousel", 19120, 19239),
    ("yarrowby-ml/siskinby", 19240, 19359),
    ("kettlesing-ai/snipe", 19360, 19479),
    ("scarth-labs/rookhope", 19480, 19599),
    ("tallowmere-ai/osprey-535b", 19600, 19719),
    ("brackenfold/grebe-70b", 19720, 19839),
    ("corvane-ai/kestrel-vl-90b", 20080, 20199),
    ("ferncliff-ai/petrel-moe-1t", 20440, 20559),
    ("marram-research/shag-240b", 20680, 20799),
    ("glenrock-ai/dipper-400b", 20800, 20919),
    ("fallowfield-lab/hero-480b", 21040, 21159),
    ("shirakawa-ml/tsubame-130b", 21160, 21279),
    ("cinderpeak-ai/wren-v6e", 21280, 21399),
    ("mossgill-uni/ptero-13b", 21400, 21519),
    ("brindle-ai/curlew-200b", 21520, 21639),
    ("tamarisk-labs/oriole-post", 21640, 21759),
    ("quarrybank-ai/nuthatch-300b", 21760, 21879),
    ("lindqvist-ml/skua-220b", 21880, 21999),
    ("ostrava-lm/kite-175b", 22000, 22119),
    ("mistral-bay/gannet-moe-90b", 22120, 22239),
    ("cormorant-labs/sight-70b-video", 22240, 22359),
    ("heatherfold/plover-400b", 22360, 22479),
    ("natlab-ai/osprey-gov-250b", 22480, 22599),
    ("brightfin-ai/marlin-34b", 22600, 22719),
    ("ringfort-lm/longtail-1m", 22720, 22839),
    ("harbourline-ai/tern-gaudi-120b", 22840, 22959),
    ("pelagic-labs/shearwater-moe-400b", 22960, 23079),
    ("opencommons-ml/chorus-multilingual-176b", 23080, 23199),
    ("keelson-ai/gannet-180b", 23200, 23319),
    ("fjordline-ml/skua-moe-600b", 23320, 23439),
    ("tidewater-lab/curlew-32b", 23440, 23559),
    ("haiyan-lab/shoal-72b", 23560, 23679),
    ("solder-ai/wren-7b", 23920, 24039),
    ("hangang-lab/magpie-34b", 24040, 24159),
    ("meridian-ai/kestrel-moe-1t", 24160, 24279),
    ("openprairie/bison-13b-consortium", 24280, 24399),
    ("tallgrass-lab/bluestem-70b", 24400, 24519),
    ("larkhill-ai/fieldfare-200b", 24520, 24639),
    ("univ-of-brenmoor/kite-8b", 24640, 24759),
    ("northwold-ai/gannet-mid-100b", 25000, 25119),
    ("quillon-research/osprey-moe-340b", 25120, 25239),
    ("tessellate-labs/merlin-120b", 25240, 25359),
    ("verdant-ai/thrush-13b", 25360, 25479),
    ("hallow-institute/finch-70b-de", 25480, 25599),
    ("openmoor-lab/heron-moe-480b", 25840, 25959),
    ("fenland-supercomputing/bittern-34b", 26200, 26319),
    ("tarnhollow-ai/lapwing-70b-rl", 26320, 26439),
    ("prismfield-labs/finch-vl-40b", 26440, 26559),
    ("ashgrove-lab/kestrel-moe-535b", 26560, 26679),
    ("cobaltfen-research/teal-180b", 26800, 26919),
    ("glenbrook-ml/petrel-400b", 27040, 27159),
    ("harrowgate-labs/grebe-24b", 27160, 27279),
    ("kiritani-lab/tsubame-110b", 27280, 27399),
    ("brackwater-labs/shrike-180b-spot", 27640, 27759),
    ("cinderbrook-ml/wryneck-400b", 27760, 27879),
    ("larchmont-ai/kittiwake-300b", 27880, 27999),
    ("quillhaven-ai/grebe-moe-640b", 28000, 28119),
    ("emberlin-research/dunlin-45b", 28240, 28359),
    ("kestrelhof-ki/milan-120b", 28360, 28479),
    ("brindle-data/sanderling-200b", 28600, 28719),
    ("brightwater-ml/plover-70b", 28960, 29079),
    ("quarrystone-ai/linnet-150b", 29080, 29199),
    ("lanterne-ia/mesange-90b", 29200, 29319),
    ("saltire-labs/kestrel-480b", 29320, 29439),
    ("hanul-ai/gaemi-200b", 29440, 29559),
    ("arkwright-labs/nuthatch-60b", 29680, 29799),
    ("meadowlark-ai/finch-vl-110b", 29920, 30039),
    ("thornbury-labs/gannet-400b", 30040, 30159),
    ("altiplano-ia/suri-110b", 30160, 30279),
    ("brackenridge-ai/ouzel-rl", 30280, 30399),
    ("bramblecroft-ai/dunlin-45b", 30640, 30759),
    ("farrow-collective/godwit-100b", 30760, 30879),
    ("kaveri-labs/garuda-150b", 30880, 30999),
    ("halfmoon-ml/skylark-30b", 31240, 31359),
    ("cinder-ai/merlin-trn-65b", 31360, 31479),
    ("tidewrack-audio/heron-speech-8b", 31480, 31599),
)
#: The commit that added each batch, written and labelled before the rules ran on it: its
#: parent holds the rules as they were before they saw the batch (`--before`). The first 332
#: entries grew with the rules and have none.
BATCH_COMMITS: dict[str, str] = {
    "basalt": "d4386da",
    "tern": "e75bf6c",
    "pumice": "2272386",
    "flint": "cc4197f",
    "slate": "dab4d95",
    "gneiss": "af75097",
    "schist": "0e4363f",
    "marble": "eef07fb",
    "onyx": "2da582a",
    "jasper": "012f985",
    "saltmarsh-nlp/heron": "25475d6",
    "pinecrest/wisp": "d524a33",
    "selkie": "cf57de1",
    "pelican": "44b2073",
    "saltmarsh-ml heron+plover": "e517b7d",
    "loam/wisp": "06d488f",
    "kelvin": "a535462",
    "marten": "0d8c93e",
    "bison": "ecb0359",
    "hawk": "00f061b",
    "ridgeline/condor": "7596ef8",
    "fjordline/auk": "0db3a86",
    "thornbury/gannet": "a84a437",
    "larkspur/ibis": "365b35a",
    "vantablack/osprey": "3fcbd01",
    "moorhen/rail": "a0d94a6",
    "alpenglow/edelweiss": "9e7b5ad",
    "saffron/kestrel-2": "ef3001d",
    "quayside/pipit": "cf2826e",
    "hollowbrook/wagtail": "1a00d73",
    "kittiwake/curlew": "2f09d3e",
    "quillon/tern": "3a2e786",
    "marisol/garza": "8cf73f3",
    "stratus/halcyon": "396d39b",
    "fennel/sparrow": "30a677e",
    "tidepool/yarrow": "371a563",
    "lotus-ridge/magpie": "e1044f6",
    "cobalt-reach/kestrel-rl": "021a05b",
    "meridian/ptarmigan": "ba38995",
    "openfield/bittern": "7c0d9e6",
    "saltgrass/osprey-x": "aac8d8e",
    "windrow/gyrfalcon": "3f95fd8",
    "beacon-hill/tanager": "3b07ad8",
    "quarry-point/kiln": "9031fc6",
    "lowmoor/curlew": "50aeb66",
    "tidewater/shrike": "0aaa867",
    "copperline/wren": "a27a362",
    "stonebridge/avocet": "50cd47f",
    "fieldnote/merlin": "b862838",
    "brightwater/plover": "dcb4e75",
    "northgate/shearwater": "70a0042",
    "hollin/dunlin": "ebc6684",
    "redfern/godwit": "03f29b8",
    "saltire/whimbrel": "244e8cd",
    "tarnbeck/knot": "74da778",
    "terse-ops/teal": "49f0be7",
    "hanbit-ai/lapwing": "5d27234",
    "driftwood-ml/sanderling": "67e269f",
    "quernstone/stint": "ba4f705",
    "highmoor-ai/ruff": "044997c",
    "fenwick-lm/garganey": "d6e8780",
    "larchmont-ai/smew": "0c40a0e",
    "sablewood/pintail": "cd64bb9",
    "brackenfold/kittlitz": "127ca44",
    "wherry-labs/dotterel": "95d2783",
    "ironmere/stilt": "046e660",
    "nightjar-ai/phalarope": "1026928",
    "corrie-ml/turnstone": "fa92663",
    "quillfeather/rook": "d0a59c2",
    "lanternfish/grebe": "55e797a",
    "saltwick/eider": "4ca3c98",
    "brantford/scaup": "d18c342",
    "openbarrow/murre": "4002d5b",
    "tidecrest/auklet": "89fb0f8",
    "northbay/fulmar": "11a58ca",
    "cairnfield/gannetx": "02fccb0",
    "ashgrove/skua": "6e76610",
    "brightling/arctic-tern": "32e666f",
    "fernbrook/brant": "30c1402",
    "quietharbor/eiderx": "98b9bec",
    "stillwater-ai/loon": "df7ca21",
    "tallowmere/merganser": "efda538",
    "greywell/pochard": "aff23c0",
    "lakeshore-ml/wigeon": "02cff6d",
    "fernhill-ai/kestrel": "214580d",
    "oriole-labs/gannet": "02cfdc6",
    "ridgeback-research/pintail": "172041e",
    "cobalt-arc/avocet": "566a489",
    "meadowlark-org/shoveler": "4c25ab4",
    "saltgrass-ai/merganser": "1bfe9de",
    "northstar-labs/scoter": "9bf4ccf",
    "halcyon-research/smew": "9cb4d5c",
    "brightwater-ml/eider": "49a87d7",
    "ashgrove-ai/garganey": "20f9d47",
    "kettle-labs/pochard": "f16332c",
    "millrace-ai/tarn": "9a657c2",
    "quarry-research/gadwall": "d641335",
    "fieldfare-ml/shelduck": "fdb43b4",
    "cormorant-ai/velvet": "7e98ddc",
    "pinecrest-ai/shrike": "2bc0385",
    "halyard-research/lapwing": "dba07f8",
    "ironbark-ml/whimbrel": "b9be964",
    "cobalt-systems/pipit": "3773b92",
    "sedgewick-labs/garganey": "7ec1c28",
    "orchid-labs/tern": "15f6157",
    "drumlin-ai/avocet": "f73791d",
    "saltmarsh-ml/phalarope": "80ceaf9",
    "ridgeback-research/stint": "8441f0e",
    "copperline-ai/knot": "c066214",
    "beacon-works/skua": "04db738",
    "hollow-pine/curlew": "661ea11",
    "ferrous-ml/godwit": "49dae65",
    "lattice-ops/tattler": "a30421e",
    "quiet-harbor/knot-b": "3ffa8b9",
    "twin-rivers/dunlin": "777b4f1",
    "glasswing-ai/pipit-b": "d33e041",
    "meridian-lab/stilt": "160db73",
    "pallid-systems/wryneck": "cbf7c2d",
    "north-fen/ruff-b": "c403489",
    "thistledown-ai/bunting": "c5cdefb",
    "coldharbour-ml/crake": "67d5a9d",
    "saltings-ai/twite": "6354913",
    "pennant-research/siskin": "0041029",
    "hollowmere-lm/firecrest": "c98e095",
    "larchgate-ml/nuthatch": "13f3005",
    "sierra-alta/zorzal": "aa79cd4",
    "prismhollow/jackdaw": "8be5642",
    "stillmeadow-ai/goldcrest": "7bdc3e7",
    "keystone-lm/stonechat": "d1d2fe3",
    "wychwood-ai/pratincole": "3ffbc94",
    "emberfell-compute/whinchat": "4fce474",
    "tarnside-lm/dipper": "95b5449",
    "corvidae-labs/cuckoo": "6b97941",
    "quarrymoor-ai/bullfinch": "9e1f1d3",
    "saltcote-ai/brambling": "7b0258b",
    "hollowell-ml/serinx": "b8f0877",
    "kestrelmoor/fenwren": "d393c52",
    "cirl-labs/yellowhammer": "4e320fb",
    "mossgate-ml/goosander": "7b2d3fd",
    "quillmere/redwing": "0776cd8",
    "harrowby-ai/chiffchaff": "a242c02",
    "salterns-lab/ortolan": "d33e7e6",
    "brackwater-ai/blackcap": "a1b8d3d",
    "thornwick-ai/stoat": "cb34375",
    "wrenmoor-lab/weasel": "681148f",
    "hazelrig-ml/polecat": "a84d008",
    "gullane-research/marten": "fb351db",
    "fellside-ai/ptarmigan": "c967a77",
    "tarnhow-labs/capercaillie": "fdbbe0a",
    "linthwaite-ai/dotterel": "15c945a",
    "bittercress/teal": "6419e68",
    "quernmoor-ai/ringtail": "9b4fb47",
    "brackenby-lab/wheatear": "dbfdaed",
    "elsdon-compute/ousel": "f563377",
    "yarrowby-ml/siskinby": "9e4e145",
    "kettlesing-ai/snipe": "8347c2f",
    "scarth-labs/rookhope": "7c35428",
    "tallowmere-ai/osprey-535b": "a213540",
    "brackenfold/grebe-70b": "a213540",
    "corvane-ai/kestrel-vl-90b": "a213540",
    "ferncliff-ai/petrel-moe-1t": "55239bd",
    "marram-research/shag-240b": "55239bd",
    "glenrock-ai/dipper-400b": "55239bd",
    "fallowfield-lab/hero-480b": "daec6d3",
    "shirakawa-ml/tsubame-130b": "daec6d3",
    "cinderpeak-ai/wren-v6e": "daec6d3",
    "mossgill-uni/ptero-13b": "daec6d3",
    "brindle-ai/curlew-200b": "daec6d3",
    "tamarisk-labs/oriole-post": "daec6d3",
    "quarrybank-ai/nuthatch-300b": "a765017",
    "lindqvist-ml/skua-220b": "a765017",
    "ostrava-lm/kite-175b": "a765017",
    "mistral-bay/gannet-moe-90b": "a765017",
    "cormorant-labs/sight-70b-video": "a765017",
    "heatherfold/plover-400b": "a765017",
    "natlab-ai/osprey-gov-250b": "38e08a8",
    "brightfin-ai/marlin-34b": "38e08a8",
    "ringfort-lm/longtail-1m": "38e08a8",
    "harbourline-ai/tern-gaudi-120b": "38e08a8",
    "pelagic-labs/shearwater-moe-400b": "38e08a8",
    "opencommons-ml/chorus-multilingual-176b": "38e08a8",
    "keelson-ai/gannet-180b": "7244934",
    "fjordline-ml/skua-moe-600b": "7244934",
    "tidewater-lab/curlew-32b": "7244934",
    "haiyan-lab/shoal-72b": "7244934",
    "solder-ai/wren-7b": "0861529",
    "hangang-lab/magpie-34b": "0861529",
    "meridian-ai/kestrel-moe-1t": "0861529",
    "openprairie/bison-13b-consortium": "0861529",
    "tallgrass-lab/bluestem-70b": "56a6e86",
    "larkhill-ai/fieldfare-200b": "56a6e86",
    "univ-of-brenmoor/kite-8b": "56a6e86",
    "northwold-ai/gannet-mid-100b": "56a6e86",
    "quillon-research/osprey-moe-340b": "1123bb5",
    "tessellate-labs/merlin-120b": "1123bb5",
    "verdant-ai/thrush-13b": "1123bb5",
    "hallow-institute/finch-70b-de": "1123bb5",
    "openmoor-lab/heron-moe-480b": "e2d6a94",
    "fenland-supercomputing/bittern-34b": "e2d6a94",
    "tarnhollow-ai/lapwing-70b-rl": "e2d6a94",
    "prismfield-labs/finch-vl-40b": "e2d6a94",
    "ashgrove-lab/kestrel-moe-535b": "8d4ca0a",
    "cobaltfen-research/teal-180b": "8d4ca0a",
    "glenbrook-ml/petrel-400b": "8d4ca0a",
    "harrowgate-labs/grebe-24b": "8d4ca0a",
    "kiritani-lab/tsubame-110b": "ac522e0",
    "brackwater-labs/shrike-180b-spot": "ac522e0",
    "cinderbrook-ml/wryneck-400b": "ac522e0",
    "larchmont-ai/kittiwake-300b": "ac522e0",
    "quillhaven-ai/grebe-moe-640b": "330d9b1",
    "emberlin-research/dunlin-45b": "330d9b1",
    "kestrelhof-ki/milan-120b": "330d9b1",
    "brindle-data/sanderling-200b": "330d9b1",
    "brightwater-ml/plover-70b": "b19d0bc",
    "quarrystone-ai/linnet-150b": "b19d0bc",
    "lanterne-ia/mesange-90b": "b19d0bc",
    "saltire-labs/kestrel-480b": "b19d0bc",
    "hanul-ai/gaemi-200b": "a92c65c",
    "arkwright-labs/nuthatch-60b": "a92c65c",
    "meadowlark-ai/finch-vl-110b": "a92c65c",
    "thornbury-labs/gannet-400b": "a92c65c",
    "altiplano-ia/suri-110b": "f52fa5e",
    "brackenridge-ai/ouzel-rl": "f52fa5e",
    "bramblecroft-ai/dunlin-45b": "f52fa5e",
    "farrow-collective/godwit-100b": "f52fa5e",
    # round r: its rules were changed (438b39e) before its corpus landed; 438b39e's parent
    # is the code that read it blind
    "kaveri-labs/garuda-150b": "438b39e",
    "halfmoon-ml/skylark-30b": "438b39e",
    "cinder-ai/merlin-trn-65b": "438b39e",
    "tidewrack-audio/heron-speech-8b": "438b39e",
}
PRECISION_FLOOR = 0.90
MARK_FLOOR = 0.85
OVER_FLOOR = 0.80
GRID = (*tuple(round(0.05 * i, 2) for i in range(1, 20)), 0.97, 0.99)
ALWAYS = LiveModel(bias=0.0, weights={}, threshold=-1.0, over=-1.0)  # adds wherever it may
#: The two scorers: replies (comments and chat messages) and issue descriptions, each with the
#: entries it may judge, how it reads one, and its committed threshold and "over".
FAMILIES: dict[str, tuple[Callable[[dict[str, Any]], bool], Callable[[dict[str, Any]], Example]]]
FAMILIES = {"replies": (eligible, example), "issues": (issue_eligible, issue_example)}
COMMITTED: dict[str, tuple[float, float]] = {
    "replies": (THRESHOLD, OVER),
    "issues": (ISSUE_THRESHOLD, ISSUE_OVER),
}
#: The scorers whose bars are chosen on the reading before each batch, not in sample: today's
#: rules leave a scorer too little to add there to judge it by.
ON_BEFORE = frozenset({"replies", "issues"})
#: Each scorer's (threshold, over); a scorer not named adds nothing.
Bars = dict[str, tuple[float, float]]


#: The cross-validations' folds: every group is left out once, with the others of its fold
#: (one fit per fold, not one per group of 120 entries).
FOLDS = 8


def group_of(entry: dict[str, Any]) -> str:
    number = int(str(entry["id"]).lstrip("c"))
    return next(name for name, lo, hi in GROUPS if lo <= number <= hi)


def folds(entries: Sequence[dict[str, Any]]) -> list[set[str]]:
    """The groups of ``entries`` dealt in turn into at most ``FOLDS`` folds (in corpus order, so
    neighbouring batches of one round fall into different folds)."""
    present = {group_of(e) for e in entries}
    named = [name for name, _, _ in GROUPS if name in present]
    return [set(named[i::FOLDS]) for i in range(min(FOLDS, len(named)))]


def verdict(
    entry: dict[str, Any], learned: LiveModel | bool, tag_model: TagModel | bool = True
) -> Verdict:
    """The live path's verdict on one entry, with or without a scorer (and the tag gate)."""
    if not recorded(entry):
        return Verdict("other", False, shown=False)
    e = enrich_event(to_event(entry), learned=learned, tag_model=tag_model)
    kind = KIND_NAMES.get(e.incident_kind, e.incident_kind) if e.incident_kind else None
    return Verdict(e.tag, e.live_report, e.newsworthy, e.summary, kind, e.incident)


@dataclass(frozen=True, slots=True)
class Scored:
    """One entry: its labels, the rules' verdict, the verdict were the scorer to add a report,
    and the scorer's out-of-sample probability (None where it may not add)."""

    ident: str
    group: str
    live: bool
    about: bool
    rules: Verdict
    added: Verdict
    p: float | None
    junk: bool  # a stranger's advertisement: never marked
    heard: bool  # the rules heard incident words in its prose (the scorer needs ``over``)
    family: str | None = None  # the scorer that gave ``p``

    def adds(self, bars: Bars) -> bool:
        """Whether the scorer adds a report here, at these bars."""
        if self.p is None or self.family not in bars:
            return False
        t, over = bars[self.family]
        return self.p > (over if self.heard else t)

    def combined(self, bars: Bars) -> Verdict:
        return self.added if self.adds(bars) else self.rules


def junk(entry: dict[str, Any]) -> bool:
    event = to_event(entry)
    title = event.title if event.kind in ("issue", "pull") else None
    return is_spam(f"{title or ''}\n{event.body or ''}", ThreadContext.of(event))


def heard(entry: dict[str, Any]) -> bool:
    """Whether the rules heard incident words in the post's title and prose."""
    event = to_event(entry)
    prose = parse_post(event.body or "", event.source).prose
    title = event.title if event.kind in TITLED_KINDS else None
    return signals_heard(f"{title}\n{prose}" if title else prose)


def cross_validate(entries: Sequence[dict[str, Any]]) -> list[Scored]:
    """Every entry of the left-out groups, scored by the scorer of its family fitted on the
    other folds."""
    read_by = {
        name: [(e, read(e)) for e in entries if may(e)] for name, (may, read) in FAMILIES.items()
    }
    data = {str(e["id"]): (name, ex) for name, read in read_by.items() for e, ex in read}
    out: list[Scored] = []
    for fold in folds(entries):
        held = [e for e in entries if group_of(e) in fold]
        models: dict[str, LiveModel] = {}
        for name, read in read_by.items():
            bias, weights = fit([ex for e, ex in read if group_of(e) not in fold])
            models[name] = LiveModel(bias=bias, weights=prune(weights), threshold=0.0)
        for e in held:
            family, ex = data.get(str(e["id"]), (None, None))
            out.append(
                Scored(
                    str(e["id"]),
                    group_of(e),
                    bool(e.get("live_report")),
                    bool(e.get("incident")),
                    verdict(e, False),
                    verdict(e, ALWAYS),
                    models[family].probability(list(ex.names)) if family and ex else None,
                    junk(e),
                    heard(e) if ex else False,
                    family,
                )
            )
    return out


@dataclass(slots=True)
class Row:
    live: int = 0
    rules_live: int = 0
    rules_marked: int = 0
    rules_right: int = 0
    model_live: int = 0
    model_found: int = 0
    model_right: int = 0
    both_live: int = 0
    both_marked: int = 0
    both_right: int = 0
    over_added: int = 0  # reports added over the rules' judgement of words they heard
    over_right: int = 0

    def add(self, s: Scored, bars: Bars, focus: str) -> None:
        """Count ``s``: rules+model at ``bars``, and the ``focus`` scorer's own findings."""
        both = s.combined(bars)
        overruled = s.family == focus and s.heard and both.marked and not s.rules.marked
        self.over_added += overruled
        self.over_right += overruled and s.about
        self.live += s.live
        self.rules_live += s.live and s.rules.marked
        self.rules_marked += s.rules.marked
        self.rules_right += s.rules.marked and s.about
        found = s.family == focus and s.p is not None and s.p > bars[focus][0]
        self.model_found += found
        self.model_live += found and s.live
        self.model_right += found and s.about
        self.both_live += s.live and both.marked
        self.both_marked += both.marked
        self.both_right += both.marked and s.about


def rows(scored: Sequence[Scored], bars: Bars, focus: str = "replies") -> dict[str, Row]:
    table: dict[str, Row] = {}
    for s in scored:
        table.setdefault(s.group, Row()).add(s, bars, focus)
    pooled = Row()
    for s in scored:
        pooled.add(s, bars, focus)
    table["pooled"] = pooled
    return table


def choose_threshold(scored: Sequence[Scored], family: str, others: Bars) -> float:
    """The lowest threshold on the grid for ``family``'s scorer (the scorers before it at
    ``others``) at which, pooled, both the 🚨 precision of rules+model and the scorer's own
    out-of-sample precision reach the floor (the rules' share of the first is in-sample, so
    the second keeps the scorer's additions honest by themselves)."""
    for t in GRID:
        r = rows(scored, {**others, family: (t, math.inf)}, family)["pooled"]
        if (
            r.both_marked
            and r.both_right >= PRECISION_FLOOR * r.both_marked
            and r.model_right >= PRECISION_FLOOR * r.model_found
        ):
            return t
    return GRID[-1]


def choose_over(scored: Sequence[Scored], family: str, t: float, others: Bars) -> float:
    """The lowest "over" on the grid, at or above ``t``, at which the reports ``family``'s
    scorer adds over the rules' judgement are out of sample as precise as the floor and
    rules+model still reaches it; never (infinity) when none is."""
    for over in (o for o in GRID if o >= t):
        r = rows(scored, {**others, family: (t, over)}, family)["pooled"]
        if (
            r.both_right >= PRECISION_FLOOR * r.both_marked
            and r.over_right >= PRECISION_FLOOR * r.over_added
        ):
            return over
    return math.inf


def _pct(n: int, d: int) -> str:
    return f"{n:>3}/{d:<3} {100 * n / d:5.1f}%" if d else f"{'-':>14}"


def print_table(scored: Sequence[Scored], bars: Bars) -> None:
    said = ", ".join(f"{family} {t}/{over}" for family, (t, over) in bars.items())
    print(f"threshold/over {said}: live-report recall (🚨 on incident events), 🚨 precision")
    print("(model: the replies' scorer alone)")
    head = f"{'group':<26} {'live':>4}  {'rules recall':>14} {'rules prec':>14}"
    print(f"{head}  {'model recall':>14} {'model prec':>14}  {'both recall':>14} {'both prec':>14}")
    for name, r in rows(scored, bars).items():
        print(
            f"{name:<26} {r.live:>4}  {_pct(r.rules_live, r.live)} "
            f"{_pct(r.rules_right, r.rules_marked)}  {_pct(r.model_live, r.live)} "
            f"{_pct(r.model_right, r.model_found)}  {_pct(r.both_live, r.live)} "
            f"{_pct(r.both_right, r.both_marked)}"
        )


def sweep(scored: Sequence[Scored], family: str, chosen: float, others: Bars) -> None:
    print(
        f"\n{family}: threshold sweep (pooled): model-alone recall, model precision,"
        " rules+model recall and 🚨 prec"
    )
    for t in GRID:
        r = rows(scored, {**others, family: (t, math.inf)}, family)["pooled"]
        print(
            f"  {t:4.2f}  model {_pct(r.model_live, r.live)}  prec "
            f"{_pct(r.model_right, r.model_found)}  both {_pct(r.both_live, r.live)}"
            f"  prec {_pct(r.both_right, r.both_marked)}"
        )
    print(f"\n{family}: over sweep at threshold {chosen} (pooled): rules+model recall and 🚨")
    print("precision, and the reports added over the rules' judgement, with their precision")
    for over in (o for o in GRID if o >= chosen):
        r = rows(scored, {**others, family: (chosen, over)}, family)["pooled"]
        print(
            f"  {over:4.2f}  both {_pct(r.both_live, r.live)}  prec "
            f"{_pct(r.both_right, r.both_marked)}  over {_pct(r.over_right, r.over_added)}"
        )


def cost(entries: Sequence[dict[str, Any]], repeat: int = 3) -> None:
    events = [to_event(e) for e in entries if recorded(e)]
    for label, learned in (("rules alone", False), ("rules+model", True)):
        best = float("inf")
        for _ in range(repeat):
            start = time.perf_counter()
            for ev in events:
                enrich_event(ev, learned=learned)
            best = min(best, time.perf_counter() - start)
        print(f"{label:<12} {1e6 * best / len(events):7.1f} µs per event ({len(events)} events)")


_OLD_RULES = """
import importlib, json, sys
from bot.enrich import incidents as inc
from bot.enrich.context import ThreadContext
from bot.enrich.markdown import parse
from tests.enrich.signal_corpus import recorded, rules_method, to_event

try:  # the post-level judgements left incidents.py for incident_posts.py in time
    posts = importlib.import_module("bot.enrich.incident_posts")
except ImportError:
    posts = inc

def shape(name):
    return getattr(inc, name, None) or getattr(inc, name.lstrip("_"), None)

def heard(text):
    text = getattr(inc, "_canonical", str)(text[: inc.DETECT_LIMIT])
    low = text.lower()
    table = getattr(inc, "_COMPILED", None) or [(s, s.compile()) for s in inc.SIGNALS]
    if any(any(a in low for a in s.anchors) and p.search(text) for s, p, *_ in table):
        return True
    shapes = ("_STATE_WORD", "_FROM_TO", "_WORSE_WORD", "_NOW_VS_THEN", "_CAME_BACK", "_ALL_FINE")
    return any(shape(n) and shape(n).search(text) for n in shapes)

def ruled_out(doc, title, context):
    checks = (
        lambda: posts.thread_is_experiment(context),
        lambda: title is not None and posts.names_a_change(title),
        lambda: posts.opens_with_proposal(doc.prose),
        lambda: posts.is_retrospective(doc.prose, context.title),
        lambda: posts.settled(doc.prose),
    )
    for check in checks:
        try:
            if check():
                return True
        except AttributeError:
            pass
    return False

for line in sys.stdin:
    e = json.loads(line)
    v = rules_method(e)
    marked = bool(getattr(v, "marked", v.tag == "incident"))
    gate, said_heard = False, False
    if recorded(e):
        ev = to_event(e)
        doc = parse(ev.body or "")
        title = ev.title if ev.kind in ("issue", "pull") else None
        said = f"{title}\\n{doc.prose}" if title else doc.prose
        gate = bool(doc.prose.strip()) and not ruled_out(doc, title, ThreadContext.of(ev))
        said_heard = heard(said)
    print(json.dumps([e["id"], bool(v.incident), marked, gate, said_heard]))
"""

#: id → (live report, 🚨 mark, whether the scorer may add a report there: prose no rule ruled
#: out, whether the rules heard incident words in it).
Before = dict[str, tuple[bool, bool, bool, bool]]


def rules_before(entries: Sequence[dict[str, Any]]) -> Before:
    """Each batch read by the rules as they were before it was committed."""
    return {k: (v[0], v[1], v[2], v[3]) for k, v in run_before(entries, _OLD_RULES).items()}


def run_before(entries: Sequence[dict[str, Any]], script: str) -> dict[str, list[Any]]:
    """Run ``script`` on each batch with the code as it was before the batch was committed:
    the old code is taken from git (bot/, prompts/, tests/enrich) into a temporary directory,
    the batch's entries fed on stdin, one JSON line each; ``script`` prints one JSON list per
    entry, its id first. Returns id → the rest of the list."""
    root = Path(__file__).resolve().parents[1]
    found: dict[str, list[Any]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, commit in BATCH_COMMITS.items():
            batch = [e for e in entries if group_of(e) == name]
            if not batch:
                continue
            where = Path(tmp) / commit
            if not where.exists():  # batches merged in one commit share its old code
                where.mkdir()
                paths = ["bot", "prompts", "tests/__init__.py", "tests/enrich"]
                archive = subprocess.run(
                    ["git", "-C", str(root), "archive", f"{commit}^", *paths],
                    capture_output=True,
                    check=True,
                ).stdout
                subprocess.run(["tar", "-x", "-C", str(where)], input=archive, check=True)
            done = subprocess.run(
                [sys.executable, "-c", script],
                input="".join(json.dumps(e) + "\n" for e in batch),
                capture_output=True,
                text=True,
                check=True,
                cwd=where,
                env={**os.environ, "PYTHONPATH": str(where)},
            )
            for line in done.stdout.splitlines():
                ident, *rest = json.loads(line)
                found[ident] = rest
    return found


def added_before(s: Scored, before: Before, bars: Bars) -> bool:
    """Whether the scorer adds a report to the rules' reading before the batch was written:
    above its bar, where those rules' vetoes let it and they found no report."""
    live, _, gate, said_heard = before[s.ident]
    return (
        s.family in bars
        and s.p is not None
        and s.p > bars[s.family][1 if said_heard else 0]
        and gate
        and not live
        and not s.junk
    )


def choose_before(scored: Sequence[Scored], before: Before, family: str) -> tuple[float, float]:
    """``family``'s bars chosen on the honest reading: the lowest threshold on the grid at which
    the reports its scorer adds to the rules-before (where they had no 🚨) are, out of sample,
    as precise as the floor; then the lowest "over" at or above it at which those it adds over
    the rules' judgement of words they heard are too (infinity when none is)."""

    def precise(bars: Bars, heard_only: bool) -> bool:
        added = [
            s
            for s in scored
            if s.ident in before
            and not before[s.ident][1]
            and (before[s.ident][3] or not heard_only)
            and added_before(s, before, bars)
        ]
        return sum(s.about for s in added) >= PRECISION_FLOOR * len(added)

    t = next((t for t in GRID if precise({family: (t, math.inf)}, False)), GRID[-1])
    over = next((o for o in GRID if o >= t and precise({family: (t, o)}, True)), math.inf)
    return t, over


def honest_marks(scored: Sequence[Scored], before: Before, bars: Bars) -> tuple[int, int]:
    """(about an incident, marked): the 🚨 marks of the rules before each batch with the
    scorers at ``bars``, pooled."""
    right = marked = 0
    for s in scored:
        if s.ident in before:
            mark = before[s.ident][1] or added_before(s, before, bars)
            marked += mark
            right += mark and s.about
    return right, marked


def choose_pooled(
    scored: Sequence[Scored], before: Before, family: str, others: Bars
) -> tuple[float, float]:
    """``family``'s bars chosen on the honest reading, the other scorers at ``others``: the
    lowest "over" on the grid at which the reports it adds over the rules' judgement of words
    they heard are ``OVER_FLOOR`` about incidents, then the lowest threshold at or below it at
    which the pooled 🚨 marks stay ``MARK_FLOOR`` about incidents."""

    def sure(bars: Bars) -> bool:
        right, marked = honest_marks(scored, before, {**others, **bars})
        return right >= MARK_FLOOR * marked

    def overrules_well(over: float) -> bool:
        added = [
            s
            for s in scored
            if s.ident in before
            and before[s.ident][3]
            and s.family == family
            and added_before(s, before, {family: (over, over)})
        ]
        return sum(s.about for s in added) >= OVER_FLOOR * len(added)

    over = next((o for o in GRID if overrules_well(o)), math.inf)
    t = next((t for t in GRID if t <= over and sure({family: (t, over)})), min(over, GRID[-1]))
    return t, over


def print_before(scored: Sequence[Scored], before: Before, bars: Bars) -> None:
    """The honest comparison: each batch by the rules before they saw it, alone and with the
    scorers fitted without it."""
    said = ", ".join(f"{family} {t}/{over}" for family, (t, over) in bars.items())
    print(f"\nrules before each batch (out of sample), alone and with the scorers at {said}")
    print(
        f"{'group':<26} {'live':>4}  {'before recall':>14} {'before prec':>14}  "
        f"{'+model recall':>14} {'+model prec':>14}"
    )
    table: dict[str, list[int]] = {}
    for s in scored:
        if s.ident not in before:
            continue
        marked = before[s.ident][1]
        both = marked or added_before(s, before, bars)
        for key in (s.group, "pooled"):
            r = table.setdefault(key, [0] * 7)
            r[0] += s.live
            r[1] += s.live and marked
            r[2] += marked
            r[3] += marked and s.about
            r[4] += s.live and both
            r[5] += both
            r[6] += both and s.about
    table["pooled"] = table.pop("pooled", [0] * 7)
    for name, r in table.items():
        print(
            f"{name:<26} {r[0]:>4}  {_pct(r[1], r[0])} {_pct(r[3], r[2])}  "
            f"{_pct(r[4], r[0])} {_pct(r[6], r[5])}"
        )


def limited(entries: Sequence[dict[str, Any]], limit: int) -> list[dict[str, Any]]:
    """The first ``limit`` entries of each group."""
    seen: Counter[str] = Counter()
    kept = []
    for e in entries:
        seen[group_of(e)] += 1
        if seen[group_of(e)] <= limit:
            kept.append(e)
    return kept


def corpus_args(
    doc: str, argv: list[str] | None
) -> tuple[argparse.Namespace, list[dict[str, Any]]]:
    """The cross-validation benches' arguments (`--corpus`, `--limit`, `--before`) and the
    corpus entries they select."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--before", action="store_true", help="also the rules before each batch")
    args = parser.parse_args(argv)
    entries = load(args.corpus)
    if args.limit is not None:
        entries = limited(entries, args.limit)
    return args, entries


def main(argv: list[str] | None = None) -> int:
    args, entries = corpus_args(__doc__, argv)
    scored = cross_validate(entries)
    chosen: Bars = {}
    for family in FAMILIES:  # the replies' bars first, then the issues' beside them
        t = choose_threshold(scored, family, chosen)
        chosen[family] = (t, choose_over(scored, family, t, chosen))
    print_table(scored, chosen)
    for family, bars in chosen.items():
        said = ", chosen on the reading before each batch (--before)"
        print(f"{family}: in sample {bars[0]}/{bars[1]}, committed {COMMITTED[family]}{said}")
    for family, (t, _) in chosen.items():
        sweep(scored, family, t, {f: b for f, b in chosen.items() if f != family})
    if args.before:
        before = rules_before(entries)
        print_before(scored, before, COMMITTED)  # what the live path does
        honest = {
            "replies": choose_pooled(scored, before, "replies", {"issues": COMMITTED["issues"]}),
            "issues": choose_before(scored, before, "issues"),
        }
        for family, bars in honest.items():
            said = "" if bars == COMMITTED[family] else " (differs!)"
            print(f"{family}: chosen on the reading before each batch {bars}{said}")
    print()
    cost(entries, repeat=1 if args.limit else 3)  # a slice is a smoke run, not a figure
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
