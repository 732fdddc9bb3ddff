"""The `__main__.py` of a zipapp bundle: unpack once per content hash, then run the entry point.

This file is copied into each `.pyz` (it runs there, on the standard library alone). It replaces shiv's
bootstrap, which names its unpack folder by the file's name and build (a rename or a rebuild of the same
bytes unpacks again), needs a writable home before any of our code runs, never removes an old unpack, and
shows a traceback for Ctrl-C during the first unpack. Here:

- the Python version the bundle's compiled modules were built for is checked first, with a clear message;
- the unpack folder is `<cache>/<name>-<content hash>` (cache: `$BONSAI_BUNDLE_CACHE`, else
  `$XDG_CACHE_HOME/bonsai-bundles`, else `~/.cache/bonsai-bundles`, else a folder of this user's in the
  temporary directory when those cannot be written), written whole into a temporary folder and renamed in,
  so an interrupted unpack leaves nothing half written; a file of it deleted or truncated later is noticed
  (sizes against the manifest) and the unpack is made again;
- unpacks of other builds of the same bundle are removed once no running process holds them.
"""

import importlib
import json
import os
import shutil
import sys
import tempfile
import zipfile

MANIFEST = "bonsai-bundle.json"
SITE = "site-packages/"


def _say(name, text):
    print(f"{name}: {text}", file=sys.stderr, flush=True)


def _writable_folder(path):
    try:
        os.makedirs(path, exist_ok=True)
        probe = tempfile.NamedTemporaryFile(dir=path, prefix=".probe-")
        probe.close()
        return True
    except OSError:
        return False


def cache_root(name):
    """Where unpacks live: the first folder of the list above that can be written."""
    explicit = os.environ.get("BONSAI_BUNDLE_CACHE")
    if explicit:
        return explicit
    xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    preferred = os.path.join(xdg, "bonsai-bundles")
    if _writable_folder(preferred):
        return preferred
    fallback = os.path.join(tempfile.gettempdir(), f"bonsai-bundles-{os.getuid() if hasattr(os, 'getuid') else 0}")
    _say(name, f"{preferred} cannot be written; unpacking into {fallback}")
    return fallback


def _complete(target, sizes):
    """The unpack at `target` is whole: its marker is there and every file has the size the manifest says."""
    if not os.path.exists(os.path.join(target, ".complete")):
        return False
    for rel, size in sizes.items():
        try:
            if os.stat(os.path.join(target, rel)).st_size != size:
                return False
        except OSError:
            return False
    return True


def _unpack(archive, target, name, sizes):
    parent = os.path.dirname(target)
    os.makedirs(parent, exist_ok=True)
    work = tempfile.mkdtemp(prefix=".unpacking-", dir=parent)
    try:
        with zipfile.ZipFile(archive) as zf:
            for info in zf.infolist():
                if not info.filename.startswith(SITE) or info.is_dir():
                    continue
                dest = os.path.join(work, info.filename)
                os.makedirs(os.path.dirname(dest), exist_ok=True)
                with zf.open(info) as src, open(dest, "wb") as out:
                    shutil.copyfileobj(src, out, 1 << 20)
                mode = (info.external_attr >> 16) & 0o777
                if mode:
                    os.chmod(dest, mode)
        open(os.path.join(work, ".complete"), "w").close()
        if os.path.exists(target):  # a damaged earlier unpack: set it aside, then remove it
            aside = tempfile.mkdtemp(prefix=".damaged-", dir=parent)
            os.rename(target, os.path.join(aside, "old"))
            shutil.rmtree(aside, ignore_errors=True)
        try:
            os.rename(work, target)
        except OSError:
            if not _complete(target, sizes):  # another process won the race with a whole unpack, or not
                raise
            shutil.rmtree(work, ignore_errors=True)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise


def _hold(target):
    """A shared lock on the unpack while this process runs (the cleanup of other builds skips held ones)."""
    try:
        import fcntl
    except ImportError:  # no flock on this platform: nothing is ever removed, nothing breaks
        return None
    handle = open(os.path.join(target, ".complete"))
    fcntl.flock(handle, fcntl.LOCK_SH)
    return handle


def _remove_stale(root, name, keep):
    try:
        import fcntl
    except ImportError:
        return
    for entry in os.listdir(root):
        path = os.path.join(root, entry)
        build = entry[len(name) + 1:]
        if path == keep or not entry.startswith(name + "-") or len(build) != 16 or not os.path.isdir(path):
            continue
        if any(c not in "0123456789abcdef" for c in build):
            continue
        marker = os.path.join(path, ".complete")
        try:
            handle = open(marker)
        except OSError:
            continue
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:  # another process runs from it
            handle.close()
            continue
        aside = tempfile.mkdtemp(prefix=".stale-", dir=root)
        try:
            os.rename(path, os.path.join(aside, "old"))
        except OSError:
            pass
        handle.close()
        shutil.rmtree(aside, ignore_errors=True)


def main():
    archive = os.path.dirname(os.path.abspath(__file__))
    with zipfile.ZipFile(archive) as zf:
        manifest = json.loads(zf.read(MANIFEST))
    name = manifest["name"]
    want = manifest["python"]
    here = f"{sys.version_info[0]}.{sys.version_info[1]}"
    if want != here:
        _say(name, f"error: this bundle was built for Python {want} and this is Python {here} ({sys.executable}): "
                   f"run it with python{want}")
        sys.exit(2)
    root = cache_root(name)
    target = os.path.join(root, f"{name}-{manifest['content'][:16]}")
    sizes = manifest["sizes"]
    try:
        if not _complete(target, sizes):
            if os.path.exists(target):
                _say(name, f"{target} is damaged (a file was removed or changed); unpacking again")
            _unpack(archive, target, name, sizes)
    except KeyboardInterrupt:
        _say(name, "interrupted while unpacking; nothing was left half written")
        sys.exit(130)
    except OSError as exc:
        _say(name, f"error: cannot unpack into {root}: {exc.strerror or exc} (set BONSAI_BUNDLE_CACHE to a "
                   "writable folder)")
        sys.exit(2)
    held = _hold(target)
    _remove_stale(root, name, target)
    sys.path.insert(0, os.path.join(target, SITE))
    module, _, function = manifest["entry"].partition(":")
    entry = getattr(importlib.import_module(module), function)
    try:
        code = entry()
    finally:
        if held is not None:
            held.close()
    sys.exit(code)


if __name__ == "__main__":
    main()
