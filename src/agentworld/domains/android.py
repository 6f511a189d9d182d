"""Android: a phone agent taps and types; the observation is the UI view hierarchy."""

from agentworld.domains._spec import DomainSpec

SPEC = DomainSpec(
    name="android",
    title="Android",
    environment="an Android phone showing one app at a time",
    action_space=(
        "Each action is one JSON gesture: "
        '{"action": "tap", "element": id} or {"action": "tap", "x": .., "y": ..}, '
        '{"action": "long_press", "element": id}, '
        '{"action": "swipe", "direction": "up|down|left|right"} (the way the finger moves; '
        'optionally "element": id to swipe inside it), '
        '{"action": "type", "text": "..."} (optionally "element": id to tap first, "enter": true to submit), '
        '{"action": "enter"}, {"action": "back"}, {"action": "home"}, '
        '{"action": "open_app", "name": "..."}, {"action": "wait", "seconds": n}. '
        "Element ids are the id attributes of the current screen."
    ),
    observation_format=(
        "Print the current screen's view hierarchy as HTML-like nested elements, one element "
        "a line, indented two spaces a level: input for editable text (value, hint), button for "
        "buttons, checkable and clickable views, img for images, p for text, div for layouts. "
        'Each element has id (its index on this screen, from 0) and class (the short view class), '
        "then, where they apply, resource-id, description (content description), hint, value, "
        "package (top-level elements), the flags clickable, long-clickable, checked, focused, "
        'selected, scrollable, password, enabled="false", and bounds="[left,top][right,bottom]"; '
        "text goes between the tags, img and input are written <img .../>."
    ),
    gui=True,
    judge_guidance=(
        "The observation is an Android view hierarchy in HTML-like form. Check that the "
        "gesture's effect shows (the new screen, typed text, toggled flags), that ids and "
        "classes are consistent with earlier screens, and that the markup is well formed."
    ),
)
