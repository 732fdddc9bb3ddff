"""Lock format 3: each scanned module's facts are recorded exactly (round trip), and a record is
trusted only for the same bytes, Python and scanner."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

from hypothesis import Phase, given, settings
from hypothesis import strategies as st

import bonsai_sync.scan
import bonsai_sync.scan.factcodec as codec
import bonsai_sync.write.lock
from bonsai_sync.cache import scanner_id
from bonsai_sync.plan.files import Plan, PlannedFile
from bonsai_sync.scan import scan
from bonsai_sync.scan.facts import DynamicSite, Facts, ImportFact, Problem, ResourceFact
from bonsai_sync.write.lock import binding, files_of, recorded_scans, render

NAME = st.lists(st.sampled_from(["app", "b_c", "X1", "_p", "ünï"]), min_size=1, max_size=3).map(".".join)
TEXT = st.text(max_size=12)  # quotes, backslashes, control and non-ASCII characters included
NUMBER = st.integers(0, 10**6)
FACTS = st.builds(
    Facts,
    imports=st.lists(st.builds(
        ImportFact, NAME, st.lists(NAME, max_size=3).map(tuple), st.integers(0, 4), NUMBER, NUMBER,
        st.sampled_from(["import", "from", "import_module", "__import__"]), st.booleans(), st.booleans(),
        st.booleans(), st.none() | NAME, st.booleans()), max_size=4).map(tuple),
    resources=st.lists(st.builds(ResourceFact, st.none() | NAME, st.lists(TEXT, max_size=3).map(tuple), NUMBER,
                                 NUMBER, st.booleans()), max_size=2).map(tuple),
    problems=st.lists(st.builds(Problem, st.sampled_from(["syntax", "resource"]), TEXT, NUMBER, NUMBER),
                      max_size=2).map(tuple),
    dynamic=st.lists(st.builds(DynamicSite, NUMBER, NUMBER, TEXT, st.none() | TEXT, st.integers(0, 3),
                               st.none() | NAME, st.booleans()), max_size=2).map(tuple),
    all_names=st.none() | st.lists(TEXT, max_size=3).map(tuple),
    bindings=st.frozensets(TEXT, max_size=4),
    open_names=st.booleans(),
)


def _round_trips(facts: Facts) -> None:
    text = codec.encode(facts)
    assert text.isascii() and text.isprintable() and "'" not in text  # a TOML literal string holds it as is
    assert codec.decode(text) == facts
    assert tomllib.loads(f"scan = '{text}'\n")["scan"] == text


@settings(max_examples=200, derandomize=True, deadline=None)
@given(FACTS)
def test_facts_round_trip_through_the_lock_encoding(facts):
    _round_trips(facts)


def test_an_encoding_that_forgets_a_flag_is_caught(monkeypatch):
    real = codec._import
    monkeypatch.setattr(codec, "_import", lambda f: real(f)[:6] + [real(f)[6] & ~8] + real(f)[7:])  # drops `conditional`
    caught = False
    try:
        settings(max_examples=300, derandomize=True, deadline=None, phases=[Phase.generate])(given(FACTS)(_round_trips))()
    except AssertionError:
        caught = True
    assert caught


def test_real_scans_round_trip(scenario):
    repo = scenario("closure")
    sources = sorted((repo.root / "src").rglob("*.py"))
    assert len(sources) > 20
    for path in sources:
        _round_trips(scan(path.read_text()))


def test_decode_refuses_what_encode_never_writes():
    for text in ("", "[]", '{"x":1}', '{"i":[["a"]]}', '{"i":[["a",[],0,1,1,"import","no"]]}', '{"b":[1]}'):
        try:
            codec.decode(text)
        except ValueError:
            continue
        raise AssertionError(f"decoded {text!r}")


def _lock(repo) -> dict:
    return tomllib.loads(repo.read("out/vendor/bonsai-sync.lock"))


def test_the_lock_records_the_facts_of_each_scanned_module(synced_leaf):
    lock = tomllib.loads(synced_leaf.read("out/leaf/bonsai-sync.lock"))
    assert (lock["format"], lock["scanner"]) == (3, scanner_id())
    assert lock["python"].startswith("3.")
    for entry in lock["file"]:
        source = synced_leaf.root / entry["source"]
        if entry["path"].endswith(".py"):
            tag, _, record = entry["scan"].partition(" ")
            assert tag == binding(entry["sha256"], lock["python"], lock["scanner"])
            assert codec.decode(record) == scan(source.read_text())
        else:
            assert "scan" not in entry


def _count_scans(monkeypatch) -> list[str]:
    parsed: list[str] = []
    real = bonsai_sync.scan.scan
    monkeypatch.setattr(bonsai_sync.scan, "scan", lambda text, *a: parsed.append(text) or real(text, *a))
    return parsed


def test_a_lock_another_scanner_wrote_is_not_trusted(scenario, monkeypatch):
    repo = scenario("verify")
    assert repo.run("--no-cache", "sync").exit_code == 0
    lock = repo.read("out/vendor/bonsai-sync.lock")
    repo.write("out/vendor/bonsai-sync.lock", lock.replace(f'scanner = "{scanner_id()}"', 'scanner = "1-000000000000"'))
    parsed = _count_scans(monkeypatch)
    result = repo.run("--no-cache", "check")
    assert (result.exit_code, result.stdout) == (1, "out/vendor/bonsai-sync.lock: bonsai-sync.lock is out of date\n")
    assert len(parsed) == len([e for e in _lock(repo)["file"] if "scan" in e]) == 3


def test_a_damaged_record_is_parsed_again_and_the_lock_is_out_of_date(scenario, monkeypatch):
    repo = scenario("verify")
    assert repo.run("--no-cache", "sync").exit_code == 0
    entry = next(e for e in _lock(repo)["file"] if e["path"] == "app/helper.py")
    text = repo.read("out/vendor/bonsai-sync.lock")
    repo.write("out/vendor/bonsai-sync.lock", text.replace(f"scan = '{entry['scan']}'", "scan = '{\"i\": 3}'"))
    parsed = _count_scans(monkeypatch)
    result = repo.run("--no-cache", "check")
    assert (result.exit_code, result.stdout) == (1, "out/vendor/bonsai-sync.lock: bonsai-sync.lock is out of date\n")
    assert parsed == [repo.read("src/app/helper.py")]
    assert repo.run("--no-cache", "sync").exit_code == 0
    assert json.loads(next(e for e in _lock(repo)["file"] if e["path"] == "app/helper.py")["scan"].split(" ", 1)[1])
    assert repo.run("--no-cache", "check").exit_code == 0


@settings(max_examples=100, derandomize=True, deadline=None)
@given(st.lists(st.tuples(st.text(min_size=1, max_size=8), st.text(max_size=8), st.booleans(), FACTS), max_size=3))
def test_the_lock_reads_back_what_it_recorded(rows):
    files = tuple(PlannedFile(f"{i}{rel}", source, f"{i:064x}", "module", "", executable, codec.encode(facts))
                  for i, (rel, source, executable, facts) in enumerate(rows))
    plan = Plan("s", "out", files, python="3.11", scanner="2-x")
    data = tomllib.loads(render(plan))
    assert files_of(Path("out"), data) == {f.rel: f for f in files}
    assert recorded_scans(data, "2-x") == {f"{f.sha256}:3.11": f.scan for f in files}
    assert recorded_scans(data, "2-y") == {}


def _merged_lock_verdict(make_repo) -> tuple[int, str]:
    """What a cold check says of a lock git merged from two versions: main.py's `sha256` line from the
    newer one (it now imports d.py), its `scan` line from the older one (it did not)."""
    repo = make_repo({"src/app/main.py": "from . import a\n", "src/app/a.py": "A = 1\n"})
    assert repo.run("--no-cache", "sync").exit_code == 0
    old = {e["path"]: e["scan"] for e in _lock(repo)["file"]}
    repo.write("src/app/main.py", "from . import a, d\n")
    repo.write("src/app/d.py", "D = 1\n")
    assert repo.run("--no-cache", "sync").exit_code == 0
    new = {e["path"]: e["scan"] for e in _lock(repo)["file"]}
    text = repo.read("out/vendor/bonsai-sync.lock")
    repo.write("out/vendor/bonsai-sync.lock", text.replace(f"scan = '{new['app/main.py']}'", f"scan = '{old['app/main.py']}'"))
    result = repo.run("--no-cache", "check")
    return result.exit_code, result.stdout


def test_a_lock_merged_from_two_versions_does_not_lend_one_file_another_s_facts(make_repo):
    assert _merged_lock_verdict(make_repo) == (1, "out/vendor/bonsai-sync.lock: bonsai-sync.lock is out of date\n")


def test_records_trusted_without_their_binding_would_be_caught(make_repo, monkeypatch):
    monkeypatch.setattr(bonsai_sync.write.lock, "binding", lambda sha256, python, scanner: "tag")
    code, stdout = _merged_lock_verdict(make_repo)
    assert (code, stdout) == (1, "out/vendor/app/d.py: extra (not needed by the closure)\n")
