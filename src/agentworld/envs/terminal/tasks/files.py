"""File and text processing, searching, and archives."""

from __future__ import annotations

import json
import random

from agentworld.envs.terminal.task import TerminalTask, cmd
from agentworld.envs.terminal.tasks import TEMPLATES
from agentworld.envs.terminal.tasks._words import CITIES, EXTS, FRUITS, NAMES, csv_rows, ident, log_lines

T = TerminalTask
add = TEMPLATES.add


@add("count-words", "text")
def count_words(rng: random.Random) -> T:
    words = [rng.choice(FRUITS) for _ in range(rng.randrange(30, 60))]
    text = "\n".join(" ".join(words[i:i + 6]) for i in range(0, len(words), 6)) + "\n"
    top = rng.choice(FRUITS)
    return T("count-words", f"Find how often each word occurs in notes.txt and how often '{top}' appears.",
             files={"notes.txt": text}, category="text", actions=[
                 cmd("ls -l"), cmd("wc -l -w notes.txt"), cmd("head -n 3 notes.txt"),
                 cmd("tr ' ' '\\n' < notes.txt | sort | uniq -c | sort -rn"),
                 cmd(f"grep -o -w {top} notes.txt | wc -l")])


@add("grep-logs", "text")
def grep_logs(rng: random.Random) -> T:
    lines = log_lines(rng, rng.randrange(25, 45))
    return T("grep-logs", "Investigate app.log: how many errors are there and which services produced them?",
             files={"logs/app.log": "\n".join(lines) + "\n"}, category="text", actions=[
                 cmd("ls logs"), cmd("tail -n 5 logs/app.log"), cmd("grep -c ERROR logs/app.log"),
                 cmd("grep ERROR logs/app.log | awk '{print $4}' | sort | uniq -c"),
                 cmd("grep -n WARN logs/app.log | head -n 3")])


@add("csv-sum", "text")
def csv_sum(rng: random.Random) -> T:
    rows = csv_rows(rng, rng.randrange(8, 16))
    body = "name,city,amount\n" + "".join(f"{n},{c},{a}\n" for n, c, a in rows)
    city = rows[0][1]
    return T("csv-sum", f"Compute the total amount in sales.csv, and the total for {city}.",
             files={"sales.csv": body}, category="text", actions=[
                 cmd("head -n 4 sales.csv"), cmd("wc -l sales.csv"),
                 cmd("awk -F, 'NR>1 {s+=$3} END {print s}' sales.csv"),
                 cmd(f"awk -F, '$2==\"{city}\" {{s+=$3}} END {{print \"{city}:\", s}}' sales.csv"),
                 cmd("cut -d, -f2 sales.csv | tail -n +2 | sort | uniq -c | sort -rn")])


@add("sed-replace", "text")
def sed_replace(rng: random.Random) -> T:
    old, new = rng.sample(NAMES, 2)
    port = rng.randrange(3000, 9000)
    conf = f"owner={old}\nport={port}\nhost=localhost\nbackup_owner={old}\ndebug=false\n"
    return T("sed-replace", f"In config.ini replace the owner {old} with {new} everywhere and enable debug.",
             files={"config.ini": conf}, category="text", actions=[
                 cmd("cat config.ini"), cmd(f"grep -n {old} config.ini"),
                 cmd(f"sed -i 's/{old}/{new}/g; s/^debug=false/debug=true/' config.ini"),
                 cmd("cat config.ini"), cmd(f"grep -c {old} config.ini")])


@add("find-files", "files")
def find_files(rng: random.Random) -> T:
    files = {}
    for i in range(rng.randrange(8, 14)):
        d = rng.choice(["src", "src/lib", "docs", "data", "tmp"])
        files[f"{d}/{rng.choice(FRUITS)}{i}{rng.choice(EXTS)}"] = "x" * rng.randrange(10, 3000) + "\n"
    ext = rng.choice([".txt", ".log", ".py"])
    return T("find-files", f"List all {ext} files in the project and find the files larger than 1 KB.",
             files=files, category="files", actions=[
                 cmd("tree -a ."), cmd(f"find . -name '*{ext}' | sort"), cmd("find . -type f -size +1k | sort"),
                 cmd("du -sh *"), cmd("find . -type f | wc -l")])


@add("head-tail-cut", "text")
def head_tail_cut(rng: random.Random) -> T:
    rows = "\n".join(f"{i}:{rng.choice(NAMES)}:{rng.randrange(1000, 2000)}:/home/{rng.choice(NAMES)}:/bin/bash"
                     for i in range(1, 21)) + "\n"
    k = rng.randrange(3, 8)
    return T("head-tail-cut", f"Show the user names on lines {k} to {k + 4} of users.db.",
             files={"users.db": rows}, category="text", actions=[
                 cmd("head -n 3 users.db"), cmd(f"sed -n '{k},{k + 4}p' users.db"),
                 cmd(f"sed -n '{k},{k + 4}p' users.db | cut -d: -f2"), cmd("tail -n 2 users.db | cut -d: -f1,3"),
                 cmd("cut -d: -f2 users.db | sort -u | wc -l")])


@add("diff-files", "text")
def diff_files(rng: random.Random) -> T:
    a = [f"{f}={rng.randrange(1, 9)}" for f in rng.sample(FRUITS, 6)]
    b = list(a)
    b[2] = b[2].split("=")[0] + "=0"
    b.insert(4, f"{rng.choice(CITIES).lower()}=1")
    del b[0]
    return T("diff-files", "Compare old.cfg and new.cfg and describe what changed; save a patch.",
             files={"old.cfg": "\n".join(a) + "\n", "new.cfg": "\n".join(b) + "\n"}, category="text", actions=[
                 cmd("diff old.cfg new.cfg"), cmd("echo $?"), cmd("diff -u old.cfg new.cfg > change.patch; cat change.patch"),
                 cmd("cmp old.cfg old.cfg && echo same"), cmd("wc -l change.patch")])


@add("jq-json", "text")
def jq_json(rng: random.Random) -> T:
    items = [{"id": i, "name": rng.choice(FRUITS), "price": round(rng.uniform(0.5, 9.5), 2),
              "stock": rng.randrange(0, 40)} for i in range(1, rng.randrange(5, 9))]
    doc = json.dumps({"store": rng.choice(CITIES), "items": items}, indent=2) + "\n"
    return T("jq-json", "Use jq on inventory.json: list item names, the out-of-stock items and the total stock.",
             files={"inventory.json": doc}, category="text", actions=[
                 cmd("jq '.store' inventory.json"), cmd("jq -r '.items[].name' inventory.json"),
                 cmd("jq '.items[] | select(.stock == 0) | .name' inventory.json"),
                 cmd("jq '[.items[].stock] | add' inventory.json"),
                 cmd("jq '.items | length' inventory.json"), cmd("jq '.items[0]' inventory.json")])


@add("rename-batch", "files")
def rename_batch(rng: random.Random) -> T:
    n = rng.randrange(4, 8)
    files = {f"photos/IMG_{rng.randrange(1000, 9999)}_{i}.JPG": "jpeg\n" for i in range(n)}
    return T("rename-batch", "Rename every .JPG file in photos/ to lower-case .jpg with a shell loop.",
             files=files, category="files", actions=[
                 cmd("ls photos"), cmd("cd photos"),
                 cmd('for f in *.JPG; do mv "$f" "${f%.JPG}.jpg"; done'), cmd("ls"), cmd("ls *.JPG"), cmd("cd ..")])


@add("disk-usage", "files")
def disk_usage(rng: random.Random) -> T:
    setup = "".join(f"mkdir -p /workspace/cache/{s} && head -c {rng.randrange(20, 900)}K /dev/zero > /workspace/cache/{s}/blob.bin\n"
                    for s in rng.sample(["img", "pkg", "tmp", "logs", "dl"], 3))
    return T("disk-usage", "Find which cache directory uses the most space and free it.",
             setup=setup, category="files", actions=[
                 cmd("df -h /workspace"), cmd("du -sh cache/* | sort -h"), cmd("du -s cache/* | sort -n | tail -n 1"),
                 cmd("rm -rf \"$(du -s cache/* | sort -n | tail -n 1 | cut -f2)\""), cmd("du -sh cache")])


@add("tar-archive", "archives")
def tar_archive(rng: random.Random) -> T:
    name = ident(rng)
    files = {f"{name}/{f}.txt": f"{f} notes\n" * rng.randrange(1, 5) for f in rng.sample(FRUITS, 4)}
    return T("tar-archive", f"Create a compressed tarball of {name}/, check its contents and extract it into restore/.",
             files=files, category="archives", actions=[
                 cmd(f"tar -czf {name}.tar.gz {name}"), cmd(f"ls -lh {name}.tar.gz | awk '{{print $5, $9}}'"),
                 cmd(f"tar -tzf {name}.tar.gz"), cmd(f"mkdir restore && tar -xzf {name}.tar.gz -C restore"),
                 cmd(f"diff -r {name} restore/{name} && echo identical")])


@add("zip-unzip", "archives")
def zip_unzip(rng: random.Random) -> T:
    files = {f"report/{c.lower()}.csv": "a,b\n1,2\n" for c in rng.sample(CITIES, 3)}
    return T("zip-unzip", "Zip the report folder, list the archive, then unzip one file elsewhere.",
             files=files, category="archives", actions=[
                 cmd("zip -r report.zip report"), cmd("unzip -l report.zip"),
                 cmd(f"unzip -o report.zip {next(iter(files))} -d /tmp/out"), cmd("ls -R /tmp/out"),
                 cmd("unzip report.zip missing.csv")])


@add("gzip-checksum", "archives")
def gzip_checksum(rng: random.Random) -> T:
    data = "".join(f"{rng.randrange(10**6)}\n" for _ in range(200))
    return T("gzip-checksum", "Compress data.txt with gzip and verify the round trip with sha256 checksums.",
             files={"data.txt": data}, category="archives", actions=[
                 cmd("sha256sum data.txt | tee data.sha256"), cmd("gzip -k data.txt && ls -l data.txt*"),
                 cmd("zcat data.txt.gz | head -n 3"), cmd("rm data.txt && gunzip data.txt.gz"),
                 cmd("sha256sum -c data.sha256")])


@add("sort-dedupe", "text")
def sort_dedupe(rng: random.Random) -> T:
    emails = [f"{rng.choice(NAMES)}@{rng.choice(['example.com', 'mail.org', 'corp.net'])}" for _ in range(25)]
    return T("sort-dedupe", "Produce a sorted, de-duplicated list of the e-mail addresses and count them per domain.",
             files={"emails.txt": "\n".join(emails) + "\n"}, category="text", actions=[
                 cmd("wc -l emails.txt"), cmd("sort -u emails.txt > unique.txt && wc -l unique.txt"),
                 cmd("cut -d@ -f2 unique.txt | sort | uniq -c"), cmd("sort emails.txt | uniq -d | head -n 5")])
