"""Reading a page needs the user's say, asked at use: in a real headless Chromium, no host access at install;
the tab the toolbar button was clicked on can be read (activeTab), another tab cannot until the button
is clicked there; asking for every site needs a user gesture. (Granting every site is not driven here:
Chromium answers `chrome.permissions.request` with a dialog that DevTools cannot click.)
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from .cdp import Chromium

pytestmark = pytest.mark.timeout(300)

EVERY_SITE = json.dumps({"origins": ["http://*/*", "https://*/*"]})
READ = "import('./ui/page_reader.js').then(m => m.readActiveTab()).then(JSON.parse, e => ({error: e.message}))"


def read_once_granted(panel, seconds: float = 30, click: Callable[[], None] | None = None) -> dict:
    """The page reader's answer once the toolbar click's grant has reached the extension (it arrives
    asynchronously: on a loaded machine the first read can come before it), or its last refusal. With
    `click`, the button is clicked again every 3 s while refused, as a person would: a click can be lost."""
    deadline = time.monotonic() + seconds
    clicked = time.monotonic()
    while "error" in (answer := panel.evaluate(READ, await_promise=True)) and time.monotonic() < deadline:
        if click is not None and time.monotonic() - clicked > 3:
            click()
            clicked = time.monotonic()
        time.sleep(0.2)
    return answer


def observe(browser: Chromium, base: str) -> dict:
    """What the side panel may read, step by step: at install, after the toolbar click on a first page, on a
    second page before and after the click there, and when it asks for every site without a gesture."""
    seen: dict = {}
    with browser.side_panel(f"{base}/first.html") as panel:  # the toolbar button clicked on the first page
        panel.wait_for("document.readyState === 'complete'", 60)
        seen["every_site"] = panel.evaluate(f"chrome.permissions.contains({EVERY_SITE})", await_promise=True)
        seen["origins"] = panel.evaluate("chrome.permissions.getAll().then(p => p.origins)", await_promise=True)
        seen["first"] = read_once_granted(panel)
        # the second page, loaded, is now the active tab; Bonsai not clicked there yet
        second_target, second_tab = browser.open_loaded_tab(f"{base}/second.html")
        seen["second_before_click"] = panel.evaluate(READ, await_promise=True)
        browser.click_toolbar_button(second_tab)
        seen["second_after_click"] = read_once_granted(panel, click=lambda: browser.click_toolbar_button(second_tab))
        browser.close_tab(second_target)
        seen["asked_without_gesture"] = panel.evaluate(
            "import('./ui/page_reader.js').then(m => m.allowAllSites()).then(String, e => e.message)", await_promise=True)
        seen["every_site_after"] = panel.evaluate(f"chrome.permissions.contains({EVERY_SITE})", await_promise=True)
    return seen


@pytest.fixture(scope="module")
def pages(model_server) -> str:
    root, base = model_server
    (root / "first.html").write_text("<!doctype html><title>First</title><p>alpha</p>")
    (root / "second.html").write_text("<!doctype html><title>Second</title><p>beta</p>")
    return base


def observe_in_a_new_browser(chromium_binary: str, extension: Path, base: str, profile: Path) -> dict:
    """`observe` in a Chromium of its own, fresh from install: what other tests did in the shared
    browser (its open panel, its tabs, their grants) cannot stand in for the clicks observed here."""
    browser = Chromium(chromium_binary, extension, profile)
    try:
        return observe(browser, base)
    finally:
        browser.close()


def test_pages_are_read_only_where_the_user_clicked_bonsai_and_every_site_is_asked_at_use(
        chromium_binary, extension_dir, pages, tmp_path):
    seen = observe_in_a_new_browser(chromium_binary, extension_dir, pages, tmp_path / "profile")
    assert seen["every_site"] is False and seen["origins"] == [], seen  # nothing at install
    assert seen["first"].get("title") == "First" and "alpha" in seen["first"].get("text", ""), seen
    refused = seen["second_before_click"].get("error", "")
    assert "Bonsai may not read this tab: click the Bonsai toolbar button" in refused, seen
    assert seen["second_after_click"].get("title") == "Second" and "beta" in seen["second_after_click"].get("text", ""), seen
    assert "user gesture" in seen["asked_without_gesture"] and seen["every_site_after"] is False, seen


def test_a_manifest_that_takes_every_site_at_install_is_caught(chromium_binary, extension_dir, pages, tmp_path):
    """Mutation: the optional host permissions moved to `host_permissions` (granted at install)."""
    mutant = tmp_path / "extension"
    shutil.copytree(extension_dir, mutant)
    manifest = json.loads((mutant / "manifest.json").read_text())
    manifest["host_permissions"] = manifest.pop("optional_host_permissions")
    (mutant / "manifest.json").write_text(json.dumps(manifest))
    seen = observe_in_a_new_browser(chromium_binary, mutant, pages, tmp_path / "profile")
    assert seen["every_site"] is True and "beta" in seen["second_before_click"].get("text", ""), seen
