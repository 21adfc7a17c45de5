"""Findings: the expected-failure manifests and everything about them. Low, for the plugin and the
report: :mod:`~ortcheck.findings.manifest` reads and validates a manifest and matches its entries
against test ids, :mod:`~ortcheck.findings.conditions` says where an entry holds (its ``when``) and
:mod:`~ortcheck.findings.failures` what its failure looks like. High, running or serving pytest:
:mod:`~ortcheck.findings.listing` is ``ortcheck findings``, :mod:`~ortcheck.findings.prove` its
``--check`` (each entry's examples fail as recorded), :mod:`~ortcheck.findings.drafts` the drafts of
``--collect-findings``. This file imports nothing, so the low modules pull none of the high ones.
"""
