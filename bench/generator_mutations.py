"""The generator's mutation check, as a command: switches off one allowlist or identity check at a time and
runs the generator's programs until one goes wrong (results/generator-mutations.md).

    python3 bench/generator_mutations.py [NAME ...] [--seed 25] [--budget 20000] [--skip-caught] [--list]

The code is tests/adversarial/mutations.py: test code, which the tool does not read as a project's code (its
monkeypatches, by names computed at run time on modules it imports by name, would read as a rebinding of the
kernel for any backend in this checkout).
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests"))
from adversarial.mutations import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
