"""Adversarial DSA backends run before and after `apply` against a contract-enforcing stub kernel.

harness.py runs one variant; variants.py holds them (hand-written and template-generated);
report.py prints the tally that results/adversarial.md records.
"""
