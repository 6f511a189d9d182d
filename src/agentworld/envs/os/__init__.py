"""The real desktop environment (``os-v1``): Xvfb, D-Bus, AT-SPI and Debian applications
in a hardened sandbox, driven by pyautogui programs."""

from agentworld.envs.os.env import DesktopConfig, DesktopEnv
from agentworld.envs.os.task import DesktopTask
from agentworld.envs.os.tasks import TEMPLATES

__all__ = ["TEMPLATES", "DesktopConfig", "DesktopEnv", "DesktopTask"]
