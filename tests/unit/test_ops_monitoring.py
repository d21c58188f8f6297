"""ops/prometheus/alerts.yml and ops/grafana/turngraph.json, validated offline: the
structure Prometheus and Grafana read, and every metric they name is one we export
(tests/integration/test_metrics.py scrapes each of those from real workers)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import yaml

from turngraph.metrics import EXPORTED_METRICS

OPS = Path(__file__).resolve().parents[2] / "ops"
METRIC = re.compile(r"\bturngraph_[a-z_]+")
HISTOGRAM_SUFFIXES = ("_bucket", "_count", "_sum")


def exported_family(sample: str) -> str | None:
    """The exported family a sample name belongs to, or None."""
    if sample in EXPORTED_METRICS:
        return sample
    for suffix in HISTOGRAM_SUFFIXES:
        base = sample.removesuffix(suffix)
        if base != sample and EXPORTED_METRICS.get(base) == "histogram":
            return base
    return None


def _check_expr(expr: str) -> set[str]:
    assert expr.count("(") == expr.count(")"), expr
    assert expr.count("{") == expr.count("}"), expr
    names = set(METRIC.findall(expr))
    assert names, f"names no turngraph metric: {expr}"
    unknown = {n for n in names if exported_family(n) is None}
    assert not unknown, f"not exported: {unknown} in {expr}"
    return {exported_family(n) or n for n in names}


def test_alert_rules_are_well_formed_and_use_exported_metrics() -> None:
    rules_file = yaml.safe_load((OPS / "prometheus" / "alerts.yml").read_text())
    groups = rules_file["groups"]
    assert groups and all(set(g) == {"name", "rules"} for g in groups)
    names: set[str] = set()
    used: set[str] = set()
    for group in groups:
        for rule in group["rules"]:
            assert set(rule) <= {"alert", "expr", "for", "labels", "annotations"}, rule
            assert re.fullmatch(r"Turngraph[A-Za-z]+", rule["alert"]), rule["alert"]
            assert rule["alert"] not in names, f"duplicate alert {rule['alert']}"
            names.add(rule["alert"])
            if "for" in rule:
                assert re.fullmatch(r"\d+[smh]", rule["for"]), rule
            assert rule["labels"]["severity"] in {"warning", "critical"}
            assert rule["annotations"]["summary"] and rule["annotations"]["description"]
            used |= _check_expr(rule["expr"])
    # the operational basics are covered
    for needed in (
        "turngraph_redis_up",
        "turngraph_queue_length",
        "turngraph_queue_dropped_total",
        "turngraph_queue_dead_lettered_total",
        "turngraph_recall_seconds",
        "turngraph_recall_change_stream_lag_seconds",
        "turngraph_recall_degraded_total",
    ):
        assert needed in used, needed


def test_grafana_dashboard_is_well_formed_and_uses_exported_metrics() -> None:
    dashboard = json.loads((OPS / "grafana" / "turngraph.json").read_text())
    assert dashboard["uid"] and dashboard["title"] and dashboard["schemaVersion"] >= 30
    panels = dashboard["panels"]
    ids = [p["id"] for p in panels]
    assert len(ids) == len(set(ids))
    used: set[str] = set()
    for panel in panels:
        assert panel["type"] in {"timeseries", "stat"}
        assert set(panel["gridPos"]) == {"h", "w", "x", "y"}
        assert panel["gridPos"]["x"] + panel["gridPos"]["w"] <= 24
        assert panel["targets"], panel["title"]
        for target in panel["targets"]:
            assert target["datasource"]["uid"] == "${DS_PROMETHEUS}"
            used |= _check_expr(target["expr"])
    assert [i["name"] for i in dashboard["__inputs"]] == ["DS_PROMETHEUS"]
    # the dashboard shows every metric we export (the process collector's aside)
    assert used == set(EXPORTED_METRICS), set(EXPORTED_METRICS) - used
