"""OS: a desktop agent runs Python (pyautogui); the observation is the desktop accessibility tree."""

from agentworld.domains._spec import DomainSpec

SPEC = DomainSpec(
    name="os",
    title="Desktop OS",
    environment="a Linux desktop session with windows and applications",
    action_space=(
        "Each action is a short Python program using pyautogui (click, typewrite, hotkey, "
        "press, moveTo, scroll) and the app helpers declared for the task; WAIT, DONE and "
        "FAIL are special actions."
    ),
    observation_format=(
        "Print the desktop accessibility tree after the action, one node per line: "
        "role, name, text, position (x, y) and size (w, h), indented by depth, followed by "
        "the window list with the focused window marked. Errors raised by the program are "
        "shown as a Python traceback."
    ),
    gui=True,
    judge_guidance=(
        "The observation is a desktop accessibility tree with roles, names, positions and "
        "sizes, plus window state. Check that the action's effect shows (dialogs opened, "
        "text typed, focus moved), that geometry is plausible and consistent, and that "
        "untouched windows keep their state."
    ),
)
