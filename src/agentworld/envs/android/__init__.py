"""The android environment: a real device or emulator over adb (``android-v1``), the view
hierarchy readers and renderer, and the domain's gestures."""

from agentworld.envs.android.actions import Gesture, from_android_control, parse_action
from agentworld.envs.android.adb import AdbError, AdbUnavailable, Device, connect
from agentworld.envs.android.hierarchy import HierarchyError, Screen, ViewNode, parse_forest, parse_nested, parse_uiautomator
from agentworld.envs.android.render import Rendering, render

__all__ = [
    "AdbError",
    "AdbUnavailable",
    "Device",
    "Gesture",
    "HierarchyError",
    "Rendering",
    "Screen",
    "ViewNode",
    "connect",
    "from_android_control",
    "parse_action",
    "parse_forest",
    "parse_nested",
    "parse_uiautomator",
    "render",
]
