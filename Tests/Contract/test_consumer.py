"""The rule for adding fields (docs/contract.md, Versioning): a consumer written against version 1 reads an alert
that carries fields it does not know. The consumer here is ours, `restock listen --json`, through a real broker."""

import json
import subprocess
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

import contract

ALERT = Path(__file__).parent / "alert-v1-extra-field.json"
KNOWN = ["version", "id", "store", "customer", "sku", "quantity", "position", "message", "at"]


@pytest.fixture
def broker():
    broker = contract.Broker()
    yield broker
    broker.close()


def listen(broker, *arguments, seconds=30):
    command = [str(contract.restock_binary()), "listen", "--broker", broker.url, "--store", "apple", "--customer", "zoe", *arguments]
    return subprocess.run(command, capture_output=True, text=True, timeout=seconds)


def test_the_extra_field_alert_is_a_version_1_alert():
    alert = json.loads(ALERT.read_text())
    assert alert["version"] == 1 and set(alert) - set(KNOWN), "the fixture must be version 1 with extra fields"
    model = contract.Contract()
    assert not model.errors(contract.load_schema("alert.json"), alert), "the alert schema must let a consumer meet new fields"


def test_restock_listen_reads_an_alert_with_an_extra_field(broker):
    # A first listen makes zoe's persistent session, so the alert published next waits in it.
    first = listen(broker, "--timeout", "0.5")
    assert first.returncode == 0, first.stderr
    broker.publish("restock/apple/customers/zoe/alerts", ALERT.read_bytes())

    result = listen(broker, "--count", "1", "--json", "--timeout", "20")
    assert result.returncode == 0, f"restock listen did not print the alert: {result.stderr}"
    lines = result.stdout.strip().splitlines()
    assert len(lines) == 1, result.stdout
    printed = json.loads(lines[0])
    sent = json.loads(ALERT.read_text())
    same = [key for key in KNOWN if key != "at"]
    assert {key: printed[key] for key in same} == {key: sent[key] for key in same}
    # Within a millisecond: the exact text is the known bug below.
    assert abs(milliseconds(printed["at"]) - milliseconds(sent["at"])) <= 1, (printed["at"], sent["at"])


@pytest.mark.xfail(strict=True, reason="known: restock listen --json rewrites at 47.834Z as 47.833Z (the time goes "
                   "through a Double and the formatter truncates); remove this mark when it is fixed")
def test_restock_listen_prints_at_exactly(broker):
    listen(broker, "--timeout", "0.5")
    broker.publish("restock/apple/customers/zoe/alerts", ALERT.read_bytes())
    result = listen(broker, "--count", "1", "--json", "--timeout", "20")
    assert json.loads(result.stdout)["at"] == json.loads(ALERT.read_text())["at"]


def milliseconds(text):
    moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    return (moment - datetime(1970, 1, 1, tzinfo=timezone.utc)) // timedelta(milliseconds=1)
