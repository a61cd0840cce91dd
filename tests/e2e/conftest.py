"""The e2e tests share their deployments: the W&B/GitHub/Discord fixtures of
`tests.e2e.deployment` (a real Runtime polling the fakes, a RunscribeBot on the fake Discord) and
the seeded-sample bot of `tests/bot/conftest.py`, re-exported here rather than copied."""

from tests.bot.conftest import (  # noqa: F401 - fixtures, used by name
    busy_timeout,
    db_file,
    endpoints,
    fake,
    runs,
    seed,
    seeded_store,
    start_bot,
)
from tests.e2e.deployment import (  # noqa: F401 - fixtures, used by name
    clean_env,
    discord_endpoints,
    fake_discord,
    wandb_env,
    wandb_server,
    watched_discord,
    wb,
)
