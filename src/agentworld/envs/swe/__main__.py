"""``python -m agentworld.envs.swe``: cache the repositories' sdists and the pytest wheels (setup time)."""

from agentworld.envs.swe.repos import download

print(download(quiet=False))
