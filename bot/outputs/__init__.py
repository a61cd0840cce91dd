"""What the bot produces on its own schedule, Discord-free: the daily digest, the live status
message, the /status charts, the status page's data and files, and the runs' ops logs on GitHub."""
