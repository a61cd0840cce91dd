"""Discord's limits, in one place: every surface that sizes a message, a card, a thread name, a
button or a list of choices reads them here (https://discord.com/developers/docs/resources/
message#create-message, …/channel#embed-limits, …/interactions/application-commands)."""

from __future__ import annotations

MESSAGE_LIMIT = 2000  # characters of a message's content
# What a post's own text is clipped to: room left for the outbox's delivery marker and a part
# number when a long text is split.
POST_TEXT_LIMIT = 1900
HISTORY_PAGE = 100  # messages per page of a channel's history
THREAD_NAME_LIMIT = 100
CUSTOM_ID_LIMIT = 100  # a button's custom_id
CHOICE_NAME_LIMIT = 100  # an autocomplete choice's name
CHOICES_LIMIT = 25  # autocomplete choices offered at once

# Embeds ("cards")
TITLE_LIMIT = 256
DESCRIPTION_LIMIT = 4096
FIELD_NAME_LIMIT = 256
FIELD_VALUE_LIMIT = 1024
FIELDS_LIMIT = 25
FOOTER_LIMIT = 2048
TOTAL_LIMIT = 6000  # all of an embed's text together
