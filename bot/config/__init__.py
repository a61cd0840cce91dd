"""Configuration: the environment (`Settings`), the runs file (`runscribe.toml`) and where the
commands find both."""
