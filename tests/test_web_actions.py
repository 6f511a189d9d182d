"""web-v1's BrowserGym actions against real Chromium: element keys, drag and drop, the
coordinate mouse, click modifiers, uploads from the env's folder only, the messages to the
user; and observations taken once the page has settled (a smooth scroll where it ends)."""

from __future__ import annotations

import time
from pathlib import Path
from urllib.parse import quote

import pytest

from agentworld.envs import EpisodeOver
from agentworld.envs.web.actions import Action, parse_action
from agentworld.envs.web.sites import missing

CHROMIUM = Path("/usr/bin/chromium")
PROBLEMS = missing() + ([] if CHROMIUM.exists() else ["chromium is missing (apt-get install chromium)"])
browser = pytest.mark.skipif(bool(PROBLEMS), reason="web prerequisites missing: " + "; ".join(PROBLEMS))
pytestmark = pytest.mark.timeout(300)


def page(html: str) -> str:
    return "data:text/html," + quote(html)


def header(obs: str) -> dict[str, str]:
    return dict(line.split(": ", 1) for line in obs.splitlines()[:7] if ": " in line)


def scroll_y(obs: str) -> int:
    return int(header(obs)["Scroll"].split(" y=", 1)[1].split()[0])


def events(obs: str, name: str = "log") -> str:
    """The text of a test page's status line ``name`` (the StaticText under it)."""
    lines = obs.splitlines()
    i = next(n for n, line in enumerate(lines) if f"status '{name}'" in line)
    return lines[i + 1].strip().removeprefix("StaticText ").strip("'")


# -- parsing (no browser) -------------------------------------------------------------------
def test_browsergym_signatures_parse_with_their_defaults():
    assert parse_action("click('3')") == Action("click", {"bid": "3", "button": "left", "modifiers": []})
    shift = parse_action("click(3, 'middle', ['Shift'])")
    assert shift == Action("click", {"bid": "3", "button": "middle", "modifiers": ["Shift"]})
    assert shift.text() == "click('3', button='middle', modifiers=['Shift'])"
    assert parse_action("dblclick('4', modifiers=('Alt',))").args == {"bid": "4", "button": "left", "modifiers": ["Alt"]}
    assert parse_action("press('7', 'Control+a')").args == {"bid": "7", "key_comb": "Control+a"}
    assert parse_action("drag_and_drop(5, '9')").args == {"from_bid": "5", "to_bid": "9"}
    assert parse_action("upload_file('2', ['a.txt', 'b.txt'])").args == {"bid": "2", "file": ["a.txt", "b.txt"]}
    assert parse_action("mouse_click(887.2, 68)").args == {"x": 887.2, "y": 68, "button": "left"}
    assert parse_action("mouse_up(47, 252, 'right')").text() == "mouse_up(47, 252, button='right')"
    assert parse_action("mouse_drag_and_drop(10.7, 325, 235.6, 24.54)").args["to_y"] == 24.54
    assert parse_action("mouse_upload_file(132.1, 547, 'r.pdf')").args == {"x": 132.1, "y": 547, "file": "r.pdf"}
    assert parse_action("send_msg_to_user('It was built in 1751.')").args == {"text": "It was built in 1751."}
    assert parse_action("report_infeasible('no email field')").args == {"reason": "no email field"}
    # The defaults are fresh each time (a caller that changes one list changes no other action).
    parse_action("click('1')").args["modifiers"].append("Shift")
    assert parse_action("click('1')").args["modifiers"] == []


def test_wrong_arguments_are_refused_with_the_reason():
    assert parse_action("click('3', modifiers=['Hyper'])").startswith("click: modifiers must be a list of 'Alt'")
    assert parse_action("click('3', button='side')").startswith("click: button must be one of 'left'")
    assert parse_action("mouse_click('1', 2)") == "mouse_click: x must be a number, got '1'"
    assert parse_action("mouse_click(1e999, 2)") == "mouse_click: x must be a number, got inf"
    assert parse_action("mouse_move(1)") == "mouse_move() missing required argument(s): y"
    assert parse_action("upload_file('3', 5)").startswith("upload_file: file must be a file name")
    assert parse_action("press('3', 13)") == "press: key_comb must be a string, got 13"
    assert parse_action("drag_and_drop('3', None)").startswith("drag_and_drop: to_bid must be a string")
    assert parse_action("report_infeasible()") == "report_infeasible() missing required argument(s): reason"


# -- the real browser -----------------------------------------------------------------------
@pytest.fixture(scope="module")
def sites():
    if PROBLEMS:
        pytest.skip("web prerequisites missing")
    from agentworld.envs.web import Sites

    with Sites() as s:
        yield s


@pytest.fixture(scope="module")
def env(sites):
    from agentworld.envs.web import WebEnv

    e = WebEnv(sites=sites)
    yield e
    e.close()


@browser
def test_end_key_is_observed_where_the_smooth_scroll_ends(env):
    env.reset(seed=0, options={"start_url": "http://docs.test/library/json.html"})
    end = env.step("keyboard_press('End')")
    after = env.step("noop(300)").observation
    assert end.info["settled"] is True
    assert scroll_y(end.observation) == scroll_y(after) > 10_000  # the bottom, not a point on the way
    scroll = header(end.observation)["Scroll"]  # "x=0 y=11473 of page 1280x12193, viewport 1280x720 ..."
    height, viewport = int(scroll.split(" of page ")[1].split("x")[1].split(",")[0]), 720
    assert scroll_y(end.observation) == height - viewport
    home = env.step("keyboard_press('Home')")
    assert scroll_y(home.observation) == 0 == scroll_y(env.step("noop(300)").observation)
    wheel = env.step("scroll(0, 3000)")
    assert scroll_y(wheel.observation) == scroll_y(env.step("noop(300)").observation) == 3000


@browser
def test_a_page_that_never_settles_is_still_observed(env):
    busy = page("<title>busy</title><p>ticking</p><script>"
                "setInterval(() => document.body.appendChild(document.createElement('i')), 5)</script>")
    env.reset(seed=0, options={"start_url": busy})
    t0 = time.monotonic()
    res = env.step("noop()")
    assert res.info["settled"] is False and header(res.observation)["Title"] == "busy"
    assert time.monotonic() - t0 < env.settle_timeout_ms / 1000 + 3  # bounded: the budget plus one observation
    quiet = env.reset(seed=0, options={"start_url": page("<title>quiet</title><p>still</p>")})
    assert quiet.info["settled"] is True and env.step("noop()").info["settled"] is True


@browser
def test_press_enter_in_a_miniwob_field_submits_its_form(env):
    """guess-number: a number field in a form; Enter submits it (no click on Submit)."""
    obs = env.reset(seed=3, options={"miniwob": "guess-number"}).observation
    from agentworld.envs.web.tasks import find

    field = find(obs, "spinbutton")
    lo, hi, res = 0, 9, None
    for _ in range(5):
        guess = (lo + hi) // 2
        env.step(f"fill({field!r}, '{guess}')")
        res = env.step(f"press({field!r}, 'Enter')")
        assert res.info["action"] == "press" and not res.info["is_error"]
        if res.terminated:
            break
        assert "Waiting for your guess" not in res.observation
        if "StaticText 'The number is higher than'" in res.observation:
            lo = guess + 1
        else:
            assert "StaticText 'The number is lower than'" in res.observation
            hi = guess - 1
    assert res is not None and res.terminated and res.info["miniwob_reward"] > 0


DND = """<title>dnd</title>
<div draggable="true" id="card" role="button" aria-label="Card" style="width:80px;height:40px;background:#ccc">Card</div>
<div id="bin" role="region" aria-label="Bin" style="margin-top:40px;width:200px;height:100px;border:1px solid">Bin</div>
<p role="status" aria-label="log" id="log">nothing dropped</p>
<script>
card.addEventListener('dragstart', e => e.dataTransfer.setData('text/plain', 'card'));
bin.addEventListener('dragover', e => e.preventDefault());
bin.addEventListener('drop', e => { e.preventDefault(); log.textContent = 'dropped ' + e.dataTransfer.getData('text/plain'); });
</script>"""


@browser
def test_drag_and_drop_by_ids_and_by_coordinates(env):
    from agentworld.envs.web.tasks import find

    obs = env.reset(seed=0, options={"start_url": page(DND)}).observation
    assert events(obs) == "nothing dropped"
    res = env.step(f"drag_and_drop({find(obs, 'button', 'Card')!r}, {find(obs, 'region', 'Bin')!r})")
    assert not res.info["is_error"] and events(res.observation) == "dropped card"
    # MiniWoB's drag-box (jQuery UI draggables, no ids in the tree): the small box dragged
    # onto the centre of the large one, then Submit.
    obs = env.reset(seed=5, options={"miniwob": "drag-box"}).observation

    def centre(sel: str) -> tuple[float, float]:
        box = env._browser.call(lambda: env._page().locator(sel).bounding_box())
        return box["x"] + box["width"] / 2, box["y"] + box["height"] / 2

    (sx, sy), (lx, ly) = centre("#draggableSmall"), centre("#draggableLarge")
    moved = env.step(f"mouse_drag_and_drop({sx}, {sy}, {lx}, {ly})")
    assert not moved.info["is_error"] and centre("#draggableSmall") == pytest.approx((lx, ly), abs=1)
    done = env.step(f"click({find(obs, 'button', 'Submit')!r})")
    assert done.terminated and done.info["miniwob_reward"] > 0


MOUSE = """<title>mouse</title><style>body { margin: 0 } #pad { position: absolute; left: 100px; top: 100px;
width: 200px; height: 100px; background: #eee }</style>
<div id="pad" role="button" aria-label="Pad"></div>
<p role="status" aria-label="log" id="log" style="margin-top: 260px">none</p>
<script>
const seen = [];
const say = e => { seen.push(`${e.type} ${e.button} ${e.clientX},${e.clientY}` + (e.shiftKey ? ' shift' : '')
                             + (e.altKey ? ' alt' : '') + (e.ctrlKey ? ' ctrl' : ''));
                   log.textContent = seen.slice(-3).join(' | '); };
for (const t of ['mousedown', 'mouseup', 'click', 'dblclick', 'auxclick', 'contextmenu'])
  pad.addEventListener(t, e => { if (t === 'contextmenu') e.preventDefault(); say(e); });
pad.addEventListener('mousemove', e => { seen.push(`move ${e.clientX},${e.clientY}`); log.textContent = seen.at(-1); });
</script>"""


@browser
def test_coordinate_mouse_actions(env):
    env.reset(seed=0, options={"start_url": page(MOUSE)})
    assert events(env.step("mouse_move(120, 130)").observation) == "move 120,130"
    assert events(env.step("mouse_click(150, 125)").observation) == (
        "mousedown 0 150,125 | mouseup 0 150,125 | click 0 150,125")
    assert events(env.step("mouse_click(160, 140, 'right')").observation) == (
        "contextmenu 2 160,140 | mouseup 2 160,140 | auxclick 2 160,140")
    assert events(env.step("mouse_dblclick(170, 150)").observation).endswith(
        "mouseup 0 170,150 | click 0 170,150 | dblclick 0 170,150")
    assert events(env.step("mouse_down(180, 160, 'middle')").observation).endswith("mousedown 1 180,160")
    assert events(env.step("mouse_up(190, 170, 'middle')").observation).endswith(
        "mouseup 1 190,170 | auxclick 1 190,170")
    outside = env.step("mouse_click(900, 600)")  # nothing there: the page is the same, no error
    assert not outside.info["is_error"] and events(outside.observation).endswith("auxclick 1 190,170")


@browser
def test_click_modifiers_and_buttons_on_elements(env):
    from agentworld.envs.web.tasks import find

    obs = env.reset(seed=0, options={"start_url": page(MOUSE)}).observation
    pad = find(obs, "button", "Pad")
    assert events(env.step(f"click({pad!r}, modifiers=['Shift'])").observation).endswith("click 0 200,150 shift")
    assert events(env.step(f"click({pad!r}, 'middle')").observation).endswith("auxclick 1 200,150")
    assert events(env.step(f"dblclick({pad!r}, 'left', ['Alt', 'Control'])").observation).endswith(
        "dblclick 0 200,150 alt ctrl")
    assert events(env.step(f"dblclick({pad!r})").observation).endswith("dblclick 0 200,150")


UPLOAD = """<title>upload</title><style>body { margin: 0 } #f { position: absolute; left: 20px; top: 20px }</style>
<input type="file" id="f" multiple aria-label="Attach">
<p role="status" aria-label="log" id="log" style="margin-top: 100px">none</p>
<p role="status" aria-label="content" id="content">none</p>
<script>
f.addEventListener('change', async () => {
  log.textContent = [...f.files].map(x => `${x.name}:${x.type}:${x.size}`).join(', ') || 'cleared';
  const texts = [];
  for (const x of f.files) texts.push(await x.text());  // asynchronous: seen by a later observation
  content.textContent = texts.join(' + ') || 'none';
});
</script>"""


@browser
def test_upload_takes_files_from_the_upload_folder_only(env, tmp_path):
    from agentworld.envs.web.tasks import find

    outside = tmp_path / "secret.txt"
    outside.write_text("host secret")
    first = env.reset(seed=0, options={"start_url": page(UPLOAD),
                                       "files": {"notes.txt": "hello", "data/table.csv": b"a,b\n"}})
    obs = first.observation
    assert env.upload_files() == ["data/table.csv", "notes.txt"]
    assert "Files for upload_file: data/table.csv, notes.txt." in env.context().initial_state
    box = find(obs, "button", "Attach")
    res = env.step(f"upload_file({box!r}, 'notes.txt')")
    assert not res.info["is_error"] and events(res.observation) == "notes.txt:text/plain:5"
    both = env.step(f"upload_file({box!r}, ['notes.txt', 'data/table.csv'])")
    uploaded = "notes.txt:text/plain:5, table.csv:text/csv:4"
    assert events(both.observation) == uploaded
    assert events(env.step("noop(200)").observation, "content") == "hello + a,b"
    # A client chooses among the folder's files; it cannot grant itself another path.
    (env.upload_dir / "link.txt").symlink_to("/etc/passwd")
    for name in ("/etc/passwd", "../../../../etc/passwd", str(outside), "link.txt", "."):
        refused = env.step(f"upload_file({box!r}, {name!r})")
        assert refused.info["is_error"], name
        assert refused.observation.startswith(f"Error: upload_file: {name!r} is outside the upload folder"), name
        assert events(refused.observation) == uploaded
        assert "root:" not in refused.observation and "host secret" not in refused.observation
    assert env.step(f"upload_file({box!r}, 'nope.txt')").observation.startswith(
        "Error: upload_file: no file 'nope.txt' in the upload folder ('data/table.csv', 'notes.txt')")
    assert events(env.step(f"upload_file({box!r}, [])").observation) == "cleared"
    at = env.step("mouse_upload_file(40, 30, 'data/table.csv')")
    assert not at.info["is_error"] and events(at.observation) == "table.csv:text/csv:4"
    # Each episode gets a fresh folder: the files of the last one are gone.
    folder = env.upload_dir
    env.reset(seed=0, options={"start_url": page(UPLOAD)})
    assert env.upload_files() == [] and not folder.exists()
    assert env.step(f"upload_file({box!r}, 'notes.txt')").observation.startswith(
        "Error: upload_file: no file 'notes.txt' in the upload folder (it is empty)")


@browser
def test_messages_to_the_user_are_recorded_and_infeasible_ends_the_episode(env):
    from agentworld.envs.record import RecordTurns

    rec = RecordTurns(env, drop_unchanged=True)
    first = rec.reset(seed=0, options={"start_url": page("<title>q</title><p>The city was built in 1751.</p>")})
    sent = rec.step("send_msg_to_user('It was built in 1751.')")
    assert sent.observation.startswith("Message to user: 'It was built in 1751.'\nURL: data:text/html,")
    assert sent.observation.split("\n", 1)[1] == first.observation  # the page itself did not change
    assert not sent.terminated and sent.info["message_to_user"] == "It was built in 1751."
    assert len(rec.turns) == 1 and rec.turns[0].metadata["message_to_user"] == "It was built in 1751."
    end = rec.step("report_infeasible('There is no email field on this page.')")
    assert end.terminated and end.reward == 0.0
    assert end.observation.startswith("Reported infeasible: 'There is no email field on this page.'\nURL: ")
    assert end.info["infeasible"] == "There is no email field on this page."
    assert env.chat == [{"role": "assistant", "message": "It was built in 1751."},
                        {"role": "infeasible", "message": "There is no email field on this page."}]
    assert [t.metadata.get("infeasible") for t in rec.turns] == [None, "There is no email field on this page."]
    with pytest.raises(EpisodeOver):
        env.step("noop()")
    rec.reset(seed=0, options={"start_url": page("<title>q</title>")})
    assert env.chat == []
