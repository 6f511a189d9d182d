"""A stand-in ``adb`` executable for the android tests: no machine of ours has a device.

:func:`fake_adb` writes a small Python script named ``adb`` that answers the commands the
recorder sends the way adb and a device answer them (``devices``, ``getprop``, ``wm size``,
``pm list packages``, ``cmd package resolve-activity``, ``uiautomator dump`` + ``exec-out
cat``) and serves the given hand-made uiautomator dumps in order: each dump after the
device received input (``input ...`` or ``am start``) serves the next screen. Every
command it receives is appended to ``log`` (one JSON list of arguments a line), so a test
checks what reached the "device". The screens are hand-made: nothing here was recorded.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

SERIAL = "emulator-5554"

_SCRIPT = r'''
import json, sys
from pathlib import Path
STATE = Path(__STATE__)
cfg = json.loads((STATE / "config.json").read_text())
args = sys.argv[1:]
with (STATE / "log.jsonl").open("a") as fh:
    fh.write(json.dumps(args) + "\n")
if args[:1] == ["devices"]:
    print("List of devices attached")
    for serial, state in cfg["devices"]:
        print(f"{serial}\t{state}")
    print()
    sys.exit(0)
if args[:1] != ["-s"] or args[1] not in dict(cfg["devices"]):
    sys.stderr.write("adb: device not found\n")
    sys.exit(1)
rest = args[2:]
pos_file = STATE / "pos.json"
pos = json.loads(pos_file.read_text()) if pos_file.exists() else {"index": -1, "dirty": False}
def save():
    pos_file.write_text(json.dumps(pos))
if rest[:1] == ["exec-out"] and rest[1:2] == ["cat"]:
    screens = cfg["screens"]
    sys.stdout.write(Path(screens[max(0, min(pos["index"], len(screens) - 1))]).read_text())
    sys.exit(0)
if rest[:1] != ["shell"] or len(rest) != 2:
    sys.stderr.write(f"fake adb: unsupported command {rest}\n")
    sys.exit(1)
cmd = rest[1]
props = {"ro.build.version.release": "14", "ro.build.version.sdk": "34",
         "ro.product.model": "sdk_gphone64_x86_64", "ro.product.manufacturer": "Google"}
if cmd.startswith("getprop "):
    print(props.get(cmd.split(" ", 1)[1].strip("'"), ""))
elif cmd.startswith("uiautomator dump"):
    if pos["dirty"] or pos["index"] < 0:
        pos["index"] += 1
        pos["dirty"] = False
        save()
    print("UI hierchary dumped to: " + cmd.split()[-1])
elif cmd == "wm size":
    print("Physical size: 1080x2400")
elif cmd == "pm list packages":
    print("\n".join("package:" + p for p in cfg["packages"]))
elif cmd.startswith("cmd package resolve-activity"):
    pkg = cmd.split()[-1].strip("'")
    if pkg in cfg["packages"]:
        print("priority=0 preferredOrder=0 match=0x108000 specificIndex=-1 isDefault=false")
        print(pkg + "/.Main")
    else:
        print("No activity found")
elif cmd.startswith(("input ", "am start")):
    if cfg.get("fail_input"):
        sys.stderr.write("error: device offline\n")
        sys.exit(1)
    pos["dirty"] = True
    save()
else:
    sys.stderr.write(f"fake adb: unsupported shell command {cmd!r}\n")
    sys.exit(1)
'''


def fake_adb(folder: Path, screens: list[Path], *, devices: list[tuple[str, str]] | None = None,
             packages: tuple[str, ...] = ("com.android.deskclock", "com.android.settings"),
             fail_input: bool = False) -> Path:
    """Write the stand-in ``adb`` into ``folder`` (its state next to it); returns its path."""
    folder.mkdir(parents=True, exist_ok=True)
    cfg = {"devices": devices if devices is not None else [(SERIAL, "device")],
           "screens": [str(p) for p in screens], "packages": list(packages), "fail_input": fail_input}
    (folder / "config.json").write_text(json.dumps(cfg))
    exe = folder / "adb"
    exe.write_text(f"#!{sys.executable}\n" + _SCRIPT.replace("__STATE__", repr(str(folder))))
    exe.chmod(0o755)
    return exe


def adb_log(folder: Path) -> list[list[str]]:
    """Every command the stand-in received, in order."""
    path = folder / "log.jsonl"
    return [json.loads(ln) for ln in path.read_text().splitlines()] if path.exists() else []


def device_commands(folder: Path) -> list[str]:
    """The input and launch commands that reached the device (``input tap 540 2124``...)."""
    return [a[-1] for a in adb_log(folder) if a[:1] == ["-s"] and a[2:3] == ["shell"]
            and a[-1].startswith(("input ", "am start"))]
