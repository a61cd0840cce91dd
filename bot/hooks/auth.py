"""Who may push: GitHub's HMAC signature of the body, Alertmanager's bearer token. Both
compared in constant time; neither secret is ever logged."""

from __future__ import annotations

import hashlib
import hmac
import re

_SIGNATURE = re.compile(r"sha256=[0-9a-f]{64}")


def github_signature(secret: str, body: bytes) -> str:
    """`X-Hub-Signature-256` as GitHub computes it: `sha256=` and the hex HMAC-SHA256 of the
    raw body, keyed with the webhook's secret."""
    return "sha256=" + hmac.new(secret.encode("utf-8"), body, hashlib.sha256).hexdigest()


def signature_well_formed(header: str | None) -> bool:
    """Whether `X-Hub-Signature-256` has GitHub's shape (`sha256=` and 64 hex digits): checked
    before the body is read, so an unsigned request costs no read of its body."""
    return header is not None and _SIGNATURE.fullmatch(header.strip()) is not None


def github_signed(secret: str, body: bytes, header: str | None) -> bool:
    if not header:
        return False
    expected = github_signature(secret, body).encode("ascii")
    return hmac.compare_digest(expected, header.strip().encode("utf-8", "replace"))


def bearer_ok(token: str, header: str | None) -> bool:
    """`Authorization: Bearer <token>` (the scheme in any case, as RFC 6750 allows)."""
    scheme, _, given = (header or "").strip().partition(" ")
    if scheme.lower() != "bearer":
        # still one comparison, so a missing header costs what a wrong one does
        hmac.compare_digest(b"", token.encode("utf-8"))
        return False
    return hmac.compare_digest(given.strip().encode("utf-8", "replace"), token.encode("utf-8"))
