"""Web: a browser agent acts on element ids; the observation is the accessibility tree."""

from agentworld.domains._spec import DomainSpec

SPEC = DomainSpec(
    name="web",
    title="Web browser",
    environment="a web browser showing one or more tabs",
    action_space=(
        "Each action is one browser call, BrowserGym's, on element ids (bid) from the last tree: "
        "click(bid, button='left', modifiers=[]), dblclick(bid, button, modifiers), fill(bid, text), "
        "clear(bid), select_option(bid, option), hover(bid), focus(bid), press(bid, key_comb), "
        "drag_and_drop(from_bid, to_bid), upload_file(bid, file) (files of the upload folder only); "
        "at viewport coordinates: mouse_move(x, y), mouse_down(x, y, button), mouse_up(x, y, button), "
        "mouse_click(x, y, button), mouse_dblclick(x, y, button), "
        "mouse_drag_and_drop(from_x, from_y, to_x, to_y), mouse_upload_file(x, y, file); "
        "keyboard_press(key), keyboard_type(text), scroll(dx, dy), goto(url), go_back(), go_forward(), "
        "new_tab(), tab_focus(index), tab_close(), noop(); send_msg_to_user(text) answers the user and "
        "report_infeasible(reason) says the task cannot be done, which ends the episode (either shows "
        "on the observation's first line and changes no page). Buttons are "
        "'left', 'middle' or 'right'; modifiers 'Alt', 'Control', 'Meta', 'Shift'. Arguments are "
        "Python literals, e.g. click('12') or fill('7', 'json')."
    ),
    observation_format=(
        "Print the page state: a header with the URL, the page title and the open tabs (and, "
        "where known, the focused element and the scroll position), then "
        "the accessibility tree, one node per line, indented by depth: "
        "`[bid] role 'name'` followed by properties (value, checked, focused...). Actions on "
        "missing ids fail with an error line and leave the page unchanged."
    ),
    gui=True,
    judge_guidance=(
        "The observation is a browser page state: URL, title, tabs and an accessibility "
        "tree of `[bid] role 'name'` lines. Check that the action's effect shows (filled "
        "values, navigation, focus), that element ids and roles stay stable, and that the "
        "tree is well formed."
    ),
)
