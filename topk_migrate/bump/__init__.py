"""`topk-migrate bump`: what a kernel version bump does to a fork's call sites.

signatures.py reads a release's FlashMLA wrapper statically (no import, no GPU); sources.py
finds the release (NAME==VER, a wheel, a directory) and caches what was read by wheel hash;
diff.py types the changes between two releases; bind.py binds each call site of the fork
against both signatures; rules.py holds the migration rules that sharpen a verdict.
"""
