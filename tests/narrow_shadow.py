"""pytest plugin (-p narrow_shadow): every engine run in a test is repeated on the narrowed source,
and by the rules' quick classifiers (api.quick_sites) where they answer.

Loaded by tests/test_audit_narrow.py around the engine's own tests, so narrowing is
checked on every source they make up. Each comparison is appended to the JSON-lines
file named by $NARROW_SHADOW_LOG as {"same": bool, "narrowed": bool, "quick": bool, ...}.
"""
import json
import os

import topk_migrate.api as api
from topk_migrate import guard, narrow, rules

_real = api.migrate_source


def _log(entry):
    with open(os.environ["NARROW_SHADOW_LOG"], "a") as f:
        f.write(json.dumps(entry) + "\n")


def _narrowed(source, metadata=(), enable=(), disable=()):
    """The source narrowed for the rules this run enables, as api.process_file narrows it."""
    site_rules = [r for r in rules.enabled(enable, disable) if r.has_sites]
    names = tuple(e for r in site_rules for e in r.entry_points)
    return narrow.narrow(source, "parse", names, params=tuple(r.param for r in site_rules))


def _shadow(source, path="<string>", kernel=None, *args, **kwargs):
    m = _real(source, path, kernel, *args, **kwargs)
    small = _narrowed(source, *args, **kwargs)
    if small is None:
        _log({"same": True, "narrowed": False})
        return m
    try:
        other = [] if small == narrow.NOTHING else _real(small, path, kernel, *args, **kwargs).sites
    except Exception as e:  # noqa: BLE001 - any difference is the finding
        other = f"raised {type(e).__name__}: {e}"
    same = other == m.sites
    entry = {"same": same, "narrowed": True, "quick": False}
    if not same:
        entry.update(source=source, full=[s.to_dict() for s in m.sites],
                     narrowed_sites=other if isinstance(other, str) else [s.to_dict() for s in other])
    elif small != narrow.NOTHING:  # and what audit reports without the engine, where it answers
        quick = _quick(small, path, kernel, *args, **kwargs)
        entry["quick"] = quick is not None
        if quick is not None and quick != m.sites:
            entry.update(same=False, source=source, full=[s.to_dict() for s in m.sites],
                         quick_sites=[s.to_dict() for s in quick])
    _log(entry)
    return m


def _quick(small, path, kernel, metadata=(), enable=(), disable=()):
    try:
        tree = guard.parse_checked(small, path)
    except Exception:  # noqa: BLE001 - the engine's own verdict on it stands
        return None
    if guard.needs_isolation(tree):
        return None
    return api.quick_sites(small, tree, path, kernel, enable, disable)


def pytest_configure(config):
    api.migrate_source = _shadow
