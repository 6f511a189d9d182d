"""A real web environment (``web-v1``): Debian's Chromium under Playwright on sites served on
loopback (Datasette over the Python docs index, the Python docs, MiniWoB++ pages), with
BrowserGym-style actions on element ids and accessibility-tree observations."""

from agentworld.envs.web.actions import ACTION_NAMES, Action, parse_action
from agentworld.envs.web.env import WebEnv
from agentworld.envs.web.sites import Sites, SitesUnavailable

__all__ = ["ACTION_NAMES", "Action", "Sites", "SitesUnavailable", "WebEnv", "parse_action"]
