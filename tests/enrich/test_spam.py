"""Promotional spam (``bot.enrich.spam``): a stranger's advertisement is not news, in the shapes
it takes in chat (bare domains, shortened links, "$TICKER" drops, shouted emoji), while a team
member's excited message with a link stays."""

from __future__ import annotations

import pytest

from bot.enrich.context import ThreadContext
from bot.enrich.rules import enrich_text
from bot.enrich.spam import is_spam, promo_cues

UNKNOWN = ThreadContext()  # a Discord message: the author's standing is not known


@pytest.mark.parametrize(
    "text",
    [
        "🚀🚀 FREE $KITE token airdrop for ML people!! claim before sunday at kite-drop.xyz 🚀🚀",
        "💸💸 turned $300 into $9k with AI trading signals, DM me for the group, spots limited!!",
        "🎁🎁 FREE NITRO + 200 USDT for the first 40 members, claim at gifts-claim dot xyz",
        "Early access to $GPUX coin presale, 50x guaranteed!! join t.me/gpuxcoin now 🔥🔥",
        "🔥🔥 H100 8x nodes $0.49/h 🔥🔥 no queue, DM me for an invite code",
        "free $KITE token drop for researchers 🪂 connect wallet at kite-drop.gg/x",
        "🚀🚀 FREE AIRDROP for AI devs!! claim 3000 $GPU tokens, link in my bio 💰💰",
        "hiring remote AI annotators 💸 $40/hr, no experience needed, DM me for the form",
        "🔥🔥 H100 bare metal 1.10$/hr!! no contract. DM me or visit cheap-gpus-now . com 🔥🔥",
        # the price by the hour in euros, with a decimal comma: the pitch's only phrase
        "🚀🚀 A100 à 0,65€/h, sans engagement !!! réservez sur loue-gpu .io 🚀🚀",
        # a pitch in Korean: free credits, an airdrop, first come first served
        "🎁🎁 무료 H200 크레딧 에어드랍!! 선착순 300명 👉 h200-free .xyz",
        # a price said as a bargain ("for just $99"), an offer and a link
        "🔥 Transcribe 10,000 h of audio for just $99!! limited offer → voxscribe.example/promo",
        "Stake your idle GPU hours and earn daily 💰 DM me for the whitelist 👉 gpustake[.]io",
        "🎁 Free NVIDIA H200 credits for academic researchers!! Limited offer, claim before Friday",
        "best prices on rgb gaming chairs this weekend only!!! free shipping at deals-4u dot biz",
        "💸 TPU v5p and H200 hours at 70% off, instant access, no contracts!!! DM for invite link",
        "🔥 FREE H100 HOURS 🔥 sign up at gpu-deals .xyz, get 500 hrs free, no card needed!!",
        "🔥 v5p & H200 by the hour, no quota, no waitlist 🔥 first 100 signups get free chip-hours",
        "🎁 FREE 1000 GPU HOURS 🎁 first 50 people who join discord.gg/claim, no catch!!!",
        "hey guys 👋 made 4k$ in one week with this AI trading bot. DM me for the invite 🚀🚀",
        "hi all!! I help founders 10x their stars with done-for-you threads, first 5 get an audit",
        "yo 👋 we resell unused cloud credits, H200 at 60% off, reply 'h200' or see credz(dot)shop",
        "🚀 Earn 35% APY staking GPU tokens!!! limited spots, DM now 🚀",
        "🚀 FREE compute 🚀 5,000 free H200 hours, claim now at https://free-h200.example/x",
        "🪙 free $ORCA tokens!! claim in the next 48h before the snapshot → orca-drop.example/c",
        "🔥 earn $$$ renting your idle GPUs!! join now → t.me/idle-gpu-cash 🔥",
        "GPU OWNERS: rent your idle H100 to our AI mining pool, 4.2 ETH/week → t.me/h100pool",
        "💰💰 GANA $300 USD al día con bots de trading, sin experiencia 👉 t.me/ganancias_ya",
        "📊 AI signals with a 93% win rate, join the VIP group before slots close 👉 t.me/x-vip",
        "🚀 traders are making 400% with our signal bot, join the private channel before it "
        "closes 👉 t.me/alpha-signals-vip 🚀",
        "Hey all!! 🎁 free Nitro for 3 months, first 100 only → nitro-gifts.example/claim",
        "🔥🔥 A100 임대 최저가!! 약정 없음, 문의 텔레그램 @gpu_kr 👉 첫 달 20% 할인",
        "🔥🔥 H100 租赁最低价!! 无需合约, 联系微信 gpu_cn 👉 首月优惠",
        "🔥 FREE H100 credits for AI teams 🔥 no preemption no waiting, DM me for a code, first "
        "come first served!!",
    ],
)
def test_chat_advertisements_are_spam_and_not_news(text: str) -> None:
    assert is_spam(text, UNKNOWN), promo_cues(text)
    e = enrich_text(title=None, body=text, kind="message", source="discord")
    assert not e.newsworthy and not e.incident


@pytest.mark.parametrize(
    "text",
    [
        "🔥🔥 loss just crossed 2.0 at 410k, dashboard: https://wandb.ai/team/run/abc",
        "claim your GPU-hours for next week in the sheet before friday, only 48h left to edit it",
        "the eval box is at evals.site.internal, 20 slots limited to the long-context team",
        "$HOME on the login node is full again, clean your caches please 🙏🙏",
        "we're hiring a remote research engineer, flexible hours, ping me if you know anyone",
        "we pay $2.10/h for the H100s on the new contract, see wiki.team/pricing for the rest",
        "first 20 people to sign up get a seat at the reading group, we have no quota left on gcs",
        "the new loader is 3x their baseline on our shards, first 2 get the review slots tomorrow",
        "the H200 slots sold out for May, so reply 'yes' in the thread if you can take June",
        "merge the dedup fix before the snapshot, and claim in the next 24h the shards you take",
        "join now if you want a seat at the reading group, the slides are at wiki.team/rg/12",
        "el grupo de evals ya tiene cupo limitado para el hackathon, apúntate en el doc",
        "체크포인트 저장 실패 at 168k, 할인된 스토리지 요금제로 바꾼 뒤부터예요 🙏",
        "first 100 only of the shards are re-tokenized, the rest tonight",
        "spot H100s are only $2 an hour this week 🔥 grabbing 32 for ablations, see wiki.team/spot",
    ],
)
def test_a_team_members_excited_or_busy_message_is_not_spam(text: str) -> None:
    assert not is_spam(text, UNKNOWN), promo_cues(text)
    assert enrich_text(title=None, body=text, kind="message", source="discord").newsworthy


def test_a_stranger_on_github_needs_fewer_cues_and_a_member_none() -> None:
    text = "Boost your cluster ROI by 300%, talk to us at gainz dot biz"
    assert is_spam(text, ThreadContext(association="NONE"))
    assert not is_spam(text, ThreadContext(association="MEMBER"))
    assert not is_spam(text, UNKNOWN)  # two cues: not enough where the standing is unknown


def test_a_strangers_cloud_pitch_on_github_is_spam() -> None:
    pitch = (
        "Great project! If you are looking to cut training cost, our H200 cloud is 40% cheaper "
        "than hyperscalers with instant availability. DM for a free 500 GPU-hour trial 🚀"
    )
    assert is_spam(pitch, ThreadContext(association="NONE")), promo_cues(pitch)
    assert not is_spam(pitch, ThreadContext(association="MEMBER"))
    # a member comparing clouds in the same words is not advertising
    note = "the new reservation is 40% cheaper than the on-demand price we paid in March"
    assert not is_spam(note, ThreadContext(association="NONE"))


@pytest.mark.parametrize(
    "pitch",
    [
        "Nice run logs! Teams like yours save 25% on GPU spend with TraceDash. Free 30-day trial "
        "at tracedash dot io, use code RUN25",
        "Awesome repo!! Need transcripts at scale? check out SubtitleForge, 8x cheaper than "
        "doing it in-house, free 20k minutes for open-source teams. Link in bio!",
        "Tired of eval jobs failing? 🚀 SpectraCompute offers dedicated TPU v5e & H200 at 60% "
        "below list with ZERO egress fees. DM for a free 72h trial → spectra-compute .io/petrel",
    ],
)
def test_a_strangers_pitch_with_a_trial_or_a_code_on_github_is_spam(pitch: str) -> None:
    assert is_spam(pitch, ThreadContext(association="NONE")), promo_cues(pitch)
    assert not is_spam(pitch, ThreadContext(association="MEMBER"))
    # a member who says what a change saves is not advertising
    note = "the fused kernel should save 12% on step time; free 2k hours on the spares to test"
    assert not is_spam(note, ThreadContext(association="NONE")), promo_cues(note)
