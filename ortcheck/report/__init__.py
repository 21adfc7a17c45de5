"""Conformance results: collected from a pytest run, shaped into a matrix, written to report/."""
from ortcheck.report.collector import Outcome, ResultCollector
from ortcheck.report.matrix import ConformanceMatrix

__all__ = ["Outcome", "ResultCollector", "ConformanceMatrix"]
