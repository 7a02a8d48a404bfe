"""Adversarial DSA backends run before and after `apply` against a contract-enforcing stub kernel.

harness.py runs one variant; variants.py holds them (hand-written and template-generated);
generated.py composes more from independent choices; report.py prints the tally that
results/adversarial.md records.

Adding a variant: `add(name, hazard, body)` in variants.py. The body defines `entry(inp)`
(inp: harness.Inputs, whose metadata satisfies the contract for the full batch) and marks each
line holding a kernel use with `# SITE`. The original must run cleanly against the stub, or
the test reports the variant as broken. Use `expect="fixable"` for shapes that must stay fixed,
`expect="reported"` for kernel uses that must be reported `manual`; `legacy_kernel`, `hide`,
`env` and `files` set up the environment it runs in.
"""
