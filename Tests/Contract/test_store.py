"""A real store keeps the contract: every request example is judged alike by its schema and by the store, and
every message the store publishes, captured from the broker, matches its channel's schema, QoS and retain flag.

The tests of this module share one broker and one store and run in order: the examples, then the rest of the
payload kinds, then the checks of everything captured (which stop and kill the store for its offline status)."""

import json
import signal
import tempfile
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
import yaml

import contract

STORE = "apple"
EXAMPLES = yaml.safe_load((Path(__file__).parent / "request-examples.yaml").read_text(encoding="utf-8"))
REQUEST_TOPICS = {
    "subscribe": "restock/apple/subscribe/{customer}",
    "unsubscribe": "restock/apple/unsubscribe/{customer}",
    "stock": "restock/apple/admin/stock",
}


class World:
    """The broker, the capture of `restock/#`, the store, and the topics the tests published requests on."""

    def __init__(self):
        self.model = contract.Contract()
        self.broker = contract.Broker()
        self.capture = contract.Capture(self.broker)
        self.data = Path(tempfile.mkdtemp(dir=self.broker.directory)) / "data"
        self.requests: set[str] = set()
        self.store = None
        self.start_store()

    def start_store(self):
        mark = len(self.capture.poll())
        self.store = contract.StoreProcess(self.broker, self.data, STORE)
        self.capture.wait_for("the store's online status", lambda m: m.topic == "restock/apple/status" and b'"online"' in m.payload, mark)

    def publish(self, topic: str, payload: bytes, retain: bool = False) -> int:
        """Publishes a request; returns the capture index after which its answers come."""
        mark = len(self.capture.poll())
        self.requests.add(topic)
        self.broker.publish(topic, payload, retain)
        return mark

    def close(self):
        if self.store:
            self.store.stop(signal.SIGKILL)
        self.capture.close()
        self.broker.close()


@pytest.fixture(scope="module")
def world():
    world = World()
    yield world
    world.close()


def payload_of(example) -> bytes:
    data = bytes.fromhex(example["hex"]) if "hex" in example else example["payload"].encode("utf-8")
    return data + b" " * max(0, example.get("pad_to", 0) - len(data))


def example_id(index_example):
    index, example = index_example
    return f"{index:02}-{example['to']}-{example['expect']}"


def json_of(message):
    return json.loads(message.payload)


@pytest.mark.parametrize("index,example", list(enumerate(EXAMPLES)), ids=list(map(example_id, enumerate(EXAMPLES))))
def test_request_example(world, index, example):
    customer = example.get("customer", f"ex{index}")
    topic = REQUEST_TOPICS[example["to"]].format(customer=customer)
    payload = payload_of(example)
    expect = example["expect"]

    # The schema's verdict.
    problems = world.model.check_request(topic, payload)
    schema_valid = expect == "accepted" or example.get("schema") == "valid"
    if schema_valid:
        assert not problems, f"a valid example fails the contract's schemas: {problems}"
    else:
        assert problems, "an invalid example passes the contract's schemas"

    # The store's.
    mark = world.publish(topic, payload, example.get("retain", False))
    capture = world.capture
    if expect == "ignored":
        # Only logged: nothing comes of it before the answer to a later, valid request.
        marker = f"marker{index}"
        world.publish(REQUEST_TOPICS["subscribe"].format(customer=marker), b"ipad")
        answer = capture.wait_for("the marker's mirror", lambda m: m.topic == f"restock/apple/customers/{marker}/subscriptions", mark)
        # The store's heartbeat (its status, every 2 s) is no answer: one may fall between the two (seen in a clean
        # clone's make test, 2026-12-03: the status of a heartbeat counted as an answer to subscribe/bad!id).
        caused = [m.topic for m in capture.messages[mark:answer.index] if m.topic not in world.requests and m.topic != "restock/apple/status"]
        assert not caused, f"a request on {topic} was answered: {caused}"
        return

    if example["to"] == "stock":
        sku = json.loads(payload).get("sku") if expect == "accepted" else None
        answer = capture.wait_for(
            "the store's answer",
            lambda m: m.topic == "restock/apple/admin/errors" or (m.topic.startswith("restock/apple/inventory/")), mark)
    else:
        answer = capture.wait_for(
            "the store's answer",
            lambda m: m.topic in (f"restock/apple/customers/{customer}/subscriptions", f"restock/apple/customers/{customer}/errors"),
            mark)
    body = json_of(answer)

    if expect != "accepted":
        assert answer.topic.endswith("/errors"), f"expected {expect}, the store accepted it: {answer.topic} {body}"
        assert body["error"] == expect, f"expected {expect}: {body}"
        assert body["topic"] == topic
        assert example.get("detail", "") in body["detail"], body
        return

    assert not answer.topic.endswith("/errors"), f"the store refused a valid example: {body}"
    if example["to"] == "stock":
        assert answer.topic == f"restock/apple/inventory/{sku}", answer.topic
        if "quantity" in example:
            assert body["quantity"] == example["quantity"], body
    elif example["to"] == "subscribe":
        text = payload.decode("utf-8").strip().removeprefix("\ufeff").strip()  # a leading byte order mark is ignored
        request = json.loads(text) if text.startswith("{") else {"sku": text}
        watch = next((w for w in body["watching"] if w["sku"] == request["sku"]), None)
        assert watch, f"the mirror does not show {request['sku']}: {body}"
        assert watch["mode"] == (request.get("mode") or "once")
        assert watch["minQuantity"] == int(request.get("minQuantity") or 1)


def test_every_kind_of_payload(world):
    """Drives the store through the payloads the examples leave out: alerts (once, every, at subscribe time)."""
    capture = world.capture
    mark = world.publish("restock/apple/subscribe/alice", b"drive-phone")
    world.publish("restock/apple/subscribe/bob", b'{"sku":"drive-phone","mode":"every","minQuantity":2}')
    capture.wait_for("bob's mirror", lambda m: m.topic == "restock/apple/customers/bob/subscriptions", mark)

    def alert(customer, quantity):
        return lambda m: m.topic == f"restock/apple/customers/{customer}/alerts" and json_of(m)["quantity"] == quantity

    mark = world.publish("restock/apple/admin/stock", b'{"sku":"drive-phone","set":1}')
    capture.wait_for("alice's alert", alert("alice", 1), mark)
    capture.wait_for(
        "alice's empty mirror",
        lambda m: m.topic == "restock/apple/customers/alice/subscriptions" and json_of(m)["watching"] == [], mark)
    mark = world.publish("restock/apple/admin/stock", b'{"sku":"drive-phone","add":1}')
    capture.wait_for("bob's alert", alert("bob", 2), mark)
    world.publish("restock/apple/admin/stock", b'{"sku":"drive-phone","set":0}')
    mark = world.publish("restock/apple/admin/stock", b'{"sku":"drive-phone","set":5}')
    capture.wait_for("bob's second alert (every)", alert("bob", 5), mark)
    mark = world.publish("restock/apple/subscribe/carol", b"drive-phone")
    capture.wait_for("carol's alert at subscribe time", alert("carol", 5), mark)


def test_forget_a_customer(world):
    """An admin's forget request: the customer's mirror is cleared (an empty retained message), then the answer."""
    capture = world.capture
    mark = world.publish("restock/apple/subscribe/dora", b'{"sku":"forget-phone","expiresAt":"2999-01-01T00:00:00Z"}')
    capture.wait_for("dora's mirror", lambda m: m.topic == "restock/apple/customers/dora/subscriptions", mark)
    mark = world.publish("restock/apple/admin/forget", b'{"customer":"dora"}')
    answer = capture.wait_for("the forgotten report", lambda m: m.topic == "restock/apple/admin/forgotten", mark)
    assert json_of(answer)["customer"] == "dora" and json_of(answer)["watches"] == 1, answer.payload
    cleared = [m for m in capture.poll()[mark:] if m.topic == "restock/apple/customers/dora/subscriptions"]
    assert cleared and cleared[-1].payload == b"", cleared


def test_report_and_dead_letters(world):
    """The admin's questions: the report and the dead letters, answered on a response topic (MQTT 5) or on
    admin/replies with the request's id (3.1.1); a dead-letter action on one that does not exist."""
    capture = world.capture
    mark = world.publish("restock/apple/admin/report", b'{"id":"c1"}')
    reply = json_of(capture.wait_for("the report on admin/replies", lambda m: m.topic == "restock/apple/admin/replies", mark))
    assert reply["id"] == "c1" and reply["watches"] >= 1, reply
    mark = len(capture.poll())
    world.requests.add("restock/apple/admin/report")
    world.broker.publish("restock/apple/admin/report", b'{"sku":"drive-phone","id":"c2"}', response_topic="restock/apple/admin/replies/c2",
                         correlation="c2")
    reply = json_of(capture.wait_for("the report on its response topic", lambda m: m.topic == "restock/apple/admin/replies/c2", mark))
    assert [s["sku"] for s in reply["skus"]] == ["drive-phone"] and reply["skus"][0]["alertsRaised"]["life"] >= 3, reply
    mark = world.publish("restock/apple/admin/dead-letters", b'{"id":"c3"}')
    reply = json_of(capture.wait_for("the dead-letter list", lambda m: m.topic == "restock/apple/admin/replies" and b'"c3"' in m.payload, mark))
    assert reply["deadLetters"] == [], reply
    mark = world.publish("restock/apple/admin/dead-letter", b'{"drop":999999}')
    reply = json_of(capture.wait_for("the dead-letter outcome", lambda m: m.topic == "restock/apple/admin/replies" and b'"outcome"' in m.payload, mark))
    assert reply["outcome"] == "unknown" and reply["deadLetter"] == 999999, reply


def parse_timestamp(text: str) -> datetime:
    """A contract timestamp (`2026-11-21T19:41:47.528Z`) as an aware datetime."""
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=timezone.utc)


def test_status_online_offline_and_will(world):
    capture = world.capture

    def offline(m):
        return m.topic == "restock/apple/status" and json_of(m)["state"] == "offline"

    mark = len(capture.poll())
    before = datetime.now(timezone.utc)
    world.store.stop(signal.SIGTERM)
    stopped = json_of(capture.wait_for("offline after a clean stop", offline, mark))
    assert stopped.get("reason") == "stopped", stopped
    # since: when it stopped (the store's clock, in milliseconds; the same machine).
    assert parse_timestamp(stopped["since"]) >= before - timedelta(milliseconds=5), stopped
    world.start_store()
    mark = len(capture.poll())
    world.store.stop(signal.SIGKILL)
    will = json_of(capture.wait_for("offline as the will", offline, mark))
    # The will is written when the store connects: it claims no time it cannot know.
    assert will.get("reason") == "connection-lost" and "since" not in will, will
    world.store = None


def test_everything_the_store_published_keeps_the_contract(world):
    messages = [m for m in world.capture.poll() if not m.topic.startswith("contract-probe/") and m.topic not in world.requests]
    problems = [f"{m.topic} {m.payload!r}: {p}" for m in messages for p in world.model.check_publication(m.topic, m.payload, m.qos, m.retain)]
    assert not problems, "the store published payloads its contract does not allow:\n" + "\n".join(problems)

    kinds = set()
    for m in messages:
        if m.payload == b"":
            kinds.add("cleared " + world.model.channel(m.topic).name)
            continue
        body = json_of(m)
        channel = world.model.channel(m.topic).name
        if channel == "subscriptions":
            kinds.add("subscriptions " + ("with watches" if body["watching"] else "empty"))
        elif channel == "inventory":
            kinds.add("inventory " + ("0" if body["quantity"] == 0 else "> 0"))
        elif channel == "status":
            kinds.add("status " + body["state"])
        else:
            kinds.add(channel)
    expected = {"alerts", "subscriptions with watches", "subscriptions empty", "customerErrors", "adminErrors",
                "inventory 0", "inventory > 0", "status online", "status offline", "forgotten", "cleared subscriptions",
                "replies", "responses"}
    assert expected <= kinds, f"no payload of kind {expected - kinds} was captured"
    print(f"{len(messages)} messages the store published, all within the contract")
