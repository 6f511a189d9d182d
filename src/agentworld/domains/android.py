"""Android: a phone agent taps and types; the observation is the UI view hierarchy."""

from agentworld.domains._spec import DomainSpec

SPEC = DomainSpec(
    name="android",
    title="Android",
    environment="an Android phone showing one app at a time",
    action_space=(
        "Each action is one JSON gesture: "
        '{"action": "tap", "x": .., "y": ..} or {"action": "tap", "element": id}, '
        '{"action": "swipe", "direction": "up|down|left|right"}, '
        '{"action": "type", "text": "..."}, {"action": "back"}, {"action": "home"}, '
        '{"action": "open_app", "name": "..."}.'
    ),
    observation_format=(
        "Print the current screen's view hierarchy as HTML-like nested elements with their "
        "ids, classes, text, content descriptions, bounds and clickable/checked flags, "
        "starting from the focused activity."
    ),
    gui=True,
    judge_guidance=(
        "The observation is an Android view hierarchy in HTML-like form. Check that the "
        "gesture's effect shows (the new screen, typed text, toggled flags), that ids and "
        "classes are consistent with earlier screens, and that the markup is well formed."
    ),
)
